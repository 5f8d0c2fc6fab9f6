#pragma once
/// \file
/// TupleDataset: a dataset whose examples are the rows of a few arrays (Chainer's TupleDataset).

#include <cstdint>
#include <vector>

#include "rensa/core/array.h"
#include "rensa/datasets/dataset.h"

namespace rensa::datasets {

/// Example `i` is {columns[0][i], columns[1][i], ...}: views into the columns (no copy), so a
/// column of shape (N, 28, 28) gives examples of shape (28, 28) and a column of shape (N,) gives
/// 0-d examples. Reading is thread-safe (the columns are never modified by the dataset).
class TupleDataset final : public Dataset {
 public:
  /// `columns` must be non-empty and non-null (ValueError), have at least one axis, and agree on
  /// their length along axis 0 (ShapeError naming every shape otherwise).
  explicit TupleDataset(std::vector<Array> columns);
  int64_t size() const override { return size_; }
  /// Views of row `i` of every column; IndexError unless 0 <= i < size().
  Example get_example(int64_t i) const override;
  /// The columns, as given.
  const std::vector<Array>& columns() const { return columns_; }

 private:
  std::vector<Array> columns_;
  int64_t size_ = 0;
};

}  // namespace rensa::datasets
