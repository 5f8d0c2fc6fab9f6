#pragma once
/// \file
/// MultithreadIterator: worker threads read the examples of the next batches while the model
/// computes (Chainer's MultithreadIterator).

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "rensa/datasets/dataset.h"
#include "rensa/iterators/iterator.h"
#include "rensa/iterators/serial_iterator.h"

namespace rensa::iterators {

/// Options of MultithreadIterator.
struct MultithreadIteratorOptions {
  /// As SerialIteratorOptions::repeat.
  bool repeat = true;
  /// As SerialIteratorOptions::shuffle.
  bool shuffle = true;
  /// As SerialIteratorOptions::seed.
  std::optional<uint64_t> seed{};
  /// As SerialIteratorOptions::order_sampler.
  std::shared_ptr<const OrderSampler> order_sampler{};
  /// Worker threads (>= 1). They run kernels single-threaded, leaving the cores to the model.
  int n_threads = 1;
  /// Batches fetched ahead of the one returned (>= 1).
  int n_prefetch = 1;
  /// Let the workers also stack each batch, so next_arrays() returns at once: each example is
  /// written into its row of a reusable batch buffer as soon as it is read (and the image
  /// transforms that make a new image, such as Normalize and Scale, write it there directly), with
  /// the bytes concat_examples would give.
  bool stack = false;
  /// Seconds (> 0) after which a batch that is still being read is reported on stderr, with its
  /// first dataset index, and again every as many seconds (Chainer's dataset_timeout warns too;
  /// the wait goes on). 0: never.
  double dataset_timeout = 0.0;
};

/// Gives exactly the batches (and epoch, epoch_detail, is_new_epoch, serialized state) of a
/// SerialIterator with the same dataset, batch size, repeat, shuffle and seed, but reads them on
/// `n_threads` worker threads, `n_prefetch` batches ahead. The workers start at the first next()
/// and stop in the destructor (which waits for get_example calls in progress). An exception
/// thrown by the dataset is rethrown, as the same type with "MultithreadIterator: reading dataset
/// index I: " before its message, by the next()/next_arrays() that returns its batch (the
/// iterator has then moved past that batch, as SerialIterator does).
///
/// This is rensa's counterpart of Chainer's MultiprocessIterator: threads, not processes (a C++
/// reader holds no interpreter lock; forking after MPI_Init is unsafe under Open MPI; the decoders
/// are thread-safe). Memory in flight is at most n_prefetch + 1 batches. With `stack`, batches go
/// into at most n_prefetch + 3 reusable buffer sets (the ones in flight, the one the step uses and
/// one an evaluation or a graph may still hold); a set is reused only once nothing else holds its
/// memory, so a batch (or a view of it) that a program keeps is never overwritten, and a new set is
/// made instead. The column layout is learned from the first batches, which concat_examples
/// stacks; a batch whose examples do not fit the layout is stacked by concat_examples too (with its
/// errors). Each example's random
/// draws are keyed by (epoch, index) (datasets/example_key.h), so the batches are the same
/// whatever n_threads is. Not itself thread-safe: call
/// it from one thread.
class MultithreadIterator final : public Iterator {
 public:
  /// ValueError as SerialIterator, and when n_threads or n_prefetch < 1.
  MultithreadIterator(datasets::DatasetPtr dataset, int64_t batch_size, const MultithreadIteratorOptions& options = {});
  ~MultithreadIterator() override;
  MultithreadIterator(const MultithreadIterator&) = delete;
  MultithreadIterator& operator=(const MultithreadIterator&) = delete;

  std::optional<Batch> next() override;
  /// The next batch stacked; prepared by the workers when options.stack is set.
  std::optional<std::vector<Array>> next_arrays() override;
  /// options.stack.
  bool stacks_ahead() const override;
  int64_t epoch() const override;
  double epoch_detail() const override;
  std::optional<double> previous_epoch_detail() const override;
  bool is_new_epoch() const override;
  /// Examples per batch (the last batch of a non-repeating epoch may hold fewer).
  int64_t batch_size() const override;
  /// Drops the batches fetched ahead and restarts from the beginning.
  void reset() override;
  /// Saves the state of the last returned batch; loading drops the batches fetched ahead.
  void serialize(serializers::Serializer& s) override;

  /// Position of the next example within the current epoch's order (of the batches returned, not
  /// of those fetched ahead).
  int64_t current_position() const;
  /// Whether the iterator goes on past the end of an epoch (options.repeat).
  bool repeat() const;
  /// Whether each epoch's order is shuffled (options.shuffle).
  bool shuffle() const;
  /// The shuffling seed in use (the drawn one when none was given).
  uint64_t seed() const;
  /// The dataset iterated over.
  const datasets::DatasetPtr& dataset() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rensa::iterators
