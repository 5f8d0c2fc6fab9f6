#pragma once
/// \file
/// Special functions, elementwise, with SciPy's definitions (which Chainer calls): the error
/// function family (erf, erfc, erfcx, erfinv, erfcinv), the normal distribution (ndtr, ndtri,
/// log_ndtr) and the gamma family (lgamma, digamma, polygamma, zeta). x must be floating (DtypeError
/// naming the function, dtype and shape) and non-null (ValueError). Outside a function's domain the
/// value is NaN and at a pole infinite, as SciPy; the functions do not throw for them. All support
/// double backprop.

#include <cstdint>

#include "rensa/core/array.h"
#include "rensa/core/variable.h"

namespace rensa::functions {

/// The error function; the gradient is 2 / sqrt(pi) exp(-x^2).
Variable erf(const Variable& x);
/// 1 - erf(x), accurate where erf(x) is near 1.
Variable erfc(const Variable& x);
/// The scaled complementary error function exp(x^2) erfc(x), finite for large x (about
/// 1 / (x sqrt(pi))); inf for x below about -26.6, where it overflows.
Variable erfcx(const Variable& x);
/// The inverse of erf: defined on [-1, 1], +-inf at +-1, NaN outside.
Variable erfinv(const Variable& x);
/// The inverse of erfc: defined on [0, 2], +inf at 0, -inf at 2, NaN outside.
Variable erfcinv(const Variable& x);
/// The standard normal cumulative distribution function.
Variable ndtr(const Variable& x);
/// The inverse of ndtr: defined on [0, 1], -inf at 0, +inf at 1, NaN outside.
Variable ndtri(const Variable& x);
/// log(ndtr(x)), accurate in both tails (about -x^2 / 2 for very negative x).
Variable log_ndtr(const Variable& x);
/// log|gamma(x)|; inf at the poles (x a non-positive integer). The gradient is digamma(x).
Variable lgamma(const Variable& x);
/// The logarithmic derivative of gamma; -inf at +0, +inf at -0, NaN at negative integers. The
/// gradient is polygamma(1, x).
Variable digamma(const Variable& x);
/// The n-th derivative of digamma, with NumPy broadcasting of n against x (ShapeError when they do
/// not broadcast). n is a constant array of an integer dtype (DtypeError otherwise, naming n's dtype
/// and shape) with values >= 0 (ValueError naming the smallest); only x is differentiated, with the
/// gradient polygamma(n + 1, x) summed back to x's shape.
Variable polygamma(const Array& n, const Variable& x);
/// polygamma with one order n for every element (ValueError when n < 0).
Variable polygamma(int64_t n, const Variable& x);
/// The Hurwitz zeta function, sum over k >= 0 of (k + q)^-x, with NumPy broadcasting of x against q
/// (ShapeError when they do not broadcast). x is a constant array of a floating or integer dtype
/// (DtypeError for bool, naming its shape) and only q is differentiated (as Chainer), with the
/// gradient -x zeta(x + 1, q). NaN for x < 1 and inf at x = 1; inf where q is a non-positive
/// integer; for other q < 0 only whole x are defined (NaN otherwise), as SciPy.
Variable zeta(const Array& x, const Variable& q);
/// zeta with one exponent x for every element.
Variable zeta(double x, const Variable& q);

}  // namespace rensa::functions
