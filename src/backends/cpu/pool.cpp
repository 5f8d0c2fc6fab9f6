// cpu pooling: direct loops over (H, W) planes, the planes split among the OpenMP threads, and
// for channels-last outputs the loops of pool_nhwc.cpp (inputs converted to the output's layout).
// Pooling is memory-bound and a window touches few elements, so a plain NCHW loop runs at memory
// speed; it also produces the argmax positions rensa's max-pooling backward and double backward
// share (oneDNN's max-pooling workspace is opaque and tied to its own backward). Max-pooling
// forward compares and copies 16-bit floats as they are (exact, no conversion); the other kernels
// read and write 16-bit floats as they are and sum in float32 scratch (a row or a plane), so each
// output rounds once and no float32 copy of an input or output is made.
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <type_traits>

#include "src/backends/cpu/compute_view.h"
#include "src/backends/cpu/kernels.h"
#include "src/backends/cpu/loops.h"
#include "src/backends/cpu/pool_nhwc.h"

namespace rensa::backends::cpu {
namespace {

struct Planes {
  int64_t count, h, w, oh, ow;
};

Planes planes_of(const Shape& in, const Shape& out) {
  return {in[0] * in[1], in[2], in[3], out[2], out[3]};
}

// Calls f(plane) for every plane, in parallel when the arrays are large.
template <class F>
void for_each_plane(int64_t count, int64_t work, F&& f) {
  if (work < kParallelGrain || count == 1) {
    for (int64_t q = 0; q < count; ++q) f(q);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t q = 0; q < count; ++q) f(q);
}

// The window rows [y0 + lo, y0 + hi) that fall inside [0, size).
inline void clip_window(int64_t start, int64_t k, int64_t size, int64_t& lo, int64_t& hi) {
  lo = std::max<int64_t>(0, -start);
  hi = std::min<int64_t>(k, size - start);
}

// The outputs j of one row whose window tap kx lands inside [0, w): j * stride - pad + kx in [0, w).
inline void tap_range(int64_t kx, int64_t stride, int64_t pad, int64_t w, int64_t ow, int64_t& jlo, int64_t& jhi) {
  const int64_t lo = pad - kx;  // j * stride >= lo
  jlo = lo <= 0 ? 0 : (lo + stride - 1) / stride;
  const int64_t hi = w - 1 + pad - kx;  // j * stride <= hi
  jhi = hi < 0 ? 0 : std::min<int64_t>(ow, hi / stride + 1);
}

// The loops below run a whole output row per window tap (ky, kx), the row's outputs innermost:
// the outputs are independent, so their compare/select or add chains overlap instead of each
// window's chain waiting on its previous element.

// m ? v : b for m all ones or zero, on the bits.
template <class T, class M>
inline T select_bits(M m, T v, T b) {
  using U = std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;
  const U mu = static_cast<U>(static_cast<int64_t>(m));
  return std::bit_cast<T>(static_cast<U>((std::bit_cast<U>(v) & mu) | (std::bit_cast<U>(b) & ~mu)));
}

template <class T>
void max_forward(const Array& x, const Array& y, const Array& indices, const Pool2dParams& p) {
  const Planes g = planes_of(x.shape(), y.shape());
  const T* px = x.data<T>();
  T* py = y.data<T>();
  int32_t* pi = indices.data<int32_t>();
  // The common 2x2 / stride 2 window tiling the plane exactly: each window in registers.
  const bool tiles2 = p.ksize_y == 2 && p.ksize_x == 2 && p.stride_y == 2 && p.stride_x == 2 && p.pad_y == 0 &&
                      p.pad_x == 0 && g.h == 2 * g.oh && g.w == 2 * g.ow;
  for_each_plane(g.count, y.size() * p.ksize_y * p.ksize_x, [&](int64_t q) {
    const T* in = px + q * g.h * g.w;
    T* out = py + q * g.oh * g.ow;
    int32_t* idx = pi + q * g.oh * g.ow;
    if (tiles2) {
      const auto w = static_cast<int32_t>(g.w);
      for (int64_t i = 0; i < g.oh; ++i) {
        const T* r0 = in + 2 * i * g.w;
        const T* r1 = r0 + g.w;
        for (int64_t j = 0; j < g.ow; ++j) {
          T b = r0[2 * j];
          auto a = static_cast<int32_t>(2 * i * g.w + 2 * j);
          const int32_t a0 = a;
          auto step = [&](T v, int32_t pos) {
            const bool take = int{v > b} | (int{v != v} & int{b == b});  // as below
            const int32_t m = -static_cast<int32_t>(take);
            a = (pos & m) | (a & ~m);
            b = select_bits(m, v, b);
          };
          step(r0[2 * j + 1], a0 + 1);
          step(r1[2 * j], a0 + w);
          step(r1[2 * j + 1], a0 + w + 1);
          out[i * g.ow + j] = b;
          idx[i * g.ow + j] = a;
        }
      }
      return;
    }
    int64_t* arg = thread_scratch<int64_t>(0, g.ow);
    for (int64_t i = 0; i < g.oh; ++i) {
      const int64_t y0 = i * p.stride_y - p.pad_y;
      int64_t ylo, yhi;
      clip_window(y0, p.ksize_y, g.h, ylo, yhi);
      T* best = out + i * g.ow;
      // Start from each window's first element.
      for (int64_t j = 0; j < g.ow; ++j) {
        const int64_t x0 = j * p.stride_x - p.pad_x;
        arg[j] = (y0 + ylo) * g.w + std::max<int64_t>(x0, 0);
        best[j] = in[arg[j]];
      }
      for (int64_t ky = ylo; ky < yhi; ++ky) {
        for (int64_t kx = 0; kx < p.ksize_x; ++kx) {
          int64_t jlo, jhi;
          tap_range(kx, p.stride_x, p.pad_x, g.w, g.ow, jlo, jhi);
          const int64_t base = (y0 + ky) * g.w - p.pad_x + kx, sx = p.stride_x;
          for (int64_t j = jlo; j < jhi; ++j) {
            const int64_t pos = base + j * sx;
            const T v = in[pos], b = best[j];
            // The first maximum wins; a NaN wins over numbers (the reference backend's rule). On ints:
            // both sides are evaluated, without the branch that && and || would need.
            const bool take = int{v > b} | (int{v != v} & int{b == b});
            // Selects by masks: GCC turns `take ? v : b` into a branch, which mispredicts on random
            // data (where the maximum lies is a coin toss) and makes the loop several times slower.
            const int64_t m = -static_cast<int64_t>(take);
            int64_t& a = arg[j];
            a = (pos & m) | (a & ~m);
            best[j] = select_bits(m, v, b);
          }
        }
      }
      for (int64_t j = 0; j < g.ow; ++j) idx[i * g.ow + j] = static_cast<int32_t>(arg[j]);
    }
  });
}

template <class T>
void max_backward(const Array& gy, const Array& indices, const Array& gx) {
  using A = compute_t<T>;
  const Planes g = planes_of(gx.shape(), gy.shape());
  const T* pgy = gy.data<T>();
  const int32_t* pi = indices.data<int32_t>();
  T* pgx = gx.data<T>();
  for_each_plane(g.count, gx.size() + gy.size(), [&](int64_t q) {
    const ComputeView<T> plane(pgx + q * g.h * g.w, g.h * g.w);
    A* out = plane.data();
    const T* in = pgy + q * g.oh * g.ow;
    const int32_t* idx = pi + q * g.oh * g.ow;
    for (int64_t k = 0; k < g.oh * g.ow; ++k) out[idx[k]] += static_cast<A>(in[k]);
    plane.store();
  });
}

template <class T>
void max_gather(const Array& x, const Array& indices, const Array& y) {
  const Planes g = planes_of(x.shape(), y.shape());
  const T* px = x.data<T>();
  const int32_t* pi = indices.data<int32_t>();
  T* py = y.data<T>();
  for_each_plane(g.count, y.size(), [&](int64_t q) {
    const T* in = px + q * g.h * g.w;
    const int32_t* idx = pi + q * g.oh * g.ow;
    T* out = py + q * g.oh * g.ow;
    for (int64_t k = 0; k < g.oh * g.ow; ++k) out[k] = in[idx[k]];
  });
}

template <class T>
void avg_forward(const Array& x, const Array& y, const Pool2dParams& p) {
  using A = compute_t<T>;
  const Planes g = planes_of(x.shape(), y.shape());
  const A inv = A(1) / static_cast<A>(p.ksize_y * p.ksize_x);
  const T* px = x.data<T>();
  T* py = y.data<T>();
  for_each_plane(g.count, y.size() * p.ksize_y * p.ksize_x, [&](int64_t q) {
    const T* in = px + q * g.h * g.w;
    T* out = py + q * g.oh * g.ow;
    for (int64_t i = 0; i < g.oh; ++i) {
      const int64_t y0 = i * p.stride_y - p.pad_y;
      int64_t ylo, yhi;
      clip_window(y0, p.ksize_y, g.h, ylo, yhi);
      const ComputeView<T> sums(out + i * g.ow, g.ow);
      A* acc = sums.data();
      for (int64_t ky = ylo; ky < yhi; ++ky) {
        for (int64_t kx = 0; kx < p.ksize_x; ++kx) {
          int64_t jlo, jhi;
          tap_range(kx, p.stride_x, p.pad_x, g.w, g.ow, jlo, jhi);
          const T* row = in + (y0 + ky) * g.w - p.pad_x + kx;
          for (int64_t j = jlo; j < jhi; ++j) acc[j] += static_cast<A>(row[j * p.stride_x]);
        }
      }
      for (int64_t j = 0; j < g.ow; ++j) acc[j] *= inv;
      sums.store();
    }
  });
}

template <class T>
void avg_backward(const Array& gy, const Array& gx, const Pool2dParams& p) {
  using A = compute_t<T>;
  const Planes g = planes_of(gx.shape(), gy.shape());
  const A inv = A(1) / static_cast<A>(p.ksize_y * p.ksize_x);
  const T* pgy = gy.data<T>();
  T* pgx = gx.data<T>();
  for_each_plane(g.count, gy.size() * p.ksize_y * p.ksize_x + gx.size(), [&](int64_t q) {
    const ComputeView<T> plane(pgx + q * g.h * g.w, g.h * g.w);
    A* out = plane.data();
    A* v = thread_scratch<A>(1, g.ow);  // one row of gy / window size
    for (int64_t i = 0; i < g.oh; ++i) {
      const int64_t y0 = i * p.stride_y - p.pad_y;
      int64_t ylo, yhi;
      clip_window(y0, p.ksize_y, g.h, ylo, yhi);
      for (int64_t j = 0; j < g.ow; ++j) v[j] = static_cast<A>(pgy[q * g.oh * g.ow + i * g.ow + j]) * inv;
      for (int64_t ky = ylo; ky < yhi; ++ky) {
        for (int64_t kx = 0; kx < p.ksize_x; ++kx) {
          int64_t jlo, jhi;
          tap_range(kx, p.stride_x, p.pad_x, g.w, g.ow, jlo, jhi);
          A* row = out + (y0 + ky) * g.w - p.pad_x + kx;
          // For one tap, distinct outputs j land on distinct pixels: no two writes collide.
          for (int64_t j = jlo; j < jhi; ++j) row[j * p.stride_x] += v[j];
        }
      }
    }
    plane.store();
  });
}

// A call runs channels-last when its (first) output is channels-last and not also contiguous.
bool runs_nhwc(const Array& out) {
  return out.suggest_memory_format() == MemoryFormat::channels_last;
}

// `a` in the layout the call runs in (itself, or a copy).
Array in_layout(const Array& a, bool nhwc) {
  return a.to_memory_format(nhwc ? MemoryFormat::channels_last : MemoryFormat::contiguous);
}

// Outputs are written in place, so they must already be in the call's layout.
void check_output(const char* op, const Array& out, bool nhwc) {
  RENSA_CHECK(nhwc ? out.is_channels_last() : out.is_contiguous(), ValueError, op, ": output ", out.shape(),
              " with strides ", out.strides(), " is not ", nhwc ? "channels-last" : "contiguous",
              " like the call's other arrays");
}

// Kernels read 16-bit inputs as they are, so the input and output dtypes must agree.
void check_dtypes(const char* op, const Array& in, const Array& out) {
  RENSA_CHECK(in.dtype() == out.dtype(), DtypeError, op, ": input ", in.dtype(), " and output ", out.dtype(),
              " differ");
}

}  // namespace

void max_pool2d_forward(const Array& x, const Array& y, const Array& indices, const Pool2dParams& p) {
  if (y.size() == 0) return;
  check_dtypes("max_pool2d_forward", x, y);
  const bool nhwc = runs_nhwc(y);
  check_output("max_pool2d_forward", y, nhwc);
  check_output("max_pool2d_forward", indices, nhwc);
  const Array xc = in_layout(x, nhwc);
  // Compares and copies: exact in a 16-bit type itself.
  dispatch_floating(x.dtype(), "max_pool2d_forward", [&]<class T>() {
    nhwc ? nhwc::max_forward<T>(xc, y, indices, p) : max_forward<T>(xc, y, indices, p);
  });
}

void max_pool2d_backward(const Array& gy, const Array& indices, const Array& gx) {
  if (gx.size() == 0) return;
  check_dtypes("max_pool2d_backward", gy, gx);
  const bool nhwc = runs_nhwc(gx);
  check_output("max_pool2d_backward", gx, nhwc);
  const Array gyc = in_layout(gy, nhwc), ic = in_layout(indices, nhwc);
  dispatch_floating(gx.dtype(), "max_pool2d_backward",
                    [&]<class T>() { nhwc ? nhwc::max_backward<T>(gyc, ic, gx) : max_backward<T>(gyc, ic, gx); });
}

void max_pool2d_gather(const Array& x, const Array& indices, const Array& y) {
  if (y.size() == 0) return;
  check_dtypes("max_pool2d_gather", x, y);
  const bool nhwc = runs_nhwc(y);
  check_output("max_pool2d_gather", y, nhwc);
  const Array xc = in_layout(x, nhwc), ic = in_layout(indices, nhwc);
  // A gather copies values: no arithmetic, no conversion.
  dispatch_floating(x.dtype(), "max_pool2d_gather",
                    [&]<class T>() { nhwc ? nhwc::max_gather<T>(xc, ic, y) : max_gather<T>(xc, ic, y); });
}

void avg_pool2d_forward(const Array& x, const Array& y, const Pool2dParams& p) {
  if (y.size() == 0) return;
  check_dtypes("avg_pool2d_forward", x, y);
  const bool nhwc = runs_nhwc(y);
  check_output("avg_pool2d_forward", y, nhwc);
  const Array xc = in_layout(x, nhwc);
  dispatch_floating(x.dtype(), "avg_pool2d_forward",
                    [&]<class T>() { nhwc ? nhwc::avg_forward<T>(xc, y, p) : avg_forward<T>(xc, y, p); });
}

void avg_pool2d_backward(const Array& gy, const Array& gx, const Pool2dParams& p) {
  if (gx.size() == 0) return;
  check_dtypes("avg_pool2d_backward", gy, gx);
  const bool nhwc = runs_nhwc(gx);
  check_output("avg_pool2d_backward", gx, nhwc);
  const Array gyc = in_layout(gy, nhwc);
  dispatch_floating(gx.dtype(), "avg_pool2d_backward",
                    [&]<class T>() { nhwc ? nhwc::avg_backward<T>(gyc, gx, p) : avg_backward<T>(gyc, gx, p); });
}

}  // namespace rensa::backends::cpu
