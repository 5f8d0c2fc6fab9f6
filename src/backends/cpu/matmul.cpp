// cpu matrix products: float32 through oneDNN's sgemm (faster than OpenBLAS on the MLP shapes, see
// docs/benchmarks.md), float64 through OpenBLAS (oneDNN has no dgemm). Both use the process's one
// OpenMP pool. Transposed views are passed as transposed operands, without copies.
#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <vector>

#include "src/backends/common/scalar_ops.h"
#include "src/backends/cpu/kernels.h"

namespace rensa::backends::cpu {
namespace {

struct MatrixView {
  const Array* array;
  bool trans;   // the matrix is stored column-major (a transposed row-major matrix)
  int64_t ld;   // leading dimension for BLAS
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
    RENSA_CHECK(st == dnnl_success, Error, "matmul: oneDNN sgemm failed with status ", static_cast<int>(st),
                " (M=", m, " N=", n, " K=", k, ")");
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
  if (dt == Dtype::float16 || dt == Dtype::bfloat16) {
    // Compute in float32 and round once.
    Array af = a_in.astype(Dtype::float32), bf = b_in.astype(Dtype::float32);
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
            for (int64_t p = 0; p < k; ++p) acc += static_cast<int64_t>(pa[i * sa0 + p * sa1]) * pb[p * sb0 + j * sb1];
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
