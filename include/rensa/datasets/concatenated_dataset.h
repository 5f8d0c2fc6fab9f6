#pragma once
/// \file
/// ConcatenatedDataset: several datasets read as one (Chainer's ConcatenatedDataset).

#include <cstdint>
#include <vector>

#include "rensa/datasets/dataset.h"

namespace rensa::datasets {

/// The examples of datasets[0], then of datasets[1], ... Empty datasets are allowed.
class ConcatenatedDataset final : public Dataset {
 public:
  /// ValueError when a dataset pointer is null.
  explicit ConcatenatedDataset(std::vector<DatasetPtr> datasets);
  int64_t size() const override { return offsets_.back(); }
  /// IndexError (naming the dataset and its size) unless 0 <= i < size().
  Example get_example(int64_t i) const override;
  /// The datasets, in order.
  const std::vector<DatasetPtr>& datasets() const { return datasets_; }

 private:
  std::vector<DatasetPtr> datasets_;
  std::vector<int64_t> offsets_;  // offsets_[k]: index of the first example of datasets_[k]; back(): size
};

}  // namespace rensa::datasets
