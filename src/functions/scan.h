#pragma once
// Differentiable scans along one axis (the scan kernel, in either direction), from which cumsum,
// cumprod and prod's gradient are built.
#include "rensa/core/variable.h"

namespace rensa::functions::detail {

/// Inclusive cumulative sum along `axis` (normalized), from the last index down when `reverse`.
Variable scan_sum(const Variable& x, int64_t axis, bool reverse);
/// Inclusive cumulative product along `axis`, from the last index down when `reverse`.
Variable scan_prod(const Variable& x, int64_t axis, bool reverse);
/// out[i] = b[i] + a[i] * out[prev] along `axis` (prev: the index before i in the scan's order).
Variable scan_linear(const Variable& b, const Variable& a, int64_t axis, bool reverse);
/// out[i] = x[prev] along `axis`, `fill` at the first index in the scan's order.
Variable shift_prev(const Variable& x, int64_t axis, bool reverse, double fill);

}  // namespace rensa::functions::detail
