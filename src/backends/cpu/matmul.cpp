// cpu matrix products: float32 through oneDNN's sgemm (faster than OpenBLAS on the MLP shapes, see
// docs/benchmarks.md), float64 through OpenBLAS (oneDNN has no dgemm), bfloat16 through oneDNN's
// matmul primitive (bf16 operands, float32 accumulation, rounded once) when the CPU has native
// bf16 (rensa::native_bf16()), else in float32 and rounded once, as float16 always is. All use the
// process's one OpenMP pool. Transposed views are passed as transposed operands (bf16: as strides),
// without copies.
#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "rensa/core/cpu_features.h"
#include "src/backends/common/scalar_ops.h"
#include "src/backends/cpu/kernels.h"
#include "src/backends/cpu/onednn.h"
#include "src/backends/cpu/primitive_cache.h"

namespace rensa::backends::cpu {
namespace {

struct MatrixView {
  const Array* array;
  bool trans;  // the matrix is stored column-major (a transposed row-major matrix)
  int64_t ld;  // leading dimension for BLAS
};

// How BLAS can read the last two axes of `a` as it is, if it can.
bool blas_layout(const Array& a, bool& trans, int64_t& ld) {
  const int64_t r = a.shape()[a.shape().size() - 2], c = a.shape().back();
  const int64_t sr = a.strides()[a.strides().size() - 2], sc = a.strides().back();
  if ((sc == 1 || c == 1) && sr >= std::max<int64_t>(c, 1)) {
    trans = false;
    ld = std::max<int64_t>(sr, std::max<int64_t>(c, 1));
    return true;
  }
  if ((sr == 1 || r == 1) && sc >= std::max<int64_t>(r, 1)) {
    trans = true;
    ld = std::max<int64_t>(sc, std::max<int64_t>(r, 1));
    return true;
  }
  return false;
}

template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T* c,
          int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    const dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
    RENSA_CHECK(st == dnnl_success, Error, "matmul: oneDNN sgemm failed with status ", static_cast<int>(st), " (M=", m,
                " N=", n, " K=", k, ")");
  } else {
    const auto TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
    cblas_dgemm(CblasRowMajor, TA, TB, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0, a,
                static_cast<int>(lda), b, static_cast<int>(ldb), 0.0, c, static_cast<int>(ldc));
  }
}

// Byte offset of batch element `i` of `a` (batch axes = all but the last two).
int64_t batch_offset(const Array& a, int64_t i) {
  int64_t off = 0;
  const std::size_t nb = a.shape().size() - 2;
  for (std::size_t d = nb; d-- > 0;) {
    const int64_t ext = a.shape()[d];
    off += (i % ext) * a.strides()[d];
    i /= ext;
  }
  return off;
}

// ---- bfloat16 on oneDNN's matmul primitive --------------------------------------------------------

namespace dn = dnnl;

// Up to this many axes (4 batch axes) run on the primitive; more fall back to float32.
constexpr std::size_t kMaxRank = 6;
// Rank, then per operand (a, b, out) its dims and strides as the primitive takes them, then the
// data type.
constexpr std::size_t kKeySize = 1 + 3 * 2 * kMaxRank + 1;
using MatmulKey = detail::CacheKey<kKeySize>;

struct MatmulPrimitive {
  bool ok = true;  // false: oneDNN has no such primitive (kept, so the fallback does not retry)
  dn::matmul prim;
};

using MatmulCache = detail::PrimitiveCache<MatmulKey, MatmulPrimitive, detail::CacheKeyHash<kKeySize>, 128>;

MatmulCache& matmul_cache() {
  static MatmulCache c;
  return c;
}

