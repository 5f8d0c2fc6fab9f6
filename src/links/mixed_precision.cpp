// The links' side of the mixed-precision policy: the cast to the compute dtype.
#include "rensa/links/mixed_precision.h"

#include "rensa/core/config.h"
#include "rensa/functions/array_ops.h"

namespace rensa::links {

Variable detail::cast_variable(const Variable& x, Dtype dtype) {
  return x.dtype() == dtype ? x : functions::cast(x, dtype);
}

Variable mixed_cast(const Variable& x) {
  const std::optional<Dtype> compute = mixed_compute_dtype();
  if (!compute || x.is_null() || !is_floating(x.dtype())) return x;
  return detail::cast_variable(x, *compute);
}

}  // namespace rensa::links
