#pragma once
// The shape of most math functions: y = op(x) elementwise through the unary kernel, with a backward
// gy * dy/dx written with differentiable functions, so it can be differentiated again.
#include <vector>

#include "rensa/functions/basic_math.h"
#include "rensa/functions/reduction.h"
#include "src/functions/common.h"

namespace rensa::functions::detail {

/// y = op(x) for floating x; `deriv(x, y)` gives dy/dx as a Variable (y is the retained output, a
/// null Variable unless `uses_output`).
template <class D>
Variable elementwise(const char* name, UnaryOp op, const Variable& x, D deriv, bool uses_output = false) {
  check_floating(name, x);
  return record1(
      name, {x}, unary(name, op, x.array()),
      [x, deriv, uses_output](const BackwardContext& ctx) {
        return std::vector<Variable>{mul(ctx.grad_output(), deriv(x, uses_output ? ctx.output() : Variable()))};
      },
      uses_output);
}

/// The gradient of a broadcast operand: g summed back to `shape`.
inline Variable grad_to_shape(const Variable& g, const Shape& shape) {
  return g.shape() == shape ? g : functions::sum_to(g, shape);
}

}  // namespace rensa::functions::detail
