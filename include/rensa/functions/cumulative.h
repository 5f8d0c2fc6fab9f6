#pragma once
/// \file
/// Cumulative sums and products along an axis (Chainer's cumsum and cumprod; prod is in
/// reduction.h). x must be floating (DtypeError naming the function, dtype and shape) and non-null
/// (ValueError); an axis outside [-ndim, ndim) throws IndexError. With no axis, x is flattened first,
/// as NumPy. Both support double backprop.

#include <optional>

#include "rensa/core/variable.h"

namespace rensa::functions {

/// y[..., i, ...] = x[..., 0, ...] + ... + x[..., i, ...] along `axis`; x's shape (1-d of x's size
/// without an axis). The gradient is the reversed cumulative sum of gy.
Variable cumsum(const Variable& x, std::optional<int64_t> axis = std::nullopt);
/// y[..., i, ...] = x[..., 0, ...] * ... * x[..., i, ...] along `axis`. The gradient is exact where x
/// has zeros (no division by x), as Chainer's.
Variable cumprod(const Variable& x, std::optional<int64_t> axis = std::nullopt);

}  // namespace rensa::functions
