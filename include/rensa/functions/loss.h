#pragma once
/// \file
/// Loss functions.

#include <string_view>

#include "rensa/core/array.h"
#include "rensa/core/variable.h"

namespace rensa::functions {

/// Cross entropy of softmax(x) along axis 1 against integer labels t. x (N, C) or (N, C, d...),
/// t (N,) or (N, d...) int32/int64. Labels equal to `ignore_label` contribute nothing. reduce
/// "mean" averages over the non-ignored labels (0 when all are ignored); "no" returns the per-label
/// loss shaped like t. Bad labels throw IndexError; a bad reduce throws ValueError.
Variable softmax_cross_entropy(const Variable& x, const Array& t, int64_t ignore_label = -1,
                               std::string_view reduce = "mean");
/// Binary cross entropy of sigmoid(x) against t in {0, 1} (same shape as x, int32/int64);
/// t == -1 entries are ignored. reduce "mean" averages over the non-ignored entries; "no" keeps
/// the shape.
Variable sigmoid_cross_entropy(const Variable& x, const Array& t, std::string_view reduce = "mean");
/// mean((a - b)^2) over all elements; shapes must be equal.
Variable mean_squared_error(const Variable& a, const Variable& b);

}  // namespace rensa::functions
