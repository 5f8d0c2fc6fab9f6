#pragma once
/// \file
/// concat_examples: turns a batch of examples into one array per column (Chainer's
/// concat_examples), the default converter of the training loop.

#include <vector>

#include "rensa/core/array.h"
#include "rensa/core/device.h"
#include "rensa/datasets/dataset.h"

namespace rensa::datasets {

/// Stacks column c of every example into a new contiguous array of shape (B, ...) on `device`
/// (B = batch.size()); 0-d columns such as labels give shape (B,). The result owns its memory
/// (copies; no aliasing with the examples). Throws ValueError when the batch is empty or the
/// examples have different numbers of columns, ShapeError naming the example index and both shapes
/// when a column's shape differs from example 0's, and DtypeError likewise for dtypes.
std::vector<Array> concat_examples(const std::vector<Example>& batch, Device device = Device::cpu());

/// concat_examples for examples of different sizes (Chainer's `padding`): column c becomes
/// (B, ...) with, on each axis, the largest extent among the examples; each example fills the
/// leading corner of its row and `padding[c]` the rest. Errors as above, except that extents may
/// differ: ShapeError when a column's ndim differs between examples, ValueError when `padding` has
/// neither 1 value (used for every column) nor one per column.
std::vector<Array> concat_examples(const std::vector<Example>& batch, Device device,
                                   const std::vector<double>& padding);
/// Padding with one value for every column.
std::vector<Array> concat_examples(const std::vector<Example>& batch, Device device, double padding);

}  // namespace rensa::datasets
