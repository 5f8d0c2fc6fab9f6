#include "rensa/extensions/fail_on_non_number.h"

#include <cmath>

#include "rensa/core/dtype.h"
#include "rensa/core/error.h"
#include "rensa/training/trainer.h"

namespace rensa::extensions {
namespace {
// Debug mode checks every function's outputs and gradients, so it finds the first NaN's function.
constexpr const char* kHowToFind =
    " (to find the function that first produced a NaN, run with debug mode on: "
    "rensa::global_config().debug = true, or using_config(\"debug\", true))";

// The first non-finite element of a floating array, as a double; nullopt when all are finite.
std::optional<double> first_non_finite(const Array& a) {
  if (a.is_null() || !is_floating(a.dtype()) || a.size() == 0) return std::nullopt;
  const Array host = (a.device().is_host() ? a : a.to(Device::cpu())).contiguous();
  return dispatch_floating(host.dtype(), "FailOnNonNumber", [&]<class T>() -> std::optional<double> {
    const T* p = host.data<T>();
    const int64_t n = host.size();
    for (int64_t i = 0; i < n; ++i) {
      const auto v = static_cast<double>(static_cast<compute_t<T>>(p[i]));
      if (!std::isfinite(v)) return v;
    }
    return std::nullopt;
  });
}

}  // namespace

void FailOnNonNumber::operator()(training::Trainer& trainer) {
  for (const auto& [name, optimizer] : trainer.updater().get_all_optimizers()) {
    if (optimizer == nullptr || optimizer->target() == nullptr) continue;
    for (const auto& [path, param] : optimizer->target()->namedparams(false)) {
      if (auto bad = first_non_finite(param.array())) {
        RENSA_THROW(Error, "FailOnNonNumber: parameter '", path, "' of optimizer '", name, "' holds ", *bad,
                    " at iteration ", trainer.updater().iteration(), "; training diverged", kHowToFind);
      }
      if (!check_grad_) continue;
      const Variable grad = param.grad();
      if (grad.is_null()) continue;
      if (auto bad = first_non_finite(grad.array())) {
        RENSA_THROW(Error, "FailOnNonNumber: the gradient of parameter '", path, "' of optimizer '", name, "' holds ",
                    *bad, " at iteration ", trainer.updater().iteration(), "; training diverged", kHowToFind);
      }
    }
  }
}

}  // namespace rensa::extensions
