// cpu convolutions. float32 runs on oneDNN: one primitive per (direction, shapes, parameters),
// created on first use and kept in a bounded LRU cache (the CPU counterpart of cuDNN's autotune:
// creating a primitive picks and JIT-compiles a kernel, which costs far more than running it on
// small shapes). Activations run channels-last (NHWC): conv2d_memory_format tells the functions to
// allocate outputs that way, so a conv-relu-conv chain hands oneDNN its own layout at every step and
// no reorder runs between layers. oneDNN's blocked layouts (nChw16c) are a little faster per
// convolution but cannot be expressed by strides, and converting to and from them around each
// call cost more than they save (docs/benchmarks.md). NCHW arrays are still accepted (reordered
// on the way in or out); weights stay OIHW and are reordered inside (they are small).
// float64 (used by gradient checks) runs as im2col + OpenBLAS dgemm, and so do float32 weight
// gradients with few input channels (see weights_by_gemm). bfloat16 runs on oneDNN's bf16 kernels
// (float32 accumulation, channels-last like float32) when native_bf16() says the CPU has them; a
// primitive oneDNN does not implement for bfloat16, float16, and bfloat16 without native support
// compute in float32 and round once. All of it runs on the process's one OpenMP pool.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <unordered_map>
#include <vector>

#include "rensa/core/cpu_features.h"
#include "src/backends/cpu/kernels.h"
#include "src/backends/cpu/onednn.h"
#include "src/backends/cpu/primitive_cache.h"
#include "src/backends/cpu/scratch.h"

namespace rensa::backends::cpu {
namespace {

namespace dn = dnnl;
using tag = dn::memory::format_tag;
using dt = dn::memory::data_type;

// ---- oneDNN plumbing -----------------------------------------------------------------------------

dn::engine& engine() {
  return detail::onednn_engine();
}
dn::stream& stream() {
  return detail::onednn_stream();
}

// The layout the primitives take their activations (src, dst and their gradients) in: NHWC, which
// channels-last arrays are. (tag::any would let oneDNN pick its blocked layout and reorder to it.)
constexpr tag kActivations = tag::nhwc;

enum class Direction : int64_t { forward, backward_data, backward_weights };

// Everything a primitive depends on.
using ConvKey = detail::CacheKey<22>;

// One argument of a primitive: the plain layout rensa passes, the one the primitive wants, and the
// reorder between them (absent when they agree).
struct Slot {
  dn::memory::desc user, prim;
  std::optional<dn::reorder> convert;
  void init(const dn::memory::desc& user_md, const dn::memory::desc& prim_md, bool input) {
    user = user_md;
    prim = prim_md;
    if (user != prim)
      convert = input ? dn::reorder(dn::reorder::primitive_desc(engine(), user, engine(), prim))
                      : dn::reorder(dn::reorder::primitive_desc(engine(), prim, engine(), user));
  }
};

// A cached primitive with its argument slots: in0, in1 and out are (src, weights, dst) forward,
// (diff_dst, weights, diff_src) for backward data and (src, diff_dst, diff_weights) for backward
// weights. `ok` is false for a bfloat16 primitive oneDNN does not implement (kept, so that the
// float32 fallback does not try again each call).
struct ConvPrimitive {
  bool ok = true;
  dn::primitive prim;
  Slot in0, in1, out;
  int arg_in0 = 0, arg_in1 = 0, arg_out = 0;
};

using PrimitiveCache = detail::PrimitiveCache<ConvKey, ConvPrimitive, detail::CacheKeyHash<22>, 256>;

PrimitiveCache& cache() {
  static PrimitiveCache c;
  return c;
}

// The geometry of one convolution, read from its arrays.
struct Geometry {
  int64_t n, c, h, w, o, kh, kw, oh, ow;
  Conv2dParams p;
  bool bias;
  // The layouts of the arrays passed in: channels-last (true) or NCHW, for x (or gx) and y (or gy).
  bool x_nhwc = false, y_nhwc = false;
  // The data type of the activations, weights and their gradients, and of the bias.
  dt type = dt::f32, bias_type = dt::f32;

