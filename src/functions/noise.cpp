// Stochastic regularization.
#include "rensa/functions/noise.h"

#include "rensa/core/config.h"
#include "rensa/functions/basic_math.h"
#include "src/functions/common.h"

namespace rensa::functions {

Variable dropout(const Variable& x, double ratio, Generator* gen) {
  constexpr const char* op = "dropout";
  detail::check_floating(op, x);
  RENSA_CHECK(ratio >= 0.0 && ratio < 1.0, ValueError, op, ": ratio must be in [0, 1), got ", ratio);
  if (!config().train || ratio == 0.0) return x;

  // 16-bit inputs draw in float32 so the kept fraction is not skewed by coarse rounding of u.
  const Dtype draw_dtype = x.dtype() == Dtype::float64 ? Dtype::float64 : Dtype::float32;
  Array u = random::uniform(x.shape(), 0.0, 1.0, draw_dtype, x.device(), gen);
  // mask = (u >= ratio) / (1 - ratio): a constant, so the backward is gy * mask.
  Array keep = detail::binary(op, BinaryOp::ge, u, detail::scalar_like(ratio, u));
  Array mask = detail::unary(op, UnaryOp::affine, keep, 1.0 / (1.0 - ratio), 0.0);
  if (mask.dtype() != x.dtype()) mask = mask.astype(x.dtype());

  Array y = detail::binary(op, BinaryOp::mul, x.array(), mask);
  return record1(op, {x}, std::move(y), [mask](const BackwardContext& ctx) {
    return std::vector<Variable>{mul(ctx.grad_output(), Variable(mask))};
  });
}

}  // namespace rensa::functions
