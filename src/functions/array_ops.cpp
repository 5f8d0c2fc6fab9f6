// Shape manipulation: views where possible, copies where not.
#include "rensa/functions/array_ops.h"

#include "rensa/functions/basic_math.h"
#include "rensa/functions/reduction.h"
#include "src/functions/common.h"

namespace rensa::functions {
namespace {
using Grads = std::vector<Variable>;
}  // namespace

Variable reshape(const Variable& x, const Shape& shape) {
  RENSA_CHECK(!x.is_null(), ValueError, "reshape: x is null");
  Array y = x.array().reshape(shape);
  return record1("reshape", {x}, std::move(y), [in = x.shape()](const BackwardContext& ctx) {
    return Grads{reshape(ctx.grad_output(), in)};
  });
}

Variable broadcast_to(const Variable& x, const Shape& shape) {
  RENSA_CHECK(!x.is_null(), ValueError, "broadcast_to: x is null");
  Array y = x.array().broadcast_to(shape);
  return record1("broadcast_to", {x}, std::move(y), [in = x.shape()](const BackwardContext& ctx) {
    return Grads{sum_to(ctx.grad_output(), in)};
  });
}

Variable squeeze(const Variable& x, const Shape& axes) {
  RENSA_CHECK(!x.is_null(), ValueError, "squeeze: x is null");
  Array y = axes.empty() ? x.array().squeeze() : x.array().squeeze(axes);
  return record1("squeeze", {x}, std::move(y), [in = x.shape()](const BackwardContext& ctx) {
    return Grads{reshape(ctx.grad_output(), in)};
  });
}

}  // namespace rensa::functions