  ConvKey key(Direction d) const {
    return ConvKey{{static_cast<int64_t>(d),
                    n,
                    c,
                    h,
                    w,
                    o,
                    kh,
                    kw,
                    oh,
                    ow,
                    p.stride_y,
                    p.stride_x,
                    p.pad_y,
                    p.pad_x,
                    p.dilate_y,
                    p.dilate_x,
                    p.groups,
                    bias ? 1 : 0,
                    x_nhwc ? 1 : 0,
                    y_nhwc ? 1 : 0,
                    static_cast<int64_t>(type),
                    static_cast<int64_t>(bias_type)}};
  }
  dn::memory::desc src_md(tag t) const { return {{n, c, h, w}, type, t}; }
  dn::memory::desc user_src_md() const { return src_md(x_nhwc ? tag::nhwc : tag::nchw); }
  dn::memory::desc user_dst_md() const { return dst_md(y_nhwc ? tag::nhwc : tag::nchw); }
  dn::memory::desc dst_md(tag t) const { return {{n, o, oh, ow}, type, t}; }
  dn::memory::desc weights_md(bool any) const {
    if (p.groups == 1) return {{o, c, kh, kw}, type, any ? tag::any : tag::oihw};
    return {{p.groups, o / p.groups, c / p.groups, kh, kw}, type, any ? tag::any : tag::goihw};
  }
  dn::memory::desc bias_md() const { return {{o}, bias_type, tag::x}; }
  dn::memory::dims strides() const { return {p.stride_y, p.stride_x}; }
  dn::memory::dims dilates() const { return {p.dilate_y - 1, p.dilate_x - 1}; }  // oneDNN counts from 0
  dn::memory::dims pad_l() const { return {p.pad_y, p.pad_x}; }
  // The bottom/right padding the output extent implies (negative when rows are left over, which
  // oneDNN accepts down to 1 - stride).
  dn::memory::dims pad_r() const {
    return {(oh - 1) * p.stride_y + (kh - 1) * p.dilate_y + 1 - h - p.pad_y,
            (ow - 1) * p.stride_x + (kw - 1) * p.dilate_x + 1 - w - p.pad_x};
  }
  dn::convolution_forward::primitive_desc forward_pd(dn::prop_kind kind) const {
    const dn::memory::desc src = src_md(kActivations), dst = dst_md(kActivations), any_w = weights_md(true);
    if (bias) {
      return {dn::convolution_forward::desc(kind, dn::algorithm::convolution_direct, src, any_w, bias_md(), dst,
                                            strides(), dilates(), pad_l(), pad_r()),
              engine()};
    }
    return {dn::convolution_forward::desc(kind, dn::algorithm::convolution_direct, src, any_w, dst, strides(),
                                          dilates(), pad_l(), pad_r()),
            engine()};
  }
};

ConvPrimitive make_forward(const Geometry& g) {
  ConvPrimitive c;
  auto pd = g.forward_pd(dn::prop_kind::forward_training);
  c.prim = dn::convolution_forward(pd);
  c.in0.init(g.user_src_md(), pd.src_desc(), true);
  c.in1.init(g.weights_md(false), pd.weights_desc(), true);
  c.out.init(g.user_dst_md(), pd.dst_desc(), false);
  c.arg_in0 = DNNL_ARG_SRC;
  c.arg_in1 = DNNL_ARG_WEIGHTS;
  c.arg_out = DNNL_ARG_DST;
  return c;
}

ConvPrimitive make_backward_data(const Geometry& g) {
  ConvPrimitive c;
  Geometry nb = g;
  nb.bias = false;
  auto hint = nb.forward_pd(dn::prop_kind::forward_training);
  dn::convolution_backward_data::primitive_desc pd(
      dn::convolution_backward_data::desc(dn::algorithm::convolution_direct, g.src_md(kActivations), g.weights_md(true),
                                          g.dst_md(kActivations), g.strides(), g.dilates(), g.pad_l(), g.pad_r()),
      engine(), hint);
  c.prim = dn::convolution_backward_data(pd);
  c.in0.init(g.user_dst_md(), pd.diff_dst_desc(), true);
  c.in1.init(g.weights_md(false), pd.weights_desc(), true);
  c.out.init(g.user_src_md(), pd.diff_src_desc(), false);
  c.arg_in0 = DNNL_ARG_DIFF_DST;
  c.arg_in1 = DNNL_ARG_WEIGHTS;
  c.arg_out = DNNL_ARG_DIFF_SRC;
  return c;
}

ConvPrimitive make_backward_weights(const Geometry& g) {
  ConvPrimitive c;
  Geometry nb = g;
  nb.bias = false;
  auto hint = nb.forward_pd(dn::prop_kind::forward_training);
  dn::convolution_backward_weights::primitive_desc pd(
      dn::convolution_backward_weights::desc(dn::algorithm::convolution_direct, g.src_md(kActivations),
                                             g.weights_md(true), g.dst_md(kActivations), g.strides(), g.dilates(),
                                             g.pad_l(), g.pad_r()),
      engine(), hint);
  c.prim = dn::convolution_backward_weights(pd);
  c.in0.init(g.user_src_md(), pd.src_desc(), true);
  c.in1.init(g.user_dst_md(), pd.diff_dst_desc(), true);
  c.out.init(g.weights_md(false), pd.diff_weights_desc(), false);
  c.arg_in0 = DNNL_ARG_SRC;
  c.arg_in1 = DNNL_ARG_DIFF_DST;
  c.arg_out = DNNL_ARG_DIFF_WEIGHTS;
  return c;
}

// The arguments in oneDNN's layouts live in per-thread scratch (slots 0 and 1 the inputs, 2 the
// output): allocating them afresh each call costs more than the reorders.

// Runs a cached primitive on float32 arrays (inputs contiguous, output contiguous).
void run(const ConvPrimitive& c, const Array& in0, const Array& in1, const Array& out, const Array* bias) {
  thread_local Scratch<3> scratch;
  dn::stream& s = stream();
  auto wrap = [](const dn::memory::desc& md, void* p) { return dn::memory(md, engine(), p); };
  auto in_memory = [&](const Slot& slot, const Array& a, int k) {
    dn::memory user = wrap(slot.user, a.raw_data());
    if (!slot.convert) return user;
    dn::memory m = wrap(slot.prim, scratch.get(static_cast<std::size_t>(k), slot.prim.get_size(), "convolution_2d"));
    slot.convert->execute(s, user, m);
    return m;
  };
  dn::memory m0 = in_memory(c.in0, in0, 0), m1 = in_memory(c.in1, in1, 1);
  dn::memory user_out = wrap(c.out.user, out.raw_data());
  dn::memory m_out =
      c.out.convert ? wrap(c.out.prim, scratch.get(2, c.out.prim.get_size(), "convolution_2d")) : user_out;
  std::unordered_map<int, dn::memory> args{{c.arg_in0, m0}, {c.arg_in1, m1}, {c.arg_out, m_out}};
  if (bias != nullptr) {
    args.emplace(DNNL_ARG_BIAS,
                 wrap(dn::memory::desc({bias->size()}, detail::onednn_type(bias->dtype()), tag::x), bias->raw_data()));
  }
  c.prim.execute(s, args);
  if (c.out.convert) c.out.convert->execute(s, m_out, user_out);
  s.wait();
}

// Calls `f`, turning oneDNN's exceptions into rensa::Error naming the operation and shapes.
template <class F>
void with_dnnl(const char* op, const Geometry& g, F&& f) {
  try {
    f();
  } catch (const dn::error& e) {
    RENSA_THROW(Error, op, ": oneDNN failed (status ", static_cast<int>(e.status), "): ", e.what(), " [", __FILE__, ":",
                __LINE__, "] for x (", g.n, ", ", g.c, ", ", g.h, ", ", g.w, "), W (", g.o, ", ", g.c / g.p.groups,
                ", ", g.kh, ", ", g.kw, "), y (", g.n, ", ", g.o, ", ", g.oh, ", ", g.ow, ")");
  }
}

Geometry geometry(const Shape& x, const Shape& w, const Shape& y, const Conv2dParams& p, bool bias) {
  return Geometry{x[0], x[1], x[2], x[3], w[0], w[2], w[3], y[2], y[3], p, bias};
}

// ---- im2col + GEMM: all of float64, and float32 weight gradients with few input channels --------

// col (C/g * KH * KW, OH * OW) of image n, group gi of x (contiguous).
template <class T>
void im2col(const T* x, const Geometry& g, int64_t n, int64_t gi, T* col) {
  const int64_t cg = g.c / g.p.groups, ohw = g.oh * g.ow;
  for (int64_t c = 0; c < cg; ++c) {
    const T* plane = x + ((n * g.c) + gi * cg + c) * g.h * g.w;
    for (int64_t ky = 0; ky < g.kh; ++ky) {
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        T* row = col + ((c * g.kh + ky) * g.kw + kx) * ohw;
        for (int64_t i = 0; i < g.oh; ++i) {
          const int64_t iy = i * g.p.stride_y - g.p.pad_y + ky * g.p.dilate_y;
          T* out = row + i * g.ow;
          if (iy < 0 || iy >= g.h) {
            std::fill(out, out + g.ow, T(0));
            continue;
          }
          const T* in = plane + iy * g.w;
          const int64_t x0 = kx * g.p.dilate_x - g.p.pad_x, sx = g.p.stride_x;
          for (int64_t j = 0; j < g.ow; ++j) {
            const int64_t ix = j * sx + x0;
            out[j] = (ix >= 0 && ix < g.w) ? in[ix] : T(0);
          }
        }
      }
    }
  }
}

// gx (image n, group gi) += col2im(col).
template <class T>
void col2im(const T* col, const Geometry& g, int64_t n, int64_t gi, T* gx) {
  const int64_t cg = g.c / g.p.groups, ohw = g.oh * g.ow;
  for (int64_t c = 0; c < cg; ++c) {
    T* plane = gx + ((n * g.c) + gi * cg + c) * g.h * g.w;
    for (int64_t ky = 0; ky < g.kh; ++ky) {
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        const T* row = col + ((c * g.kh + ky) * g.kw + kx) * ohw;
        for (int64_t i = 0; i < g.oh; ++i) {
          const int64_t iy = i * g.p.stride_y - g.p.pad_y + ky * g.p.dilate_y;
          if (iy < 0 || iy >= g.h) continue;
          for (int64_t j = 0; j < g.ow; ++j) {
            const int64_t ix = j * g.p.stride_x - g.p.pad_x + kx * g.p.dilate_x;
            if (ix >= 0 && ix < g.w) plane[iy * g.w + ix] += row[i * g.ow + j];
          }
        }
      }
    }
  }
}