// An operand's dims and strides as oneDNN reads them: a broadcast batch axis (stride 0) becomes
// extent 1, which the primitive broadcasts, and axes of extent 1 get strides that keep the
// description plain (oneDNN rejects or slows down on arbitrary ones). False when the layout has no
// such description (negative strides, or neither of the last two axes of unit stride).
bool onednn_layout(const Array& a, dn::memory::dims& dims, dn::memory::dims& strides) {
  const std::size_t nd = a.shape().size();
  dims.assign(a.shape().begin(), a.shape().end());
  strides.assign(a.strides().begin(), a.strides().end());
  for (int64_t s : strides) {
    if (s < 0) return false;
  }
  int64_t &r = dims[nd - 2], &c = dims[nd - 1], &sr = strides[nd - 2], &sc = strides[nd - 1];
  if (c == 1) sc = (sr == 1 && r > 1) ? r : 1;
  if (r == 1) sr = c * sc;
  if (sr != 1 && sc != 1) return false;
  // The extent the last two axes span, then each batch axis outward.
  int64_t span = std::max((r - 1) * sr + (c - 1) * sc + 1, int64_t{1});
  for (std::size_t d = nd - 2; d-- > 0;) {
    if (dims[d] == 1 || strides[d] == 0) {
      dims[d] = 1;
      strides[d] = span;
    } else {
      span = std::max(span, strides[d] * dims[d]);
    }
  }
  return true;
}

// The primitive, or one marked not ok when oneDNN cannot make it (unimplemented for these layouts,
// or descriptions it rejects): the caller then falls back to float32.
MatmulPrimitive make_matmul(const dn::memory::desc& a, const dn::memory::desc& b, const dn::memory::desc& c) {
  MatmulPrimitive p;
  try {
    p.prim = dn::matmul(dn::matmul::primitive_desc(dn::matmul::desc(a, b, c), detail::onednn_engine()));
  } catch (const dn::error&) {
    p.ok = false;
  }
  return p;
}

// out = a @ b on oneDNN's bf16 matmul; false (nothing written) when oneDNN has no primitive for these
// layouts even after copying the operands to row-major.
bool matmul_bf16(const Array& a_in, const Array& b_in, const Array& out) {
  const std::size_t nd = out.shape().size();
  if (nd > kMaxRank) return false;
  Array a = a_in, b = b_in;
  dn::memory::dims ad, as, bd, bs, od, os;
  if (!onednn_layout(a, ad, as)) {
    a = a.copy();
    onednn_layout(a, ad, as);
  }
  if (!onednn_layout(b, bd, bs)) {
    b = b.copy();
    onednn_layout(b, bd, bs);
  }
  if (!onednn_layout(out, od, os)) return false;
  for (std::size_t d = 0; d + 2 < nd; ++d) {
    if (ad[d] == 1 && bd[d] == 1 && od[d] != 1) return false;  // both broadcast: oneDNN cannot say it
  }
  const dn::memory::data_type t = detail::onednn_type(a.dtype()), to = detail::onednn_type(out.dtype());
  auto key = [&] {
    MatmulKey k;
    std::size_t i = 0;
    k.v[i++] = static_cast<int64_t>(nd);
    for (const dn::memory::dims* v : {&ad, &as, &bd, &bs, &od, &os}) {
      for (std::size_t d = 0; d < kMaxRank; ++d) k.v[i++] = d < v->size() ? (*v)[d] : -1;
    }
    k.v[i] = static_cast<int64_t>(to);  // the operands are bf16; the output bf16 or float32
    return k;
  };
  auto get = [&] {
    return matmul_cache().get(key(), [&] {
      return make_matmul(dn::memory::desc(ad, t, as), dn::memory::desc(bd, t, bs), dn::memory::desc(od, to, os));
    });
  };
  auto prim = get();
  if (!prim->ok && !(a.is_contiguous() && b.is_contiguous())) {  // try row-major operands
    a = a.contiguous();
    b = b.contiguous();
    onednn_layout(a, ad, as);
    onednn_layout(b, bd, bs);
    prim = get();
  }
  if (!prim->ok) return false;
  const dn::engine& e = detail::onednn_engine();
  dn::stream& s = detail::onednn_stream();
  dn::memory ma(dn::memory::desc(ad, t, as), e, a.raw_data()), mb(dn::memory::desc(bd, t, bs), e, b.raw_data()),
      mo(dn::memory::desc(od, to, os), e, out.raw_data());
  prim->prim.execute(s, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mo}});
  s.wait();
  return true;
}

}  // namespace

