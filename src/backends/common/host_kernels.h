#pragma once
// Host kernels simple enough that every host backend shares one definition.
#include "rensa/core/backend.h"
#include "rensa/core/random.h"

namespace rensa::backends::host {
/// y[i] = x[i, t[i]]; IndexError when t[i] is outside [0, C).
void select_item(const Array& x, const Array& t, const Array& y);
/// gx = 0; gx[i, t[i]] = gy[i].
void scatter_item(const Array& gy, const Array& t, const Array& gx);
/// IndexError unless every element of idx (1-d int64, host memory) lies in [0, n); `op` names the
/// kernel (take, scatter_add).
void check_indices(const Array& idx, int64_t n, const char* op);
}  // namespace rensa::backends::host
