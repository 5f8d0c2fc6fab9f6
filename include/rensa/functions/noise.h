#pragma once
/// \file
/// Stochastic regularization.

#include "rensa/core/random.h"
#include "rensa/core/variable.h"

namespace rensa::functions {

/// In training mode (Config::train) zeroes each element with probability `ratio` and scales the
/// rest by 1 / (1 - ratio); identity in test mode. ValueError unless 0 <= ratio < 1. Draws from
/// `gen`, or the thread's default generator.
Variable dropout(const Variable& x, double ratio = 0.5, Generator* gen = nullptr);

}  // namespace rensa::functions
