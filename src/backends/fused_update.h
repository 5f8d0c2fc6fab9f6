#pragma once
// Fused optimizer steps: one pass over a parameter, its gradient and its state arrays, with the
// step's arithmetic written once, by the optimizer, beside its hyperparameters. The step cannot be
// a kernel-table entry (a function pointer per element would not vectorize, and a table entry per
// algorithm would put every optimizer's math in the core), so each backend provides a loop
// template and this header picks the device's. A new backend adds its loop here.
#include <cstddef>
#include <string_view>

#include "rensa/core/array.h"
#include "rensa/core/dtype.h"
#include "rensa/core/error.h"
#include "src/backends/cpu/fused_update.h"
#include "src/backends/reference/fused_update.h"

namespace rensa::backends {

/// Runs one step of `Step` in place over every element. `Step` is the optimizer's step, a class
/// template over the compute type C (compute_t of the parameter's element type: float for 16-bit
/// floats) that reads like the loop body it is:
///
///     template <class C> struct MomentumSGDStep {
///       static constexpr std::size_t n_state = 1;     // v
///       C lr, momentum;                               // converted once, before the loop
///       MomentumSGDStep(double lr, double momentum) : lr(C(lr)), momentum(C(momentum)) {}
///       template <class T> void operator()(T& p, const T& g, T& v) const { ... }
///     };
///
/// constructed from `args` and called on the elements of param, grad and the n_state arrays of
/// `state` (all of param's shape, dtype and device), computing in C and rounding once per stored
/// value. `op` names the caller in errors: DtypeError for a dtype that is not floating,
/// NotImplementedError for a device without a loop.
template <template <class> class Step, class... Args>
void fused_update(const Array& param, const Array& grad, const Array* state, std::string_view op,
                  const Args&... args) {
  dispatch_floating(param.dtype(), op, [&]<class T>() {
    using S = Step<compute_t<T>>;
    const S step(args...);
    switch (param.device().type) {
      case DeviceType::cpu:
        return cpu::fused_update<T, S::n_state>(param, grad, state, step);
      case DeviceType::reference:
        return reference::fused_update<T, S::n_state>(param, grad, state, step);
      default:
        break;
    }
    RENSA_THROW(NotImplementedError, op, ": no fused update loop for device ", param.device());
  });
}

}  // namespace rensa::backends
