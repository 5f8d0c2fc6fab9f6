// AdaDelta: hyperparameters and the update math.
#include "rensa/optimizers/ada_delta.h"

#include <cmath>

#include "src/optimizers/fused_rule.h"

namespace rensa::optimizers {

AdaDelta::AdaDelta(double rho, double eps)
    : rho_(declare_hyperparam("rho", rho)), eps_(declare_hyperparam("eps", eps)) {
  optimizer_name_ = "AdaDelta";
}

std::unique_ptr<UpdateRule> AdaDelta::create_update_rule() {
  return std::make_unique<detail::FusedRule>(
      optimizer_name_, std::vector<std::string>{"msg", "msdx"}, 2, nullptr,
      [this](const Array& param, const Array& grad, const Array* state, int64_t) {
        backends::fused_update<2>(
            param, grad, state,
            [rho = *rho_, eps = *eps_]<class T>() {
              using C = compute_t<T>;
              return [rho = C(rho), one_m_rho = C(1.0 - rho), eps = C(eps)](T& p, const T& g, T& msg, T& msdx) {
                const C gc = C(g);
                const C msgn = rho * C(msg) + one_m_rho * gc * gc;
                const C dx = std::sqrt((C(msdx) + eps) / (msgn + eps)) * gc;
                msg = T(msgn);
                msdx = T(rho * C(msdx) + one_m_rho * dx * dx);
                p = T(C(p) - dx);
              };
            },
            optimizer_name_);
      });
}

}  // namespace rensa::optimizers
