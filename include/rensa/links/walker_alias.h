#pragma once
/// \file
/// WalkerAlias: Walker's alias method (Chainer's chainer.utils.WalkerAlias), the sampler of
/// NegativeSampling and BlackOut.

#include <cstdint>
#include <vector>

#include "rensa/core/array.h"
#include "rensa/core/random.h"

namespace rensa::links {

/// Draws ids in [0, n) with probabilities proportional to `probs` in O(1) per draw. The tables are
/// built as Chainer builds them (float32 probabilities normalized by their sum, sorted by
/// (probability, id)), so threshold() and values() equal Chainer's. The uniform numbers come from
/// rensa's generator, so the drawn ids differ from Chainer's for the same seed.
class WalkerAlias {
 public:
  /// ValueError for an empty list or a negative, non-finite or all-zero probability (Chainer
  /// divides by the sum unchecked).
  explicit WalkerAlias(const std::vector<double>& probs);

  /// int32 ids of the given shape, on the cpu, drawn from `gen`.
  Array sample(const Shape& shape, Generator& gen) const;
  /// As above, from the thread's default generator.
  Array sample(const Shape& shape) const { return sample(shape, default_generator()); }

  /// Chainer's `threshold` (n,) and `values` (2 n,): draw u in [0, n), i = floor(u); the id is
  /// values[2 i + (threshold[i] < u - i)].
  const std::vector<float>& threshold() const { return threshold_; }
  /// See threshold().
  const std::vector<int32_t>& values() const { return values_; }

 private:
  std::vector<float> threshold_;
  std::vector<int32_t> values_;
};

}  // namespace rensa::links
