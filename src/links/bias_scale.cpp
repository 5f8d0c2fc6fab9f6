// Bias and Scale: parameters broadcast from an axis on, or the same operations on two inputs.
#include "rensa/links/bias_scale.h"

#include "rensa/core/config.h"
#include "rensa/core/error.h"
#include "rensa/functions/basic_math.h"

namespace rensa::links {
namespace F = rensa::functions;

namespace {

Array filled(const Shape& shape, double value, Device device) {
  const Dtype dtype = get_dtype();
  RENSA_CHECK(is_floating(dtype), DtypeError, "Bias/Scale: parameters need a floating dtype, the config's is ", dtype);
  return Array::full(shape, value, dtype, device);
}

}  // namespace

Bias::Bias(int64_t axis, std::optional<Shape> shape) : axis_(axis) {
  if (shape) b_ = add_param("b", filled(*shape, 0.0, device_));
}

Variable Bias::forward(const Variable& x) {
  RENSA_CHECK(!b_.is_null(), ValueError, "Bias: without a parameter b the link takes two inputs (x, b)");
  return F::bias(x, b_, axis_);
}

Variable Bias::forward(const std::vector<Variable>& xs) {
  if (xs.size() == 1) return forward(xs[0]);
  RENSA_CHECK(xs.size() == 2 && b_.is_null(), ValueError, "Bias: takes one input with a parameter b, two without; got ",
              xs.size());
  return F::bias(xs[0], xs[1], axis_);
}

Scale::Scale(int64_t axis, std::optional<Shape> W_shape, bool bias_term, const std::optional<Shape>& bias_shape)
    : axis_(axis) {
  if (W_shape) W_ = add_param("W", filled(*W_shape, 1.0, device_));
  if (bias_term) {
    RENSA_CHECK(W_shape || bias_shape, ValueError,
                "Scale: bias_shape must be given when W is an input and bias_term is set");
    bias_ = std::make_shared<Bias>(axis, W_shape ? W_shape : bias_shape);
    add_link("bias", bias_);
  }
}

Variable Scale::forward(const Variable& x) {
  RENSA_CHECK(!W_.is_null(), ValueError, "Scale: without a parameter W the link takes two inputs (x, W)");
  const Variable z = F::scale(x, W_, axis_);
  return bias_ ? (*bias_)(z) : z;
}

Variable Scale::forward(const std::vector<Variable>& xs) {
  if (xs.size() == 1) return forward(xs[0]);
  RENSA_CHECK(xs.size() == 2 && W_.is_null(), ValueError,
              "Scale: takes one input with a parameter W, two without; got ", xs.size());
  const Variable z = F::scale(xs[0], xs[1], axis_);
  return bias_ ? (*bias_)(z) : z;
}

}  // namespace rensa::links
