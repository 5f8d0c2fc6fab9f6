#pragma once
/// \file
/// Order samplers: what decides the order of the examples in each epoch (Chainer's OrderSampler and
/// ShuffleOrderSampler), for SerialIterator and MultithreadIterator.
#include <cstdint>
#include <memory>
#include <vector>

namespace rensa::iterators {

/// Gives the order of each epoch. Called by the iterator when it starts and at every epoch boundary;
/// the result must be a permutation of 0 .. size - 1 (the iterator checks: ValueError naming the
/// sampler otherwise). Must be safe to call from the iterator's thread only.
class OrderSampler {
 public:
  virtual ~OrderSampler() = default;
  /// The order of epoch `epoch` (0 for the first). `current_order` is the previous epoch's order
  /// (empty at the start) and `current_position` where the iterator stood in it (Chainer's
  /// arguments). Depending only on the arguments (not on hidden state) makes a resumed run repeat
  /// the orders of an uninterrupted one.
  virtual std::vector<int64_t> operator()(const std::vector<int64_t>& current_order, int64_t current_position,
                                          int64_t epoch, int64_t size) const = 0;
};

/// A uniformly random order per epoch, a function of (seed, epoch) only (Chainer's
/// ShuffleOrderSampler draws from a RandomState instead).
class ShuffleOrderSampler final : public OrderSampler {
 public:
  /// Orders drawn from a stream keyed by `seed` and the epoch.
  explicit ShuffleOrderSampler(uint64_t seed = 0) : seed_(seed) {}
  std::vector<int64_t> operator()(const std::vector<int64_t>& current_order, int64_t current_position, int64_t epoch,
                                  int64_t size) const override;
  /// The seed the orders are drawn with.
  uint64_t seed() const { return seed_; }

 private:
  uint64_t seed_;
};

}  // namespace rensa::iterators
