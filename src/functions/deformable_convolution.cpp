// deformable_convolution_2d_sampler as a composite: bilinear samples of the padded x at the offset
// taps (Chainer's spatial_transformer_sampler on the grid of _offset2grid, written out), stacked as
// columns (N OH OW, C KH KW), times W. The neighbours' positions are constants found on the host
// from the offsets; the weights are functions of the offsets, so gradients reach them.
#include "rensa/functions/deformable_convolution.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/linalg.h"
#include "rensa/functions/reduction.h"
#include "src/functions/common.h"
#include "src/functions/conv_geometry.h"
#include "src/functions/pooling_internal.h"

namespace rensa::functions {

Variable deformable_convolution_2d_sampler(const Variable& x, const Variable& offset, const Variable& W,
                                           const Variable& b, Int2 stride, Int2 pad) {
  const char* op = "deformable_convolution_2d_sampler";
  detail::check_floating(op, x);
  if (b.is_null()) {
    detail::check_same_dtype_device(op, {&x, &offset, &W});
  } else {
    detail::check_same_dtype_device(op, {&x, &offset, &W, &b});
  }
  RENSA_CHECK(stride.y >= 1 && stride.x >= 1 && pad.y >= 0 && pad.x >= 0, ValueError, op, ": stride ", stride,
              " must be at least 1 and pad ", pad, " not negative (x ", x.shape(), ", W ", W.shape(), ")");
  RENSA_CHECK(x.ndim() == 4 && offset.ndim() == 4 && W.ndim() == 4, ShapeError, op, ": x ", x.shape(), ", offset ",
              offset.shape(), " and W ", W.shape(), " must have 4 axes");
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], Wd = x.shape()[3];
  const int64_t O = W.shape()[0], KH = W.shape()[2], KW = W.shape()[3], K = KH * KW;
  const int64_t OH = offset.shape()[2], OW = offset.shape()[3], P = OH * OW;
  RENSA_CHECK(W.shape()[1] == C, ShapeError, op, ": x ", x.shape(), " has ", C, " channels but W ", W.shape(),
              " takes ", W.shape()[1]);
  RENSA_CHECK(offset.shape()[0] == N && offset.shape()[1] == 2 * K, ShapeError, op, ": offset ", offset.shape(),
              " must be (", N, ", ", 2 * K, ", OH, OW) for x ", x.shape(), " and W ", W.shape());
  RENSA_CHECK(b.is_null() || (b.ndim() == 1 && b.shape()[0] == O), ShapeError, op, ": b ",
              b.is_null() ? Shape() : b.shape(), " does not match the ", O, " output channels of W ", W.shape());
  // Coordinates in x padded by pad + 1 (the sampler's own border of zeros), clipped to it.
  const int64_t Hp = H + 2 * pad.y, Wp = Wd + 2 * pad.x, H2 = Hp + 2, W2 = Wp + 2;
  RENSA_CHECK(H2 * W2 <= std::numeric_limits<int32_t>::max(), ShapeError, op, ": x ", x.shape(), " with pad ", pad,
              " has planes of more than 2^31 - 1 elements");
  const std::vector<double> off = offset.array().to(Device::cpu()).to_vector<double>();
  const std::size_t count = static_cast<std::size_t>(N * K * P);
  std::vector<double> base_u(count), base_v(count), u0(count), v0(count);
  std::vector<int32_t> corner(4 * count);  // (N, 4, K, P): (v0, u0), (v0, u1), (v1, u0), (v1, u1)
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t p = 0; p < P; ++p) {
        const std::size_t e = static_cast<std::size_t>((n * K + k) * P + p);
        const double bu = static_cast<double>(p % OW * stride.x + k % KW + 1);
        const int64_t out_row = p / OW, kernel_row = k / KW;  // whole rows: truncation intended
        const double bv = static_cast<double>(out_row * stride.y + kernel_row + 1);
        const double u = off[static_cast<std::size_t>(((n * 2 * K + k) * P) + p)] + bu;
        const double v = off[static_cast<std::size_t>(((n * 2 * K + K + k) * P) + p)] + bv;
        const double fu = std::clamp<double>(std::floor(std::clamp<double>(u, 0, static_cast<double>(Wp + 1))), 0,
                                             static_cast<double>(Wp));
        const double fv = std::clamp<double>(std::floor(std::clamp<double>(v, 0, static_cast<double>(Hp + 1))), 0,
                                             static_cast<double>(Hp));
        base_u[e] = bu;
        base_v[e] = bv;
        u0[e] = fu;
        v0[e] = fv;
        const int64_t iu = static_cast<int64_t>(fu), iv = static_cast<int64_t>(fv);
        const int64_t at[4] = {iv * W2 + iu, iv * W2 + iu + 1, (iv + 1) * W2 + iu, (iv + 1) * W2 + iu + 1};
        for (int64_t q = 0; q < 4; ++q) {
          corner[static_cast<std::size_t>(((n * 4 + q) * K + k) * P + p)] = static_cast<int32_t>(at[q]);
        }
      }
    }
  }
  auto constant = [&](const std::vector<double>& v) {
    return Variable(Array::from_vector(v, {N, K, OH, OW}).astype(x.dtype()).to(x.device()));
  };
  // The weights, as functions of the offsets: u clipped (gradient 0 outside), less its floor.
  const Variable ox = get_item(offset, {Slice{}, Slice{0, K}}), oy = get_item(offset, {Slice{}, Slice{K, 2 * K}});
  const Variable uc = clip(add(ox, constant(base_u)), 0.0, static_cast<double>(Wp + 1));
  const Variable vc = clip(add(oy, constant(base_v)), 0.0, static_cast<double>(Hp + 1));
  const Variable wu0 = sub(uc, constant(u0)), wv0 = sub(vc, constant(v0));
  const Variable wu1 = rsub(wu0, 1.0), wv1 = rsub(wv0, 1.0);
  const Variable weights =
      reshape(stack({mul(wu1, wv1), mul(wu0, wv1), mul(wu1, wv0), mul(wu0, wv0)}, 1), {N, 1, 4 * K, P});
  // Every channel reads the same neighbours: the gather's positions repeat over C.
  std::vector<int32_t> positions(static_cast<std::size_t>(C) * corner.size());
  for (int64_t n = 0; n < N; ++n) {
    const auto first = corner.begin() + static_cast<std::ptrdiff_t>(n * 4 * K * P);
    for (int64_t c = 0; c < C; ++c) {
      std::copy(first, first + static_cast<std::ptrdiff_t>(4 * K * P),
                positions.begin() + static_cast<std::ptrdiff_t>((n * C + c) * 4 * K * P));
    }
  }
  const Variable padded = functions::pad(x, {{0, 0}, {0, 0}, {pad.y + 1, pad.y + 1}, {pad.x + 1, pad.x + 1}});
  const Variable gathered =
      detail::max_pool_gather(padded, Array::from_vector(positions, {N, C, 4 * K, P}).to(x.device()));
  // The four neighbours weighted and summed: the samples (N, C, K, P), then columns (N P, C K).
  const Variable samples = sum(reshape(mul(gathered, weights), {N, C, 4, K, P}), {2});
  const Variable cols = reshape(transpose(samples, {0, 3, 1, 2}), {N * P, C * K});
  Variable y = matmul(cols, reshape(transpose(W, {1, 2, 3, 0}), {C * K, O}));
  y = transpose(reshape(y, {N, OH, OW, O}), {0, 3, 1, 2});
  if (!b.is_null()) y = add(y, reshape(b, {1, O, 1, 1}));
  return y;
}

}  // namespace rensa::functions
