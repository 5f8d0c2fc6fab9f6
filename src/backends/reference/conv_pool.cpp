// Reference convolution and pooling: the defining sums written as plain loops over every index,
// accumulated in double (int64 for nothing: these kernels take floating dtypes only). Slow on
// purpose; the cpu backend is tested against them.
#include "src/backends/reference/kernels.h"

#include <cmath>
#include <vector>

#include "src/core/convert.h"

namespace rensa::backends::reference {
namespace {

using rensa::detail::convert;

// Offset of element (i0, i1, i2, i3) of a 4-d array, in elements.
inline int64_t at4(const Array& a, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  const Shape& s = a.strides();
  return i0 * s[0] + i1 * s[1] + i2 * s[2] + i3 * s[3];
}

template <class T>
T* ptr(const Array& a) {
  return static_cast<T*>(a.raw_data());
}

template <class T>
double load(const Array& a, int64_t off) {
  return static_cast<double>(static_cast<compute_t<T>>(ptr<T>(a)[off]));
}

// Writes a row-major buffer of doubles with gx's shape into gx.
template <class T>
void store_all(const std::vector<double>& acc, const Array& out) {
  const Shape& s = out.shape();
  std::size_t k = 0;
  for (int64_t a = 0; a < s[0]; ++a)
    for (int64_t b = 0; b < s[1]; ++b)
      for (int64_t c = 0; c < s[2]; ++c)
        for (int64_t d = 0; d < s[3]; ++d) ptr<T>(out)[at4(out, a, b, c, d)] = convert<T>(acc[k++]);
}

}  // namespace

void conv2d_forward(const Array& x, const Array& w, const Array& b, const Array& y, const Conv2dParams& p) {
  dispatch_floating(x.dtype(), "reference conv2d_forward", [&]<class T>() {
    const int64_t N = y.shape()[0], O = y.shape()[1], OH = y.shape()[2], OW = y.shape()[3];
    const int64_t H = x.shape()[2], W = x.shape()[3];
    const int64_t Cg = w.shape()[1], KH = w.shape()[2], KW = w.shape()[3], Og = O / p.groups;
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t o = 0; o < O; ++o) {
        const int64_t g = o / Og;
        for (int64_t i = 0; i < OH; ++i) {
          for (int64_t j = 0; j < OW; ++j) {
            double acc = b.is_null() ? 0.0 : load<T>(b, o * b.strides()[0]);
            for (int64_t c = 0; c < Cg; ++c) {
              for (int64_t ky = 0; ky < KH; ++ky) {
                const int64_t iy = i * p.stride_y - p.pad_y + ky * p.dilate_y;
                if (iy < 0 || iy >= H) continue;
                for (int64_t kx = 0; kx < KW; ++kx) {
                  const int64_t ix = j * p.stride_x - p.pad_x + kx * p.dilate_x;
                  if (ix < 0 || ix >= W) continue;
                  acc += load<T>(x, at4(x, n, g * Cg + c, iy, ix)) * load<T>(w, at4(w, o, c, ky, kx));
                }
              }
            }
            ptr<T>(y)[at4(y, n, o, i, j)] = convert<T>(acc);
          }
        }
      }
    }
  });
}

void conv2d_backward_data(const Array& gy, const Array& w, const Array& gx, const Conv2dParams& p) {
  dispatch_floating(gx.dtype(), "reference conv2d_backward_data", [&]<class T>() {
    const int64_t N = gy.shape()[0], O = gy.shape()[1], OH = gy.shape()[2], OW = gy.shape()[3];
    const int64_t C = gx.shape()[1], H = gx.shape()[2], W = gx.shape()[3];
    const int64_t Cg = w.shape()[1], KH = w.shape()[2], KW = w.shape()[3], Og = O / p.groups;
    std::vector<double> acc(static_cast<std::size_t>(gx.size()), 0.0);
    auto slot = [&](int64_t n, int64_t c, int64_t iy, int64_t ix) {
      return static_cast<std::size_t>(((n * C + c) * H + iy) * W + ix);
    };
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t o = 0; o < O; ++o) {
        const int64_t g = o / Og;
        for (int64_t i = 0; i < OH; ++i) {
          for (int64_t j = 0; j < OW; ++j) {
            const double v = load<T>(gy, at4(gy, n, o, i, j));
            for (int64_t c = 0; c < Cg; ++c) {
              for (int64_t ky = 0; ky < KH; ++ky) {
                const int64_t iy = i * p.stride_y - p.pad_y + ky * p.dilate_y;
                if (iy < 0 || iy >= H) continue;
                for (int64_t kx = 0; kx < KW; ++kx) {
                  const int64_t ix = j * p.stride_x - p.pad_x + kx * p.dilate_x;
                  if (ix < 0 || ix >= W) continue;
                  acc[slot(n, g * Cg + c, iy, ix)] += v * load<T>(w, at4(w, o, c, ky, kx));
                }
              }
            }
          }
        }
      }
    }
    store_all<T>(acc, gx);
  });
}

