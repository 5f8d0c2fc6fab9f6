#pragma once
/// \file
/// Exponentials, logarithms and roots beside exp, log and sqrt (basic_math.h): Chainer's expm1,
/// log1p, log2, log10 and rsqrt, elementwise. x must be floating (DtypeError naming the function,
/// dtype and shape) and non-null (ValueError). Outside the domain the value is NaN and at its edge
/// infinite, as NumPy (log1p(-1) = -inf, log2(0) = -inf, rsqrt(0) = inf). All support double backprop.

#include "rensa/core/variable.h"

namespace rensa::functions {

/// exp(x) - 1, accurate for small x.
Variable expm1(const Variable& x);
/// log(1 + x), accurate for small x; the gradient is 1 / (1 + x).
Variable log1p(const Variable& x);
/// Base-2 logarithm; the gradient is 1 / (x log 2).
Variable log2(const Variable& x);
/// Base-10 logarithm; the gradient is 1 / (x log 10).
Variable log10(const Variable& x);
/// 1 / sqrt(x); the gradient is -y^3 / 2.
Variable rsqrt(const Variable& x);

}  // namespace rensa::functions
