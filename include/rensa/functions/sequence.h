#pragma once
/// \file
/// Batches of variable-length sequences (Chainer's pad_sequence and transpose_sequence). A
/// sequence is an array (L, ...) whose first axis is time; the sequences of a batch share the
/// trailing shape, the dtype and the device. An empty list (pad_sequence), a null sequence or a
/// 0-d one throws ValueError or ShapeError naming the function; mixed dtypes DtypeError, mixed
/// devices DeviceError.

#include <cstdint>
#include <optional>
#include <vector>

#include "rensa/core/variable.h"

namespace rensa::functions {

/// Stacks sequences xs[i] (L_i, ...) into one array (B, L, ...), L = `length` or else the longest
/// L_i, filling the rest with `padding`. ShapeError when the trailing shapes differ or `length` is
/// shorter than a sequence. The gradient of xs[i] is gy[i, :L_i] (double backprop works).
Variable pad_sequence(const std::vector<Variable>& xs, std::optional<int64_t> length = std::nullopt,
                      double padding = 0.0);

/// Transposes a batch of sequences sorted by non-increasing length into the list of time steps:
/// output t (B_t, ...) holds xs[i][t] of the B_t sequences longer than t; there are L_0 outputs
/// (none for an empty list). ValueError when the lengths increase somewhere (they must be sorted
/// longest first), ShapeError when the trailing shapes differ. Applied to the outputs it gives the
/// sequences back, which is its gradient.
std::vector<Variable> transpose_sequence(const std::vector<Variable>& xs);

}  // namespace rensa::functions