void conv2d_backward_weights(const Array& x, const Array& gy, const Array& gw, const Conv2dParams& p) {
  dispatch_floating(gw.dtype(), "reference conv2d_backward_weights", [&]<class T>() {
    const int64_t N = gy.shape()[0], O = gy.shape()[1], OH = gy.shape()[2], OW = gy.shape()[3];
    const int64_t H = x.shape()[2], W = x.shape()[3];
    const int64_t Cg = gw.shape()[1], KH = gw.shape()[2], KW = gw.shape()[3], Og = O / p.groups;
    for (int64_t o = 0; o < O; ++o) {
      const int64_t g = o / Og;
      for (int64_t c = 0; c < Cg; ++c) {
        for (int64_t ky = 0; ky < KH; ++ky) {
          for (int64_t kx = 0; kx < KW; ++kx) {
            double acc = 0.0;
            for (int64_t n = 0; n < N; ++n) {
              for (int64_t i = 0; i < OH; ++i) {
                const int64_t iy = i * p.stride_y - p.pad_y + ky * p.dilate_y;
                if (iy < 0 || iy >= H) continue;
                for (int64_t j = 0; j < OW; ++j) {
                  const int64_t ix = j * p.stride_x - p.pad_x + kx * p.dilate_x;
                  if (ix < 0 || ix >= W) continue;
                  acc += load<T>(x, at4(x, n, g * Cg + c, iy, ix)) * load<T>(gy, at4(gy, n, o, i, j));
                }
              }
            }
            ptr<T>(gw)[at4(gw, o, c, ky, kx)] = convert<T>(acc);
          }
        }
      }
    }
  });
}

void max_pool2d_forward(const Array& x, const Array& y, const Array& indices, const Pool2dParams& p) {
  dispatch_floating(x.dtype(), "reference max_pool2d_forward", [&]<class T>() {
    const int64_t N = y.shape()[0], C = y.shape()[1], OH = y.shape()[2], OW = y.shape()[3];
    const int64_t H = x.shape()[2], W = x.shape()[3];
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t c = 0; c < C; ++c) {
        for (int64_t i = 0; i < OH; ++i) {
          for (int64_t j = 0; j < OW; ++j) {
            double best = 0.0;
            int64_t arg = -1;
            for (int64_t ky = 0; ky < p.ksize_y; ++ky) {
              const int64_t iy = i * p.stride_y - p.pad_y + ky;
              if (iy < 0 || iy >= H) continue;
              for (int64_t kx = 0; kx < p.ksize_x; ++kx) {
                const int64_t ix = j * p.stride_x - p.pad_x + kx;
                if (ix < 0 || ix >= W) continue;
                const double v = load<T>(x, at4(x, n, c, iy, ix));
                // The first maximum wins; a NaN wins over numbers (as NumPy's max propagates it).
                if (arg < 0 || v > best || (std::isnan(v) && !std::isnan(best))) {
                  best = v;
                  arg = iy * W + ix;
                }
              }
            }
            RENSA_CHECK(arg >= 0, ValueError, "reference max_pool2d_forward: window (", i, ", ", j,
                        ") holds no element of x ", x.shape());
            ptr<T>(y)[at4(y, n, c, i, j)] = convert<T>(best);
            ptr<int32_t>(indices)[at4(indices, n, c, i, j)] = static_cast<int32_t>(arg);
          }
        }
      }
    }
  });
}

