// expm1, log1p, log2, log10, rsqrt: the unary kernel's ops with their derivatives.
#include "rensa/functions/exponential.h"

#include <cmath>

#include "src/functions/elementwise.h"

namespace rensa::functions {

Variable expm1(const Variable& x) {
  return detail::elementwise("expm1", UnaryOp::expm1, x, [](const Variable& v, const Variable&) { return exp(v); });
}

Variable log1p(const Variable& x) {
  return detail::elementwise("log1p", UnaryOp::log1p, x,
                             [](const Variable& v, const Variable&) { return rdiv(add(v, 1.0), 1.0); });
}

Variable log2(const Variable& x) {
  return detail::elementwise("log2", UnaryOp::log2, x,
                             [](const Variable& v, const Variable&) { return rdiv(v, 1.0 / std::log(2.0)); });
}

Variable log10(const Variable& x) {
  return detail::elementwise("log10", UnaryOp::log10, x,
                             [](const Variable& v, const Variable&) { return rdiv(v, 1.0 / std::log(10.0)); });
}

Variable rsqrt(const Variable& x) {
  return detail::elementwise(
      "rsqrt", UnaryOp::rsqrt, x, [](const Variable&, const Variable& y) { return mul(pow(y, 3.0), -0.5); }, true);
}

}  // namespace rensa::functions
