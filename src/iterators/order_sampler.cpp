// ShuffleOrderSampler: a permutation keyed by (seed, epoch).

#include "rensa/iterators/order_sampler.h"

#include "rensa/core/random.h"
#include "rensa/datasets/sub_dataset.h"

namespace rensa::iterators {

std::vector<int64_t> ShuffleOrderSampler::operator()(const std::vector<int64_t>& current_order,
                                                     int64_t current_position, int64_t epoch, int64_t size) const {
  (void)current_order;
  (void)current_position;
  // One generator stream per epoch: seed and epoch mixed, so epochs differ.
  Generator gen(::rensa::detail::splitmix64(seed_ + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(epoch)));
  return datasets::permutation(size, gen);
}

}  // namespace rensa::iterators
