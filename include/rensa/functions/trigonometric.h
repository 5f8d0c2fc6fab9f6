#pragma once
/// \file
/// Trigonometric and hyperbolic functions, elementwise (Chainer's sin, cos, tan, arcsin, arccos,
/// arctan, arctan2, sinh, cosh, arctanh). Every input must be floating (DtypeError naming the
/// function, dtype and shape) and non-null (ValueError). Outside a function's domain (arcsin and
/// arccos of |x| > 1, arctanh of |x| > 1) the value is NaN, as NumPy; the gradient is infinite at the
/// domain's ends. All support double backprop.

#include "rensa/core/variable.h"

namespace rensa::functions {

/// Sine elementwise; the gradient is cos(x).
Variable sin(const Variable& x);
/// Cosine elementwise; the gradient is -sin(x).
Variable cos(const Variable& x);
/// The gradient is 1 / cos(x)^2.
Variable tan(const Variable& x);
/// In [-pi/2, pi/2]; the gradient is 1 / sqrt(1 - x^2).
Variable arcsin(const Variable& x);
/// In [0, pi]; the gradient is -1 / sqrt(1 - x^2).
Variable arccos(const Variable& x);
/// In (-pi/2, pi/2); the gradient is 1 / (1 + x^2).
Variable arctan(const Variable& x);
/// The angle of the point (x2, x1) in [-pi, pi], elementwise with NumPy broadcasting (ShapeError
/// when x1 and x2 do not broadcast; both of one floating dtype, else DtypeError, and one device,
/// else DeviceError). Gradients x2 / (x1^2 + x2^2) and -x1 / (x1^2 + x2^2), summed back to each
/// operand's shape.
Variable arctan2(const Variable& x1, const Variable& x2);
/// Hyperbolic sine; the gradient is cosh(x).
Variable sinh(const Variable& x);
/// Hyperbolic cosine; the gradient is sinh(x).
Variable cosh(const Variable& x);
/// The gradient is 1 / (1 - x^2).
Variable arctanh(const Variable& x);

}  // namespace rensa::functions
