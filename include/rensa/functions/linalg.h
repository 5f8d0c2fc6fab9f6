#pragma once
/// \file
/// Matrix products.

#include "rensa/core/variable.h"

namespace rensa::functions {

/// Matrix product with NumPy's matmul rules: 1-d operands are promoted to matrices and the added
/// axis removed, batch axes broadcast. `transa`/`transb` transpose the last two axes first
/// (without copying). ShapeError names both shapes when the inner extents differ.
Variable matmul(const Variable& a, const Variable& b, bool transa = false, bool transb = false);
/// y = x W^T + b for x (N, in) (further axes of x are flattened into `in`), W (out, in), optional
/// b (out,). Pass a null Variable for no bias.
Variable linear(const Variable& x, const Variable& W, const Variable& b = Variable());

}  // namespace rensa::functions
