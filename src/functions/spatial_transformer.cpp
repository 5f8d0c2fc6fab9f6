// Spatial transformers as composites: the grid is one matmul with a constant coordinate table; the
// sampler gathers the 2x2 neighbours of every point (src/functions/gather.h) and blends them with
// weights that are differentiable functions of the grid.
#include "rensa/functions/spatial_transformer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/linalg.h"
#include "src/functions/arg_checks.h"
#include "src/functions/common.h"
#include "src/functions/gather.h"

namespace rensa::functions {
namespace {

// Values spaced evenly over [-1, 1] (NumPy's linspace(-1, 1, n)).
double unit_coord(int64_t i, int64_t n) {
  return n == 1 ? -1.0 : -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(n - 1);
}

}  // namespace

Variable spatial_transformer_grid(const Variable& theta, Int2 output_shape) {
  detail::check_floating("spatial_transformer_grid", theta, "theta");
  RENSA_CHECK(theta.ndim() == 3 && theta.shape()[1] == 2 && theta.shape()[2] == 3, ShapeError,
              "spatial_transformer_grid: theta must be (N, 2, 3), got ", theta.shape());
  const int64_t h = output_shape.y, w = output_shape.x;
  RENSA_CHECK(h > 0 && w > 0, ValueError, "spatial_transformer_grid: output_shape must be positive, got (", h, ", ",
              w, ")");
  std::vector<double> coords(static_cast<std::size_t>(3 * h * w));
  for (int64_t i = 0; i < h; ++i) {
    for (int64_t j = 0; j < w; ++j) {
      const auto k = static_cast<std::size_t>(i * w + j), hw = static_cast<std::size_t>(h * w);
      coords[k] = unit_coord(j, w);
      coords[hw + k] = unit_coord(i, h);
      coords[2 * hw + k] = 1.0;
    }
  }
  const Array table = Array::from_vector(coords, Shape{3, h * w}).astype(theta.dtype()).to(theta.device());
  return reshape(matmul(theta, Variable(table)), {theta.shape()[0], 2, h, w});
}

Variable spatial_transformer_sampler(const Variable& x, const Variable& grid) {
  constexpr const char* op = "spatial_transformer_sampler";
  detail::check_floating(op, x);
  detail::check_not_null(op, grid, "grid");
  RENSA_CHECK(grid.dtype() == x.dtype(), DtypeError, op, ": grid ", grid.dtype(), " ", grid.shape(),
              " must have the dtype of x ", x.dtype(), " ", x.shape());
  RENSA_CHECK(x.ndim() == 4 && grid.ndim() == 4 && grid.shape()[1] == 2 && grid.shape()[0] == x.shape()[0],
              ShapeError, op, ": x must be (N, C, H, W) and grid (N, 2, OH, OW), got x ", x.shape(), " and grid ",
              grid.shape());
  detail::check_same_device(op, {&x, &grid});
  const int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  const int64_t oh = grid.shape()[2], ow = grid.shape()[3];
  // Pixel coordinates in the image padded by one pixel of zeros, clamped to that border.
  auto pixel = [&](int64_t channel, int64_t extent) {
    const Variable g = get_item(grid, {Slice{}, channel});
    return clip(add(mul(add(g, 1.0), static_cast<double>(extent - 1) / 2.0), 1.0), 0.0,
                static_cast<double>(extent + 1));
  };
  const Variable u = pixel(0, w), v = pixel(1, h);
  const std::vector<double> us = u.array().to(Device::cpu()).to_vector<double>();
  const std::vector<double> vs = v.array().to(Device::cpu()).to_vector<double>();
  const int64_t hp = h + 2, wp = w + 2, points = n * oh * ow;
  std::vector<double> u0(us.size()), v0(vs.size());
  for (std::size_t k = 0; k < us.size(); ++k) {
    u0[k] = std::clamp(std::floor(us[k]), 0.0, static_cast<double>(w));
    v0[k] = std::clamp(std::floor(vs[k]), 0.0, static_cast<double>(h));
  }
  // Flat positions, in the padded planes of all images, of each point's four neighbours.
  std::array<std::vector<int64_t>, 4> at;
  for (int64_t k = 0; k < points; ++k) {
    const auto uk = static_cast<int64_t>(u0[static_cast<std::size_t>(k)]);
    const auto vk = static_cast<int64_t>(v0[static_cast<std::size_t>(k)]);
    const int64_t base = (k / (oh * ow)) * hp * wp;
    at[0].push_back(base + vk * wp + uk);
    at[1].push_back(base + vk * wp + uk + 1);
    at[2].push_back(base + (vk + 1) * wp + uk);
    at[3].push_back(base + (vk + 1) * wp + uk + 1);
  }
  auto constant = [&](const std::vector<double>& values, double plus) {
    std::vector<double> shifted(values.size());
    for (std::size_t k = 0; k < values.size(); ++k) shifted[k] = values[k] + plus;
    return Variable(Array::from_vector(shifted, Shape{n, oh, ow}).astype(x.dtype()).to(x.device()));
  };
  const Variable du0 = sub(u, constant(u0, 0.0)), du1 = sub(constant(u0, 1.0), u);
  const Variable dv0 = sub(v, constant(v0, 0.0)), dv1 = sub(constant(v0, 1.0), v);
  const std::array<Variable, 4> weights{mul(du1, dv1), mul(du0, dv1), mul(du1, dv0), mul(du0, dv0)};

  const Variable padded = pad(x, {{0, 0}, {0, 0}, {1, 1}, {1, 1}});
  const Variable planes = reshape(transpose(padded, {1, 0, 2, 3}), {c, n * hp * wp});
  Variable y;
  for (std::size_t q = 0; q < 4; ++q) {
    const Variable g = detail::take(op, planes, Array::from_vector(at[q], x.device()), 1);
    const Variable pixels = transpose(reshape(g, {c, n, oh, ow}), {1, 0, 2, 3});
    const Variable term = mul(pixels, expand_dims(weights[q], 1));
    y = y.is_null() ? term : add(y, term);
  }
  return y;
}

}  // namespace rensa::functions