void max_pool2d_backward(const Array& gy, const Array& indices, const Array& gx) {
  dispatch_floating(gx.dtype(), "reference max_pool2d_backward", [&]<class T>() {
    const int64_t N = gy.shape()[0], C = gy.shape()[1], OH = gy.shape()[2], OW = gy.shape()[3];
    const int64_t H = gx.shape()[2], W = gx.shape()[3];
    std::vector<double> acc(static_cast<std::size_t>(gx.size()), 0.0);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < OH; ++i)
          for (int64_t j = 0; j < OW; ++j) {
            const int64_t k = ptr<int32_t>(indices)[at4(indices, n, c, i, j)];
            acc[static_cast<std::size_t>((n * C + c) * H * W + k)] += load<T>(gy, at4(gy, n, c, i, j));
          }
    store_all<T>(acc, gx);
  });
}

void max_pool2d_gather(const Array& x, const Array& indices, const Array& y) {
  dispatch_floating(x.dtype(), "reference max_pool2d_gather", [&]<class T>() {
    const int64_t N = y.shape()[0], C = y.shape()[1], OH = y.shape()[2], OW = y.shape()[3];
    const int64_t W = x.shape()[3];
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < OH; ++i)
          for (int64_t j = 0; j < OW; ++j) {
            const int64_t k = ptr<int32_t>(indices)[at4(indices, n, c, i, j)];
            ptr<T>(y)[at4(y, n, c, i, j)] = ptr<T>(x)[at4(x, n, c, k / W, k % W)];
          }
  });
}

void avg_pool2d_forward(const Array& x, const Array& y, const Pool2dParams& p) {
  dispatch_floating(x.dtype(), "reference avg_pool2d_forward", [&]<class T>() {
    const int64_t N = y.shape()[0], C = y.shape()[1], OH = y.shape()[2], OW = y.shape()[3];
    const int64_t H = x.shape()[2], W = x.shape()[3];
    const double inv = 1.0 / static_cast<double>(p.ksize_y * p.ksize_x);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < OH; ++i)
          for (int64_t j = 0; j < OW; ++j) {
            double acc = 0.0;
            for (int64_t ky = 0; ky < p.ksize_y; ++ky) {
              const int64_t iy = i * p.stride_y - p.pad_y + ky;
              if (iy < 0 || iy >= H) continue;
              for (int64_t kx = 0; kx < p.ksize_x; ++kx) {
                const int64_t ix = j * p.stride_x - p.pad_x + kx;
                if (ix >= 0 && ix < W) acc += load<T>(x, at4(x, n, c, iy, ix));
              }
            }
            ptr<T>(y)[at4(y, n, c, i, j)] = convert<T>(acc * inv);
          }
  });
}

void avg_pool2d_backward(const Array& gy, const Array& gx, const Pool2dParams& p) {
  dispatch_floating(gx.dtype(), "reference avg_pool2d_backward", [&]<class T>() {
    const int64_t N = gy.shape()[0], C = gy.shape()[1], OH = gy.shape()[2], OW = gy.shape()[3];
    const int64_t H = gx.shape()[2], W = gx.shape()[3];
    const double inv = 1.0 / static_cast<double>(p.ksize_y * p.ksize_x);
    std::vector<double> acc(static_cast<std::size_t>(gx.size()), 0.0);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < OH; ++i)
          for (int64_t j = 0; j < OW; ++j) {
            const double v = load<T>(gy, at4(gy, n, c, i, j)) * inv;
            for (int64_t ky = 0; ky < p.ksize_y; ++ky) {
              const int64_t iy = i * p.stride_y - p.pad_y + ky;
              if (iy < 0 || iy >= H) continue;
              for (int64_t kx = 0; kx < p.ksize_x; ++kx) {
                const int64_t ix = j * p.stride_x - p.pad_x + kx;
                if (ix >= 0 && ix < W) acc[static_cast<std::size_t>(((n * C + c) * H + iy) * W + ix)] += v;
              }
            }
          }
    store_all<T>(acc, gx);
  });
}

}  // namespace rensa::backends::reference
