#pragma once
/// \file
/// Subsets of datasets (Chainer's SubDataset, split_dataset, split_dataset_random and
/// get_cross_validation_datasets) and the deterministic permutation they and the iterators use.

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "rensa/core/random.h"
#include "rensa/datasets/dataset.h"

namespace rensa::datasets {

/// A random permutation of 0..n-1 (Fisher-Yates driven by Philox): the same generator state gives
/// the same permutation on every machine. Advances `gen` by `n` numbers. ValueError when n < 0.
std::vector<int64_t> permutation(int64_t n, Generator& gen);

/// The examples start..finish-1 of `base`, optionally through an index map: example `i` is
/// base[order[start + i]] when `order` is given, base[start + i] otherwise.
class SubDataset final : public Dataset {
 public:
  /// ValueError unless 0 <= start <= finish <= base->size(), or when `order` is given and its
  /// length differs from base->size(); IndexError when an entry of `order` is out of range.
  SubDataset(DatasetPtr base, int64_t start, int64_t finish, std::optional<std::vector<int64_t>> order = std::nullopt);
  int64_t size() const override { return finish_ - start_; }
  /// IndexError (naming the dataset and its size) unless 0 <= i < size().
  Example get_example(int64_t i) const override;
  /// The base's encode_subset of the corresponding base indices.
  std::optional<std::string> encode_subset(const std::vector<int64_t>& indices) const override;
  /// The index of example `i` in the base dataset.
  int64_t base_index(int64_t i) const;
  /// The dataset the examples come from.
  const DatasetPtr& base() const { return base_; }

 private:
  DatasetPtr base_;
  int64_t start_, finish_;
  std::vector<int64_t> order_;  // empty: identity
};

/// Splits `dataset` into its first `first_size` examples and the rest (through `order` when
/// given, as SubDataset). ValueError unless 0 <= first_size <= dataset->size().
std::pair<DatasetPtr, DatasetPtr> split_dataset(const DatasetPtr& dataset, int64_t first_size,
                                                std::optional<std::vector<int64_t>> order = std::nullopt);

/// Splits `dataset` at random: a permutation drawn from Generator(seed) decides which examples
/// go to the first part (`first_size` of them) and which to the second.
std::pair<DatasetPtr, DatasetPtr> split_dataset_random(const DatasetPtr& dataset, int64_t first_size, uint64_t seed);

/// The `n_folds` (train, test) pairs of k-fold cross validation: fold k tests on its share of the
/// examples (in `order` when given) and trains on the rest. The first size() % n_folds folds
/// test on one example more. ValueError unless 1 <= n_folds <= dataset->size() (n_folds >= 2).
std::vector<std::pair<DatasetPtr, DatasetPtr>> get_cross_validation_datasets(
    const DatasetPtr& dataset, int64_t n_folds, std::optional<std::vector<int64_t>> order = std::nullopt);

/// get_cross_validation_datasets over a random order drawn from Generator(seed).
std::vector<std::pair<DatasetPtr, DatasetPtr>> get_cross_validation_datasets_random(const DatasetPtr& dataset,
                                                                                    int64_t n_folds, uint64_t seed);

}  // namespace rensa::datasets
