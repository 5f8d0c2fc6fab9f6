// The Iterator base class's default stacking of batches.

#include "rensa/iterators/iterator.h"

#include "rensa/datasets/concat_examples.h"

namespace rensa::iterators {

std::optional<std::vector<Array>> Iterator::next_arrays() {
  std::optional<Batch> batch = next();
  if (!batch) return std::nullopt;
  if (batch->empty()) return std::vector<Array>{};  // an empty dataset's batch: nothing to stack
  return datasets::concat_examples(*batch);
}

}  // namespace rensa::iterators