// Row-major C (m, n) = A (m, k) B (k, n) + beta C, A/B transposed when asked.
template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T beta,
          T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    const dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
    RENSA_CHECK(st == dnnl_success, Error, "convolution_2d: oneDNN sgemm failed with status ", static_cast<int>(st),
                " (M=", m, " N=", n, " K=", k, ")");
  } else {
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
                static_cast<int>(n), static_cast<int>(k), 1.0, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
                c, static_cast<int>(ldc));
  }
}

template <class T>
void forward_gemm(const Geometry& g, const Array& x, const Array& w, const Array& b, const Array& y) {
  const int64_t G = g.p.groups, og = g.o / G, kdim = g.c / G * g.kh * g.kw, ohw = g.oh * g.ow;
  std::vector<T> col(static_cast<std::size_t>(kdim * ohw));
  const T* px = x.data<T>();
  const T* pw = w.data<T>();
  T* py = y.data<T>();
  const Array bc = b.is_null() ? b : b.contiguous();
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t gi = 0; gi < G; ++gi) {
      im2col(px, g, n, gi, col.data());
      // y[n, group] (og, ohw) = W[group] (og, kdim) @ col (kdim, ohw)
      gemm<T>(false, false, og, ohw, kdim, pw + gi * og * kdim, kdim, col.data(), ohw, T(0),
              py + (n * g.o + gi * og) * ohw, ohw);
    }
    if (!bc.is_null()) {
      for (int64_t o = 0; o < g.o; ++o) {
        T* row = py + (n * g.o + o) * ohw;
        const T v = bc.data<T>()[o];
        for (int64_t k = 0; k < ohw; ++k) row[k] += v;
      }
    }
  }
}

