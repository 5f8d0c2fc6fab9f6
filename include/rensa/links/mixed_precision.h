#pragma once
/// \file
/// What links do under a mixed-precision policy (Config::dtype mixed16 or mixed_bf16,
/// docs/mixed_precision.md): parameters stay float32; the compute links cast their inputs and
/// parameters to the 16-bit compute dtype; normalization computes in float32.

#include <string>

#include "rensa/core/variable.h"

namespace rensa::links {

/// `x` cast to the config's mixed compute dtype (mixed_compute_dtype()) when a mixed policy is in
/// force and `x` is floating; `x` itself otherwise (a plain dtype, an integer array, a null
/// variable). Differentiable: the gradient comes back in x's dtype. For user links that should
/// compute in 16-bit under the policy, as Linear does. The first cast of a process whose 16-bit
/// products are emulated (mixed_policy_notice) prints that notice to std::cerr, on rank 0 only under
/// mpirun.
Variable mixed_cast(const Variable& x);

/// One line saying that products in `compute` (bfloat16 or float16) are emulated on this CPU and what
/// that costs, or "" when they run natively (bfloat16 with AVX512_BF16 or AMX-BF16; see
/// native_bf16()).
std::string mixed_policy_notice(Dtype compute);

/// Runs `f` on float32 when `x` is 16-bit and `param_dtype` is float32 (a normalization link's
/// float32 parameters and statistics under a mixed policy), returning the result in x's dtype;
/// runs `f` on `x` as it is otherwise.
template <class F>
Variable in_param_dtype(const Variable& x, Dtype param_dtype, F&& f);

namespace detail {
Variable cast_variable(const Variable& x, Dtype dtype);
}  // namespace detail

template <class F>
Variable in_param_dtype(const Variable& x, Dtype param_dtype, F&& f) {
  const bool half = !x.is_null() && is_half(x.dtype());
  if (!half || param_dtype != Dtype::float32) return f(x);
  return detail::cast_variable(f(detail::cast_variable(x, Dtype::float32)), x.dtype());
}

}  // namespace rensa::links
