// What the recurrent links share: building a Linear whose in_size may be lazy, per-child seeds,
// input checks that name the link, and saving a state (h or c) in snapshots.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

#include "rensa/core/variable.h"
#include "rensa/links/linear.h"
#include "rensa/links/recurrent_state.h"
#include "rensa/serializers/serializer.h"

namespace rensa::links::detail {

/// A Linear with in_size inferred at the first call when `in_size` is negative.
inline Linear make_linear(int64_t in_size, int64_t out_size, const LinearOptions& options) {
  if (in_size < 0) return Linear(out_size, options);
  return Linear(in_size, out_size, options);
}

/// The seed of child `k` of a link seeded with `seed` (each child has its own generator, so they
/// must not share one seed).
inline std::optional<uint64_t> child_seed(std::optional<uint64_t> seed, uint64_t k) {
  return seed ? std::optional<uint64_t>(*seed + k) : std::nullopt;
}

/// ValueError unless out_size > 0 and in_size >= -1 (-1: lazy); DtypeError unless the Config dtype
/// (the parameters') is floating. Called before the children are made, so errors name the link.
void check_sizes(const char* link, int64_t in_size, int64_t out_size);

/// ValueError for a null x; ShapeError unless x is (B, ...) with prod(...) == in_size (in_size
/// negative: not checked).
void check_input(const char* link, const Variable& x, int64_t in_size, const char* what = "x");

/// ShapeError unless `state` is (rows, units), naming the link, the state and x.
void check_state(const char* link, const char* name, const Variable& state, int64_t rows, int64_t units,
                 const Variable& x);

/// The product of x's axes after the first.
int64_t row_size(const Variable& x);

}  // namespace rensa::links::detail
