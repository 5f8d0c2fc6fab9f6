#pragma once
/// \file
/// SerialIterator: batches read on the calling thread (Chainer's SerialIterator).

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "rensa/datasets/dataset.h"
#include "rensa/iterators/iterator.h"
#include "rensa/iterators/order_sampler.h"

namespace rensa::iterators {

/// Options of SerialIterator.
struct SerialIteratorOptions {
  /// Loop over the dataset forever; when false, stop after one epoch (the last batch may be short).
  bool repeat = true;
  /// Visit the examples in a new random order every epoch; in index order when false.
  bool shuffle = true;
  /// Seed of the shuffling generator (Philox: the same orders on every machine). When unset and
  /// shuffling, a seed is drawn from the calling thread's default generator (so rensa::seed() makes
  /// runs repeat); without shuffling it is 0 and the default generator is left alone.
  std::optional<uint64_t> seed{};
  /// Decides each epoch's order instead of `shuffle` and `seed` (Chainer's order_sampler), e.g.
  /// ShuffleOrderSampler, or your own (order_sampler.h).
  std::shared_ptr<const OrderSampler> order_sampler{};
};

namespace detail {
/// The position of an iterator (Chainer's IteratorState plus the shuffling generator's position).
struct IteratorState {
  int64_t current_position = 0;
  int64_t epoch = 0;
  bool is_new_epoch = false;
  /// The order of the current epoch; null when not shuffling. Shared: states are copied cheaply.
  std::shared_ptr<const std::vector<int64_t>> order;
  /// Numbers the shuffling generator has drawn (up to and including `order`).
  uint64_t rng_offset = 0;
};

/// The iteration logic shared by the iterators: the dataset, batch size, options and seed.
struct IterationPlan {
  datasets::DatasetPtr dataset;
  int64_t batch_size = 0;
  bool repeat = true;
  bool shuffle = true;
  uint64_t seed = 0;
  /// When set, gives the orders (and shuffle is true: the order is kept and saved).
  std::shared_ptr<const OrderSampler> order_sampler;
  /// The iterator's name in errors.
  const char* name = "";

  /// Checks the arguments (`who` names the iterator in errors) and resolves an unset seed.
  IterationPlan(const char* who, datasets::DatasetPtr dataset, int64_t batch_size, bool repeat, bool shuffle,
                std::optional<uint64_t> seed, std::shared_ptr<const OrderSampler> order_sampler = nullptr);
  /// The order of `epoch` after `previous` (at position `position`), from the sampler or the
  /// shuffling generator (whose position `rng_offset` advances).
  std::shared_ptr<const std::vector<int64_t>> next_order(const std::vector<int64_t>& previous, int64_t position,
                                                         int64_t epoch, uint64_t& rng_offset) const;
  /// The state of a fresh iterator (first order drawn from the generator's start).
  IteratorState initial_state() const;
  /// Chainer's iterator state machine: the indices of the next batch and the state after it;
  /// std::nullopt (state unchanged) when a non-repeating iterator has finished.
  /// When `epochs` is given it receives the epoch each index belongs to (a batch may cross a
  /// boundary), which keys the examples' random draws (datasets/example_key.h).
  std::optional<std::vector<int64_t>> advance(IteratorState& state, std::vector<int64_t>* epochs = nullptr) const;
  /// Examples per epoch.
  int64_t epoch_size(const IteratorState& state) const;
  double epoch_detail(const IteratorState& state) const;
  /// Saves or loads `state` and `previous_epoch_detail` (keys current_position, epoch,
  /// is_new_epoch, order, previous_epoch_detail, seed, rng_offset). A loaded order must be a
  /// permutation of the dataset's indices and the position within it (ValueError otherwise).
  void serialize(const char* who, serializers::Serializer& s, IteratorState& state, double& previous_epoch_detail);
};
}  // namespace detail

/// Iterates a dataset in batches of `batch_size` examples read on the calling thread, with
/// Chainer's semantics: with repeat, the batch that ends an epoch is filled up from the start of
/// the next epoch (in the next epoch's order) and every batch is full; without repeat, the last
/// batch of the epoch may be short and next() then returns std::nullopt until reset().
class SerialIterator final : public Iterator {
 public:
  /// ValueError when batch_size < 1, the dataset is null, or a repeating iterator gets an empty
  /// dataset.
  SerialIterator(datasets::DatasetPtr dataset, int64_t batch_size, SerialIteratorOptions options = {});

  std::optional<Batch> next() override;
  int64_t epoch() const override { return state_.epoch; }
  double epoch_detail() const override { return plan_.epoch_detail(state_); }
  std::optional<double> previous_epoch_detail() const override;
  bool is_new_epoch() const override { return state_.is_new_epoch; }
  /// Examples per batch (the last batch of a non-repeating epoch may hold fewer).
  int64_t batch_size() const override { return plan_.batch_size; }
  void reset() override;
  void serialize(serializers::Serializer& s) override;

  /// Position of the next example within the current epoch's order.
  int64_t current_position() const { return state_.current_position; }
  /// The current epoch's order (empty when not shuffling).
  std::vector<int64_t> order() const;
  /// Whether the iterator goes on past the end of an epoch (options.repeat).
  bool repeat() const { return plan_.repeat; }
  /// Whether each epoch's order is shuffled (options.shuffle).
  bool shuffle() const { return plan_.shuffle; }
  /// The shuffling seed in use (the drawn one when none was given).
  uint64_t seed() const { return plan_.seed; }
  /// The dataset iterated over.
  const datasets::DatasetPtr& dataset() const { return plan_.dataset; }

 private:
  detail::IterationPlan plan_;
  detail::IteratorState state_;
  double previous_epoch_detail_ = -1.0;  // -1: none yet (as Chainer stores it)
};

}  // namespace rensa::iterators