template <class T>
void backward_data_gemm(const Geometry& g, const Array& gy, const Array& w, const Array& gx) {
  const int64_t G = g.p.groups, og = g.o / G, kdim = g.c / G * g.kh * g.kw, ohw = g.oh * g.ow;
  std::vector<T> col(static_cast<std::size_t>(kdim * ohw));
  T* pgx = gx.data<T>();
  std::fill(pgx, pgx + gx.size(), T(0));
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t gi = 0; gi < G; ++gi) {
      // col (kdim, ohw) = W[group]^T (kdim, og) @ gy[n, group] (og, ohw)
      gemm<T>(true, false, kdim, ohw, og, w.data<T>() + gi * og * kdim, kdim, gy.data<T>() + (n * g.o + gi * og) * ohw,
              ohw, T(0), col.data(), ohw);
      col2im(col.data(), g, n, gi, pgx);
    }
  }
}

// gW[group] (og, kdim) = sum over images of gy[n, group] (og, ohw) @ col^T (ohw, kdim). The images
// are split among the threads, each accumulating its own gW (small) with one-thread GEMMs; the
// partial sums are added at the end.
template <class T>
void backward_weights_gemm(const Geometry& g, const Array& x, const Array& gy, const Array& gw) {
  const int64_t G = g.p.groups, og = g.o / G, kdim = g.c / G * g.kh * g.kw, ohw = g.oh * g.ow;
  const int threads = static_cast<int>(std::min<int64_t>(omp_get_max_threads(), g.n));
  std::vector<T> partial(static_cast<std::size_t>(std::max(threads - 1, 0)) * static_cast<std::size_t>(gw.size()));
  T* pgw = gw.data<T>();
  auto work = [&](int t) {
    std::vector<T> col(static_cast<std::size_t>(kdim * ohw));
    T* acc = t == 0 ? pgw : partial.data() + static_cast<std::size_t>(t - 1) * static_cast<std::size_t>(gw.size());
    std::fill(acc, acc + gw.size(), T(0));
    for (int64_t n = t; n < g.n; n += threads) {
      for (int64_t gi = 0; gi < G; ++gi) {
        im2col(x.data<T>(), g, n, gi, col.data());
        gemm<T>(false, true, og, kdim, ohw, gy.data<T>() + (n * g.o + gi * og) * ohw, ohw, col.data(), ohw, T(1),
                acc + gi * og * kdim, kdim);
      }
    }
  };
  if (threads <= 1) {
    work(0);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (int t = 0; t < threads; ++t) work(t);
  for (int t = 1; t < threads; ++t) {
    const T* part = partial.data() + static_cast<std::size_t>(t - 1) * static_cast<std::size_t>(gw.size());
    for (int64_t i = 0; i < gw.size(); ++i) pgw[i] += part[i];
  }
}

// oneDNN's AVX2 kernels block channels by 8; with fewer input channels (a network's first layer)
// its weight gradient wastes most of its work, and per-image GEMMs are faster (conv 1->32 on 28x28,
// batch 64, one thread: 0.9 ms against 3.5 ms). With 32 input channels oneDNN is ahead (22 ms
// against 24 ms for 32->64 on 26x26), so the rest stays on oneDNN. Only for an NCHW gy: a
// channels-last one goes to oneDNN's NHWC kernel (0.28 ms for conv 1->32 above, on an AVX-512
// machine) rather than being transposed for the GEMMs.
bool weights_by_gemm(const Geometry& g) {
  return g.p.groups == 1 && g.c < 8 && g.oh * g.ow >= 64;
}

// ---- dispatch ------------------------------------------------------------------------------------

// Runs `f32` on float32 copies of the inputs when the dtype is 16-bit, writing `out` back.
template <class F>
void in_float32(const Array& out, std::initializer_list<const Array*> ins, F&& f32) {
  std::vector<Array> conv;
  for (const Array* a : ins) conv.push_back(a->is_null() ? Array() : a->astype(Dtype::float32));
  Array o32 = Array::empty(out.shape(), Dtype::float32, out.device());
  f32(conv, o32);
  copy(o32, out);
}


// An activation as oneDNN takes it: the array itself when channels-last (`nhwc` set) or
// NCHW-contiguous, else a contiguous copy. An array that is both counts as channels-last, the
// primitives' own layout, so a one-channel NCHW input needs no reorder.
Array activation(const Array& a, bool& nhwc) {
  nhwc = a.is_channels_last();
  return nhwc ? a : a.contiguous();
}

// Runs f on `out` when it is channels-last (`nhwc` set) or NCHW-contiguous, else on a contiguous
// temporary copied into `out` afterwards.
template <class F>
void into_activation(const Array& out, bool& nhwc, F&& f) {
  nhwc = out.is_channels_last();
  if (nhwc || out.is_contiguous()) {
    f(out);
    return;
  }
  Array tmp = Array::empty(out.shape(), out.dtype(), out.device());
  f(tmp);
  copy(tmp, out);
}

// Runs f on `out` when contiguous, else on a contiguous temporary copied into it afterwards.
template <class F>
void into_nchw(const Array& out, F&& f) {
  if (out.is_contiguous()) {
    f(out);
    return;
  }
  Array tmp = Array::empty(out.shape(), out.dtype(), out.device());
  f(tmp);
  copy(tmp, out);
}

// Makes a primitive with `make`; for 16-bit types a primitive oneDNN does not implement (on this CPU,
// for these shapes) comes back with `ok` false, for the float32 fallback, instead of an error.
template <class Make>
ConvPrimitive make_or_unimplemented(const Geometry& g, Make&& make) {
  if (g.type == dt::f32) return make();
  try {
    return make();
  } catch (const dn::error& e) {
    if (e.status != dnnl_unimplemented) throw;
    ConvPrimitive c;
    c.ok = false;
    return c;
  }
}

// Whether a `dtype` convolution runs on oneDNN's own kernels of that type: bfloat16 when the CPU
// has native bf16 (see rensa::native_bf16).
bool native_half(Dtype dtype) {
  return dtype == Dtype::bfloat16 && native_bf16();
}

// Runs the forward convolution on oneDNN in g.type; false (nothing written) when it has no such
// primitive (16-bit types only).
bool forward_onednn(Geometry& g, const Array& x, const Array& w, const Array& b, const Array& y) {
  const Array xc = activation(x, g.x_nhwc), wc = w.contiguous();
  g.y_nhwc = y.is_channels_last();
  g.bias_type = b.is_null() ? g.type : detail::onednn_type(b.dtype());
  bool ok = true;
  with_dnnl("convolution_2d", g, [&] {
    auto prim = cache().get(g.key(Direction::forward),
                            [&] { return make_or_unimplemented(g, [&] { return make_forward(g); }); });
    if (!prim->ok) {
      ok = false;
      return;
    }
    const Array bc = b.is_null() ? b : b.contiguous();
    into_activation(y, g.y_nhwc, [&](const Array& out) { run(*prim, xc, wc, out, b.is_null() ? nullptr : &bc); });
  });
  return ok;
}

bool backward_data_onednn(Geometry& g, const Array& gy, const Array& w, const Array& gx) {
  const Array gyc = activation(gy, g.y_nhwc), wc = w.contiguous();
  g.x_nhwc = gx.is_channels_last();
  bool ok = true;
  with_dnnl("deconvolution_2d", g, [&] {
    auto prim = cache().get(g.key(Direction::backward_data),
                            [&] { return make_or_unimplemented(g, [&] { return make_backward_data(g); }); });
    if (!prim->ok) {
      ok = false;
      return;
    }
    into_activation(gx, g.x_nhwc, [&](const Array& out) { run(*prim, gyc, wc, out, nullptr); });
  });
  return ok;
}

bool backward_weights_onednn(Geometry& g, const Array& x, const Array& gy, const Array& gw) {
  const Array xc = activation(x, g.x_nhwc), gyc = activation(gy, g.y_nhwc);
  bool ok = true;
  with_dnnl("convolution_2d", g, [&] {
    auto prim = cache().get(g.key(Direction::backward_weights),
                            [&] { return make_or_unimplemented(g, [&] { return make_backward_weights(g); }); });
    if (!prim->ok) {
      ok = false;
      return;
    }
    into_nchw(gw, [&](const Array& out) { run(*prim, xc, gyc, out, nullptr); });
  });
  return ok;
}

}  // namespace

