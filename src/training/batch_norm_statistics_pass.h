#pragma once
// The pass behind training::recompute_batch_norm_statistics, shared with rensa::mn's multi-node one.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "rensa/iterators/iterator.h"
#include "rensa/links/link.h"
#include "rensa/links/normalization.h"

namespace rensa::training::detail {

/// Every links::BatchNormalization of `model` (itself included), in namedlinks() order.
std::vector<links::BatchNormalization*> batch_normalizations(Link& model);

/// Asked once per step with whether this process has a batch to use; the pass ends when it returns
/// false. rensa::mn's keeps the ranks in step (and throws when they disagree).
using BatchGate = std::function<bool(bool has_batch)>;

/// recompute_batch_norm_statistics with `gate` (null: the pass ends with this process's batches).
int64_t recompute_pass(Link& model, iterators::Iterator& it, std::size_t column, const BatchGate& gate);

}  // namespace rensa::training::detail
