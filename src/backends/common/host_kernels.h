#pragma once
// Host kernels simple enough that every host backend shares one definition.
#include "rensa/core/backend.h"
#include "rensa/core/random.h"

namespace rensa::backends::host {
/// y[i] = x[i, t[i]]; IndexError when t[i] is outside [0, C).
void select_item(const Array& x, const Array& t, const Array& y);
/// gx = 0; gx[i, t[i]] = gy[i].
void scatter_item(const Array& gy, const Array& t, const Array& gx);
}  // namespace rensa::backends::host