void conv2d_forward(const Array& x, const Array& w, const Array& b, const Array& y, const Conv2dParams& p) {
  if (y.size() == 0) return;
  if (x.size() == 0 || w.size() == 0) {  // no input channels: the bias alone
    if (b.is_null()) {
      fill(y, 0.0);
    } else {
      copy(b.reshape({1, b.size(), 1, 1}).broadcast_to(y.shape()), y);
    }
    return;
  }
  Geometry g = geometry(x.shape(), w.shape(), y.shape(), p, !b.is_null());
  if (is_half(x.dtype())) {
    g.type = detail::onednn_type(x.dtype());
    if (native_half(x.dtype()) && forward_onednn(g, x, w, b, y)) return;
    in_float32(y, {&x, &w, &b},
               [&](const std::vector<Array>& a, const Array& o) { conv2d_forward(a[0], a[1], a[2], o, p); });
    return;
  }
  dispatch_floating(x.dtype(), "conv2d_forward", [&]<class T>() {
    if constexpr (std::is_same_v<T, double>) {
      const Array xc = x.contiguous(), wc = w.contiguous();
      into_nchw(y, [&](const Array& out) { forward_gemm<double>(g, xc, wc, b, out); });
    } else if constexpr (std::is_same_v<T, float>) {
      forward_onednn(g, x, w, b, y);
    }
  });
}

