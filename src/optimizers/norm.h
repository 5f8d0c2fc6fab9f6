#pragma once
// The L2 norm of a whole array, summed in float64: LARS, LAMB and GradientLARS scale each
// parameter's step by a ratio of such norms.
#include "rensa/core/array.h"

namespace rensa::optimizers::detail {

/// sqrt(sum of squares) of every element of `a` (any floating dtype; 16-bit values are squared in
/// float32, where their squares do not overflow). `op` names the caller in errors.
double l2_norm(const Array& a, const char* op);

}  // namespace rensa::optimizers::detail
