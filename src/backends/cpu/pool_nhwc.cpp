// Channels-last pooling: each output pixel's C channels are one contiguous row, so every window
// tap is a vector operation over channels (where NCHW loops run along an output row instead).
// Images are independent, so the scatters of the backward passes split by image among threads.
#include "src/backends/cpu/pool_nhwc.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>

#include "rensa/core/half.h"
#include "src/backends/cpu/compute_view.h"
#include "src/backends/cpu/loops.h"

namespace rensa::backends::cpu::nhwc {
namespace {

struct Dims {
  int64_t n, c, h, w, oh, ow;
};

Dims dims_of(const Shape& in, const Shape& out) {
  return {in[0], in[1], in[2], in[3], out[2], out[3]};
}

// Calls f(i) for i in [0, count), in parallel when the work is large.
template <class F>
void parallel_for(int64_t count, int64_t work, F&& f) {
  if (work < kParallelGrain || count == 1) {
    for (int64_t i = 0; i < count; ++i) f(i);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) f(i);
}

// The taps [lo, hi) of a window starting at `start` (may be negative) that fall inside [0, size).
struct Span {
  int64_t lo, hi;
};
inline Span clip(int64_t start, int64_t k, int64_t size) {
  return {std::max<int64_t>(0, -start), std::min<int64_t>(k, size - start)};
}

// Calls f(image, out, y0, x0, sy, sx) for every output pixel, rows of pixels split among threads:
// `image` is the pixel's input image, `out` the offset of its C outputs, (y0, x0) its window's
// top-left corner (negative in the padding) and sy, sx the window's taps inside the image.
template <class T, class F>
void for_each_window(const Dims& d, const Pool2dParams& p, const T* px, int64_t work, F&& f) {
  parallel_for(d.n * d.oh, work, [&](int64_t r) {
    const int64_t n = r / d.oh, i = r % d.oh, y0 = i * p.stride_y - p.pad_y;
    const Span sy = clip(y0, p.ksize_y, d.h);
    const T* image = px + n * d.h * d.w * d.c;
    for (int64_t j = 0; j < d.ow; ++j) {
      const int64_t x0 = j * p.stride_x - p.pad_x;
      f(image, (r * d.ow + j) * d.c, y0, x0, sy, clip(x0, p.ksize_x, d.w));
    }
  });
}

}  // namespace

template <class T>
void max_forward(const Array& x, const Array& y, const Array& indices, const Pool2dParams& p) {
  using Bits = std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;
  const Dims d = dims_of(x.shape(), y.shape());
  const T* px = x.data<T>();
  T* py = y.data<T>();
  int32_t* pi = indices.data<int32_t>();
  for_each_window(d, p, px, y.size() * p.ksize_y * p.ksize_x,
                  [&](const T* image, int64_t out, int64_t y0, int64_t x0, Span sy, Span sx) {
                    T* best = py + out;
                    int32_t* arg = pi + out;
                    // Start from the window's first element; the first maximum wins and a NaN wins over numbers
                    // (the reference backend's rule).
                    const auto first = static_cast<int32_t>((y0 + sy.lo) * d.w + x0 + sx.lo);
                    std::copy(image + first * d.c, image + (first + 1) * d.c, best);
                    std::fill(arg, arg + d.c, first);
                    for (int64_t ky = sy.lo; ky < sy.hi; ++ky) {
                      for (int64_t kx = sx.lo; kx < sx.hi; ++kx) {
                        const auto pos = static_cast<int32_t>((y0 + ky) * d.w + x0 + kx);
                        const T* v = image + pos * d.c;
                        // Selects by masks, on the bits: this vectorizes over channels where `take ? e : b` may not.
                        for (int64_t c = 0; c < d.c; ++c) {
                          const T b = best[c], e = v[c];
                          // On ints, so that both sides are evaluated without a branch.
                          const bool take = int{e > b} | (int{e != e} & int{b == b});
                          const auto m = static_cast<Bits>(-static_cast<int64_t>(take));
                          best[c] = std::bit_cast<T>(
                              static_cast<Bits>((std::bit_cast<Bits>(e) & m) | (std::bit_cast<Bits>(b) & ~m)));
                          const auto m32 = -static_cast<int32_t>(take);
                          arg[c] = (pos & m32) | (arg[c] & ~m32);
                        }
                      }
                    }
                  });
}

template <class T>
void max_backward(const Array& gy, const Array& indices, const Array& gx) {
  using A = compute_t<T>;
  const Dims d = dims_of(gx.shape(), gy.shape());
  const T* pgy = gy.data<T>();
  const int32_t* pi = indices.data<int32_t>();
  T* pgx = gx.data<T>();
  const int64_t in_image = d.h * d.w * d.c, out_image = d.oh * d.ow * d.c;
  parallel_for(d.n, gx.size() + gy.size(), [&](int64_t n) {
    const ComputeView<T> image(pgx + n * in_image, in_image);
    A* out = image.data();
    const T* g = pgy + n * out_image;
    const int32_t* idx = pi + n * out_image;
    for (int64_t q = 0; q < d.oh * d.ow; ++q) {
      for (int64_t c = 0; c < d.c; ++c) out[idx[q * d.c + c] * d.c + c] += static_cast<A>(g[q * d.c + c]);
    }
    image.store();
  });
}

template <class T>
void max_gather(const Array& x, const Array& indices, const Array& y) {
  const Dims d = dims_of(x.shape(), y.shape());
  const T* px = x.data<T>();
  const int32_t* pi = indices.data<int32_t>();
  T* py = y.data<T>();
  const int64_t in_image = d.h * d.w * d.c, out_image = d.oh * d.ow * d.c;
  parallel_for(d.n, y.size(), [&](int64_t n) {
    const T* in = px + n * in_image;
    const int32_t* idx = pi + n * out_image;
    T* out = py + n * out_image;
    for (int64_t q = 0; q < d.oh * d.ow; ++q) {
      for (int64_t c = 0; c < d.c; ++c) out[q * d.c + c] = in[idx[q * d.c + c] * d.c + c];
    }
  });
}

template <class T>
void avg_forward(const Array& x, const Array& y, const Pool2dParams& p) {
  using A = compute_t<T>;
  const Dims d = dims_of(x.shape(), y.shape());
  const A inv = A(1) / static_cast<A>(p.ksize_y * p.ksize_x);
  const T* px = x.data<T>();
  T* py = y.data<T>();
  for_each_window(d, p, px, y.size() * p.ksize_y * p.ksize_x,
                  [&](const T* image, int64_t out, int64_t y0, int64_t x0, Span sy, Span sx) {
                    const ComputeView<T> sums(py + out, d.c);
                    A* acc = sums.data();
                    for (int64_t ky = sy.lo; ky < sy.hi; ++ky) {
                      for (int64_t kx = sx.lo; kx < sx.hi; ++kx) {
                        const T* v = image + ((y0 + ky) * d.w + x0 + kx) * d.c;
                        for (int64_t c = 0; c < d.c; ++c) acc[c] += static_cast<A>(v[c]);
                      }
                    }
                    for (int64_t c = 0; c < d.c; ++c) acc[c] *= inv;
                    sums.store();
                  });
}

template <class T>
void avg_backward(const Array& gy, const Array& gx, const Pool2dParams& p) {
  using A = compute_t<T>;
  const Dims d = dims_of(gx.shape(), gy.shape());
  const A inv = A(1) / static_cast<A>(p.ksize_y * p.ksize_x);
  const T* pgy = gy.data<T>();
  T* pgx = gx.data<T>();
  const int64_t in_image = d.h * d.w * d.c;
  parallel_for(d.n, gy.size() * p.ksize_y * p.ksize_x + gx.size(), [&](int64_t n) {
    const ComputeView<T> sums(pgx + n * in_image, in_image);
    A* image = sums.data();
    for (int64_t i = 0; i < d.oh; ++i) {
      const int64_t y0 = i * p.stride_y - p.pad_y;
      const Span sy = clip(y0, p.ksize_y, d.h);
      for (int64_t j = 0; j < d.ow; ++j) {
        const int64_t x0 = j * p.stride_x - p.pad_x;
        const Span sx = clip(x0, p.ksize_x, d.w);
        const T* g = pgy + ((n * d.oh + i) * d.ow + j) * d.c;
        for (int64_t ky = sy.lo; ky < sy.hi; ++ky) {
          for (int64_t kx = sx.lo; kx < sx.hi; ++kx) {
            A* out = image + ((y0 + ky) * d.w + x0 + kx) * d.c;
            for (int64_t c = 0; c < d.c; ++c) out[c] += static_cast<A>(g[c]) * inv;
          }
        }
      }
    }
    sums.store();
  });
}

template void max_forward<float>(const Array&, const Array&, const Array&, const Pool2dParams&);
template void max_forward<double>(const Array&, const Array&, const Array&, const Pool2dParams&);
template void max_forward<Half>(const Array&, const Array&, const Array&, const Pool2dParams&);
template void max_forward<BFloat16>(const Array&, const Array&, const Array&, const Pool2dParams&);
template void max_backward<float>(const Array&, const Array&, const Array&);
template void max_backward<double>(const Array&, const Array&, const Array&);
template void max_backward<Half>(const Array&, const Array&, const Array&);
template void max_backward<BFloat16>(const Array&, const Array&, const Array&);
template void max_gather<float>(const Array&, const Array&, const Array&);
template void max_gather<double>(const Array&, const Array&, const Array&);
template void max_gather<Half>(const Array&, const Array&, const Array&);
template void max_gather<BFloat16>(const Array&, const Array&, const Array&);
template void avg_forward<float>(const Array&, const Array&, const Pool2dParams&);
template void avg_forward<double>(const Array&, const Array&, const Pool2dParams&);
template void avg_forward<Half>(const Array&, const Array&, const Pool2dParams&);
template void avg_forward<BFloat16>(const Array&, const Array&, const Pool2dParams&);
template void avg_backward<float>(const Array&, const Array&, const Pool2dParams&);
template void avg_backward<double>(const Array&, const Array&, const Pool2dParams&);
template void avg_backward<Half>(const Array&, const Array&, const Pool2dParams&);
template void avg_backward<BFloat16>(const Array&, const Array&, const Pool2dParams&);

}  // namespace rensa::backends::cpu::nhwc
