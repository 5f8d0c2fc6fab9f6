#pragma once
/// \file
/// Splitting a dataset among the ranks of a communicator (ChainerMN's scatter_dataset and
/// scatter_index).

#include <cstdint>
#include <vector>

#include "rensa/datasets/dataset.h"
#include "rensa/mn/communicator.h"

namespace rensa::mn {

/// Options of scatter_dataset and scatter_index.
struct ScatterOptions {
  /// The rank whose dataset size and seed decide the split.
  int root = 0;
  /// Split a random permutation of the indices (drawn from `seed`) instead of 0..n-1.
  bool shuffle = false;
  /// Seed of the permutation (the root's is used on every rank).
  uint64_t seed = 0;
  /// Every rank gets ceil(n / size) examples, so every rank runs the same number of iterations per
  /// epoch: the shards overlap by wrapping around to the start of the order for the
  /// ceil(n / size) * size - n examples missing. When false, the shards are a strict partition:
  /// rank r gets [n * r / size, n * (r + 1) / size) of the order (sizes differ by at most one), as
  /// an exact evaluation needs.
  bool force_equal_length = true;
};

/// The indices (into a dataset of `n` examples) of this rank's shard, in shard order. Collective:
/// the root's `n`, shuffle, seed and force_equal_length are used on every rank (they are
/// broadcast); ValueError on every rank when `n` differs between ranks (naming the sizes), when n < 0
/// or when the root is not a rank.
std::vector<int64_t> scatter_index(int64_t n, Communicator comm, const ScatterOptions& options = {});

/// This rank's shard of `dataset` (see scatter_index) as a view of it: no example is copied or sent
/// when every rank passes the same dataset (loaded from the same files, say). Non-root ranks may
/// pass a null dataset (ChainerMN's pattern): a file-list dataset (one whose encode_subset gives
/// bytes: ImageDataset, LabeledImageDataset, LabeledZippedImageDataset, or a SubDataset of one)
/// then sends each of them its shard's file names and options, and they read the files themselves;
/// for other datasets the root sends the examples of the shard, stacked by column (every example
/// must have the same number of columns, and each column the same shape and dtype across
/// examples; ValueError otherwise), and they get a TupleDataset. Wrap the shard in its
/// TransformDataset after scattering: transforms are code, which does not travel. Collective.
datasets::DatasetPtr scatter_dataset(const datasets::DatasetPtr& dataset, Communicator comm,
                                     const ScatterOptions& options = {});

}  // namespace rensa::mn