void conv2d_backward_data(const Array& gy, const Array& w, const Array& gx, const Conv2dParams& p) {
  if (gx.size() == 0) return;
  if (gy.size() == 0 || w.size() == 0) {
    fill(gx, 0.0);
    return;
  }
  Geometry g = geometry(gx.shape(), w.shape(), gy.shape(), p, false);
  if (is_half(gx.dtype())) {
    g.type = detail::onednn_type(gx.dtype());
    if (native_half(gx.dtype()) && backward_data_onednn(g, gy, w, gx)) return;
    in_float32(gx, {&gy, &w},
               [&](const std::vector<Array>& a, const Array& o) { conv2d_backward_data(a[0], a[1], o, p); });
    return;
  }
  dispatch_floating(gx.dtype(), "conv2d_backward_data", [&]<class T>() {
    if constexpr (std::is_same_v<T, double>) {
      const Array gyc = gy.contiguous(), wc = w.contiguous();
      into_nchw(gx, [&](const Array& out) { backward_data_gemm<double>(g, gyc, wc, out); });
    } else if constexpr (std::is_same_v<T, float>) {
      backward_data_onednn(g, gy, w, gx);
    }
  });
}

void conv2d_backward_weights(const Array& x, const Array& gy, const Array& gw, const Conv2dParams& p) {
  if (gw.size() == 0) return;
  if (x.size() == 0 || gy.size() == 0) {
    fill(gw, 0.0);
    return;
  }
  Geometry g = geometry(x.shape(), gw.shape(), gy.shape(), p, false);
  if (is_half(gw.dtype())) {
    g.type = detail::onednn_type(gw.dtype());
    if (native_half(gw.dtype()) && backward_weights_onednn(g, x, gy, gw)) return;
    in_float32(gw, {&x, &gy},
               [&](const std::vector<Array>& a, const Array& o) { conv2d_backward_weights(a[0], a[1], o, p); });
    return;
  }
  dispatch_floating(gw.dtype(), "conv2d_backward_weights", [&]<class T>() {
    if constexpr (std::is_same_v<T, double>) {
      into_nchw(gw, [&](const Array& out) { backward_weights_gemm<double>(g, x.contiguous(), gy.contiguous(), out); });
    } else if constexpr (std::is_same_v<T, float>) {
      if (weights_by_gemm(g) && gy.is_contiguous()) {
        into_nchw(gw, [&](const Array& out) { backward_weights_gemm<float>(g, x.contiguous(), gy, out); });
        return;
      }
      backward_weights_onednn(g, x, gy, gw);
    }
  });
}

MemoryFormat conv2d_memory_format(Dtype dtype) {
  return dtype == Dtype::float32 || native_half(dtype) ? MemoryFormat::channels_last : MemoryFormat::contiguous;
}

}  // namespace rensa::backends::cpu
