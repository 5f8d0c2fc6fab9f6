#pragma once
/// \file
/// Rounding, sign and remainder, elementwise. floor, ceil, fix and sign are not differentiable: as
/// in Chainer, they return a new variable with no creator, so the graph stops there. They keep x's
/// dtype; for integer x, floor, ceil and fix are copies. x must be non-null (ValueError).

#include "rensa/core/variable.h"

namespace rensa::functions {

/// The largest whole number <= x. Not differentiable.
Variable floor(const Variable& x);
/// The smallest whole number >= x. Not differentiable.
Variable ceil(const Variable& x);
/// x rounded toward zero. Not differentiable.
Variable fix(const Variable& x);
/// -1, 0 or 1 by the sign of x (NaN stays NaN). DtypeError for bool. Not differentiable.
Variable sign(const Variable& x);
/// The remainder x - divisor * fix(x / divisor), of x's sign (C's and NumPy's fmod), with NumPy
/// broadcasting (ShapeError naming both shapes). Both of one floating dtype (DtypeError) and device
/// (DeviceError). Gradients gy for x and -fix(x / divisor) gy for divisor, summed back to the shapes.
Variable fmod(const Variable& x, const Variable& divisor);

}  // namespace rensa::functions
