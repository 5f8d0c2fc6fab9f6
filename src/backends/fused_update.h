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

/// Runs one step in place over every element: `make.template operator()<T>()` (T the parameter's
/// element type) returns the step, called as step(T& param, const T& grad, T& state...) with the
/// S arrays of `state`. All arrays have param's shape, dtype and device (floating; 16-bit floats
/// are stored as such and computed as compute_t<T> by the step). `op` names the caller in errors:
/// DtypeError for a dtype that is not floating, NotImplementedError for a device without a loop.
template <std::size_t S, class Make>
void fused_update(const Array& param, const Array& grad, const Array* state, const Make& make, std::string_view op) {
  dispatch_floating(param.dtype(), op, [&]<class T>() {
    const auto step = make.template operator()<T>();
    switch (param.device().type) {
      case DeviceType::cpu:
        return cpu::fused_update<T, S>(param, grad, state, step);
      case DeviceType::reference:
        return reference::fused_update<T, S>(param, grad, state, step);
      default:
        break;
    }
    RENSA_THROW(NotImplementedError, op, ": no fused update loop for device ", param.device());
  });
}

}  // namespace rensa::backends
