#pragma once
// Where the image being read on this thread will end up: a MultithreadIterator worker that stacks
// batches offers row b of the batch buffer while it reads example b, and a transform that makes a new
// image of exactly that shape and dtype may write its result there, so the worker's copy into the
// batch is skipped (the image never exists twice). Only a hint: the worker still copies whatever the
// dataset finally returns unless it is that row, so a transform that takes the row and a later one
// that makes another array are both correct.

#include <utility>

#include "rensa/core/array.h"

namespace rensa::datasets::detail {

inline Array& offered_batch_row() {
  thread_local Array row;
  return row;
}

/// Offers `row` (a contiguous host view of the batch) to the transforms for the life of the scope.
class BatchRowOffer {
 public:
  explicit BatchRowOffer(Array row) { offered_batch_row() = std::move(row); }
  ~BatchRowOffer() { offered_batch_row() = Array(); }
  BatchRowOffer(const BatchRowOffer&) = delete;
  BatchRowOffer& operator=(const BatchRowOffer&) = delete;
};

/// The offered row when it has this shape, dtype and device (taking it: the offer is used once),
/// else a new array. Its contents are undefined either way.
inline Array image_output(const Shape& shape, Dtype dtype, Device device) {
  Array& row = offered_batch_row();
  if (!row.is_null() && row.shape() == shape && row.dtype() == dtype && row.device() == device) {
    return std::exchange(row, Array());
  }
  return Array::empty(shape, dtype, device);
}

}  // namespace rensa::datasets::detail
