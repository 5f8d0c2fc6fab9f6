#pragma once
/// \file
/// Elementwise arithmetic with NumPy broadcasting. Operands must share dtype (DtypeError) and
/// device (DeviceError); shapes that do not broadcast throw ShapeError naming both shapes.
/// Gradients of broadcast operands are summed back to their shapes.

#include <vector>

#include "rensa/core/variable.h"

namespace rensa::functions {

/// a + b elementwise.
Variable add(const Variable& a, const Variable& b);
/// a - b elementwise.
Variable sub(const Variable& a, const Variable& b);
/// a * b elementwise.
Variable mul(const Variable& a, const Variable& b);
/// a / b elementwise; integer dtypes divide with floor (NumPy's //), as the kernels do.
Variable div(const Variable& a, const Variable& b);
/// -x elementwise.
Variable neg(const Variable& x);
/// a ** b elementwise (both differentiable; the gradient for b needs a > 0).
Variable pow(const Variable& a, const Variable& b);
/// x ** exponent for a constant exponent.
Variable pow(const Variable& x, double exponent);
/// e ** x elementwise.
Variable exp(const Variable& x);
/// Natural logarithm elementwise.
Variable log(const Variable& x);
/// Square root elementwise.
Variable sqrt(const Variable& x);
/// x * x elementwise.
Variable square(const Variable& x);
/// |x|; the gradient at 0 is 0.
Variable abs(const Variable& x);
/// Elementwise maximum; where a == b the gradient goes to a.
Variable maximum(const Variable& a, const Variable& b);
/// Elementwise minimum; where a == b the gradient goes to a.
Variable minimum(const Variable& a, const Variable& b);
/// min(max(x, lo), hi) (Chainer's x_min, x_max; pass -/+infinity for Chainer's None). ValueError
/// unless lo < hi (lo == hi too, as Chainer). The gradient is 1 inside [lo, hi], 0 outside.
Variable clip(const Variable& x, double lo, double hi);

/// x + value (value converted to x's dtype).
Variable add(const Variable& x, double value);
/// x * value.
Variable mul(const Variable& x, double value);
/// value - x.
Variable rsub(const Variable& x, double value);
/// value / x.
Variable rdiv(const Variable& x, double value);

// ---- Chainer's other arithmetic (math family) ----

/// Chainer's name for abs.
Variable absolute(const Variable& x);
/// (x1 - x2)^2 elementwise; x1 and x2 of one floating dtype (DtypeError) and one shape (ShapeError
/// naming both, no broadcasting, as Chainer).
Variable squared_difference(const Variable& x1, const Variable& x2);
/// The inputs unchanged, as new variables whose gradients pass through (Chainer's identity).
/// ValueError for a null input.
std::vector<Variable> identity(const std::vector<Variable>& xs);
/// `x` unchanged, as a new variable whose gradient passes through. ValueError for a null input.
Variable identity(const Variable& x);
/// p * x + (1 - p) * y elementwise; p, x and y of one floating dtype (DtypeError), one device and one
/// shape (ShapeError naming the three, no broadcasting, as Chainer). All three are differentiated.
Variable linear_interpolate(const Variable& p, const Variable& x, const Variable& y);
/// x + y with y's axes matched to x's axes axis, axis + 1, ... (Caffe's broadcasting, as Chainer's
/// bias): y (3, 40) against x (100, 3, 40, 5, 6) with axis 1 adds y[j, k] to x[:, j, k, :, :].
/// ShapeError unless x.shape()[axis : axis + y.ndim()] == y.shape(), naming both shapes and the
/// axis; IndexError for an axis outside [0, x.ndim()].
Variable bias(const Variable& x, const Variable& y, int64_t axis = 1);
/// x * y with bias's broadcasting and errors (Chainer's scale).
Variable scale(const Variable& x, const Variable& y, int64_t axis = 1);

}  // namespace rensa::functions

namespace rensa {
/// add(a, b).
Variable operator+(const Variable& a, const Variable& b);
/// sub(a, b).
Variable operator-(const Variable& a, const Variable& b);
/// mul(a, b).
Variable operator*(const Variable& a, const Variable& b);
/// div(a, b).
Variable operator/(const Variable& a, const Variable& b);
/// neg(x).
Variable operator-(const Variable& x);
/// a + b, b converted to a's dtype.
Variable operator+(const Variable& a, double b);
/// b + a, a converted to b's dtype.
Variable operator+(double a, const Variable& b);
/// a - b, b converted to a's dtype.
Variable operator-(const Variable& a, double b);
/// a - b, a converted to b's dtype.
Variable operator-(double a, const Variable& b);
/// a * b, b converted to a's dtype.
Variable operator*(const Variable& a, double b);
/// b * a, a converted to b's dtype.
Variable operator*(double a, const Variable& b);
/// a / b, b converted to a's dtype.
Variable operator/(const Variable& a, double b);
/// a / b, a converted to b's dtype.
Variable operator/(double a, const Variable& b);
}  // namespace rensa