void matmul(const Array& a_in, const Array& b_in, const Array& out) {
  const int64_t m = out.shape()[out.shape().size() - 2], n = out.shape().back();
  const int64_t k = a_in.shape().back();
  if (out.size() == 0) return;
  if (k == 0) {
    fill(out, 0.0);
    return;
  }
  const Dtype dt = a_in.dtype();
  if (dt == Dtype::bfloat16 && b_in.dtype() == dt && (out.dtype() == dt || out.dtype() == Dtype::float32) &&
      native_bf16()) {
    bool done = false;
    try {
      done = matmul_bf16(a_in, b_in, out);
    } catch (const dnnl::error& e) {
      RENSA_THROW(Error, "matmul: oneDNN failed (status ", static_cast<int>(e.status), "): ", e.what(), " for a ",
                  a_in.shape(), ", b ", b_in.shape(), ", out ", out.shape());
    }
    if (done) return;
  }
  if (is_half(dt)) {
    // Compute in float32 and round once (not at all for a float32 out).
    Array af = a_in.astype(Dtype::float32), bf = b_in.astype(Dtype::float32);
    if (out.dtype() == Dtype::float32) {
      matmul(af, bf, out);
      return;
    }
    Array of = Array::empty(out.shape(), Dtype::float32, out.device());
    matmul(af, bf, of);
    copy(of, out);
    return;
  }
  if (!is_floating(dt)) {
    dispatch(dt, [&]<class T>() {
      if constexpr (!is_floating(dtype_of<T>())) {
        const int64_t batch = out.size() / (m * n);
        T* po = static_cast<T*>(out.raw_data());
        for (int64_t bi = 0; bi < batch; ++bi) {
          const T* pa = static_cast<const T*>(a_in.raw_data()) + batch_offset(a_in, bi);
          const T* pb = static_cast<const T*>(b_in.raw_data()) + batch_offset(b_in, bi);
          const int64_t sa0 = a_in.strides()[a_in.ndim() - 2], sa1 = a_in.strides().back();
          const int64_t sb0 = b_in.strides()[b_in.ndim() - 2], sb1 = b_in.strides().back();
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n; ++j) {
              int64_t acc = 0;
              for (int64_t p = 0; p < k; ++p)
                acc += static_cast<int64_t>(pa[i * sa0 + p * sa1]) * pb[p * sb0 + j * sb1];
              po[bi * m * n + i * n + j] = static_cast<T>(acc);
            }
          }
        }
      }
    });
    return;
  }
  Array a = a_in, b = b_in;
  bool ta = false, tb = false;
  int64_t lda = 0, ldb = 0;
  if (!blas_layout(a, ta, lda)) {
    a = a.copy();
    blas_layout(a, ta, lda);
  }
  if (!blas_layout(b, tb, ldb)) {
    b = b.copy();
    blas_layout(b, tb, ldb);
  }
  dispatch_floating(dt, "matmul", [&]<class T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const int64_t batch = out.size() / (m * n);
      T* po = static_cast<T*>(out.raw_data());
      const T* pa = static_cast<const T*>(a.raw_data());
      const T* pb = static_cast<const T*>(b.raw_data());
      for (int64_t bi = 0; bi < batch; ++bi) {
        gemm<T>(ta, tb, m, n, k, pa + batch_offset(a, bi), lda, pb + batch_offset(b, bi), ldb, po + bi * m * n, n);
      }
    }
  });
}

}  // namespace rensa::backends::cpu
