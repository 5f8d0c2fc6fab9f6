#pragma once
/// \file
/// Dataset iterators: batches of examples, epochs, and serializable positions.

#include <cstdint>
#include <optional>
#include <vector>

#include "rensa/datasets/dataset.h"
#include "rensa/serializers/serializer.h"

namespace rensa::iterators {

/// A batch as the iterator returns it: one Example per dataset index, in the epoch's order.
using Batch = std::vector<datasets::Example>;

/// Iterates a dataset in batches.
class Iterator {
 public:
  virtual ~Iterator() = default;
  /// The next batch; std::nullopt when a non-repeating iterator has finished its epoch.
  virtual std::optional<Batch> next() = 0;
  /// The next batch stacked by datasets::concat_examples into one host array per column (no
  /// arrays for an empty batch); std::nullopt when finished. Iterators may prepare the arrays ahead (MultithreadIterator).
  virtual std::optional<std::vector<Array>> next_arrays();
  /// Whether next_arrays() hands over batches stacked ahead (by worker threads), so that the
  /// training loop should call it instead of next() and a converter (MultithreadIterator with
  /// `stack`). False by default.
  virtual bool stacks_ahead() const { return false; }
  /// Completed epochs.
  virtual int64_t epoch() const = 0;
  /// Epochs as a real number (epoch + fraction of the current one).
  virtual double epoch_detail() const = 0;
  /// epoch_detail() as it was before the last next(); std::nullopt before the first next()
  /// (interval triggers use it to see a boundary crossed). Iterators that do not track it return
  /// std::nullopt.
  virtual std::optional<double> previous_epoch_detail() const { return std::nullopt; }
  /// True right after the batch that completed an epoch.
  virtual bool is_new_epoch() const = 0;
  /// Examples per batch (the last batch of a non-repeating epoch may hold fewer).
  virtual int64_t batch_size() const = 0;
  /// Restarts from the beginning (same order as a fresh iterator with the same seed).
  virtual void reset() = 0;
  /// Saves/loads the position, order and random state.
  virtual void serialize(serializers::Serializer& s) = 0;
};

}  // namespace rensa::iterators
