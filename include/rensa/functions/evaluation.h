#pragma once
/// \file
/// Metrics (not differentiable).

#include "rensa/core/array.h"
#include "rensa/core/variable.h"

namespace rensa::functions {

/// Fraction of rows of y (N, C) whose argmax equals t (N,); entries of t equal to `ignore_label`
/// are skipped. A 0-d array of y's dtype.
Variable accuracy(const Variable& y, const Array& t, int64_t ignore_label = -1);

}  // namespace rensa::functions
