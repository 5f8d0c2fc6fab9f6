#pragma once
// Host kernels simple enough that every host backend shares one definition.
#include <type_traits>
#include <vector>

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

/// Runs f(acc) on the n contiguous elements at p as compute_t<T>: in place when T is its own
/// compute type, else in a float copy written back (rounded once) afterwards, so that sums of
/// 16-bit floats do not stall.
template <class T, class F>
void with_compute_buffer(T* p, int64_t n, F&& f) {
  using C = compute_t<T>;
  if constexpr (std::is_same_v<T, C>) {
    f(p);
  } else {
    std::vector<C> acc(p, p + n);
    f(acc.data());
    for (int64_t k = 0; k < n; ++k) p[k] = T(acc[static_cast<std::size_t>(k)]);
  }
}
}  // namespace rensa::backends::host
