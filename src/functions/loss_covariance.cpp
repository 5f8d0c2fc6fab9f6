// Covariance penalties over the batch: cross_covariance (between two representations) and decov
// (between the units of one). Composites of differentiable functions.
#include <string_view>
#include <vector>

#include "rensa/functions/basic_math.h"
#include "rensa/functions/linalg.h"
#include "rensa/functions/loss.h"
#include "rensa/functions/reduction.h"
#include "src/functions/common.h"

namespace rensa::functions {
namespace {

Variable centered(const Variable& x) { return sub(x, mean(x, Shape{0}, true)); }

// (a - mean a)^T (b - mean b) / N for a (N, K), b (N, L).
Variable batch_covariance(const Variable& a, const Variable& b) {
  const int64_t n = a.shape()[0];
  return mul(matmul(centered(a), centered(b), true, false), n > 0 ? 1.0 / static_cast<double>(n) : 0.0);
}

bool half_squared_sum(const char* op, std::string_view reduce) {
  return detail::parse_choice(op, "reduce", reduce, {"half_squared_sum", "no"}) == 0;
}

}  // namespace

Variable cross_covariance(const Variable& y, const Variable& z, std::string_view reduce) {
  const char* op = "cross_covariance";
  detail::check_floating(op, y, "y");
  detail::check_floating(op, z, "z");
  detail::check_same_dtype_device(op, {&y, &z});
  RENSA_CHECK(y.ndim() == 2 && z.ndim() == 2 && y.shape()[0] == z.shape()[0], ShapeError, op,
              ": y and z must be (N, K) and (N, L), got ", y.shape(), " and ", z.shape());
  const bool half = half_squared_sum(op, reduce);
  const Variable cov = batch_covariance(y, z);
  return half ? mul(sum(square(cov)), 0.5) : cov;
}

Variable decov(const Variable& h, std::string_view reduce) {
  const char* op = "decov";
  detail::check_floating(op, h, "h");
  RENSA_CHECK(h.ndim() == 2, ShapeError, op, ": h must be (N, K), got ", h.shape());
  const bool half = half_squared_sum(op, reduce);
  const int64_t k = h.shape()[1];
  std::vector<double> off(static_cast<std::size_t>(k * k), 1.0);
  for (int64_t i = 0; i < k; ++i) off[static_cast<std::size_t>(i * k + i)] = 0.0;
  const Variable mask(Array::from_vector(off, {k, k}).astype(h.dtype()).to(h.device()));
  const Variable cov = mul(batch_covariance(h, h), mask);
  return half ? mul(sum(square(cov)), 0.5) : cov;
}

}  // namespace rensa::functions
