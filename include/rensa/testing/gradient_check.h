#pragma once
/// \file
/// Numerical gradient checks for differentiable functions (rensa::testing). Installed with rensa so
/// users can check their own functions.

#include <cstdint>
#include <functional>
#include <vector>

#include "rensa/core/array.h"
#include "rensa/core/variable.h"

namespace rensa::testing {

/// A function under test: variables in, variables out.
using TestFunction = std::function<std::vector<Variable>(const std::vector<Variable>&)>;

/// Options of check_backward and check_double_backward.
struct CheckOptions {
  /// Step of the central difference along the random direction.
  double eps = 1e-3;
  /// Absolute tolerance: a check passes when |numerical - analytic| <= atol + rtol * |numerical|.
  double atol = 1e-5;
  /// Relative tolerance (see atol).
  double rtol = 1e-4;
  /// Seed of the random direction (and of grad_outputs when none are given).
  uint64_t seed = 0;
  /// no_grads[i] true: input i is treated as a constant (not perturbed, its gradient not checked).
  std::vector<bool> no_grads = {};
};

/// Checks `f`'s backward against central differences. Floating inputs are perturbed along one
/// random unit direction d (all inputs together, their memory layout kept, so non-contiguous inputs
/// stay non-contiguous); the directional derivative of sum_j <f(x)_j, gy_j> must match
/// sum_i <grad_i, d_i> within atol + rtol * |numerical|. Integer inputs must receive no gradient.
/// Gradients must have their inputs' shapes and dtypes. Throws rensa::AssertionError describing the
/// mismatch. grad_outputs empty: random normal ones. f always runs with graph recording on and its
/// checked inputs requiring grad, so it may itself call rensa::grad (a gradient as a function).
void check_backward(const TestFunction& f, const std::vector<Array>& inputs,
                    const std::vector<Array>& grad_outputs = {}, const CheckOptions& options = {});

/// Convenience overload for a function of one variable with one output.
void check_backward(const std::function<Variable(const Variable&)>& f, const Array& x,
                    const Array& grad_output = Array(), const CheckOptions& options = {});

/// Checks second-order gradients: the first-order gradient map (x, gy) -> grad_x <f(x), gy>,
/// computed with enable_double_backprop, is itself checked with check_backward, its output gradient
/// being `grad_grad_inputs` (one per floating input; random when empty).
void check_double_backward(const TestFunction& f, const std::vector<Array>& inputs,
                           const std::vector<Array>& grad_outputs, const std::vector<Array>& grad_grad_inputs = {},
                           const CheckOptions& options = {});

/// A view with the same values as `a` whose memory is not contiguous (every other element of a
/// larger buffer along the last axis). 0-d and size-0 arrays are returned as copies.
Array make_noncontiguous(const Array& a);

}  // namespace rensa::testing
