// AdaDelta: hyperparameters and the update math.
#include "rensa/optimizers/ada_delta.h"

#include <cmath>

#include "src/optimizers/fused_rule.h"

namespace rensa::optimizers {
namespace {

// msg = rho msg + (1 - rho) g^2;  dx = sqrt((msdx + eps) / (msg + eps)) g;
// msdx = rho msdx + (1 - rho) dx^2;  p -= dx
template <class C>
struct AdaDeltaStep {
  static constexpr std::size_t n_state = 2;
  C rho, one_m_rho, eps;
  AdaDeltaStep(double rho, double eps) : rho(C(rho)), one_m_rho(C(1.0 - rho)), eps(C(eps)) {}
  template <class T>
  void operator()(T& p, const T& g, T& msg, T& msdx) const {
    const C gc = C(g);
    const C msgn = rho * C(msg) + one_m_rho * gc * gc;
    const C dx = std::sqrt((C(msdx) + eps) / (msgn + eps)) * gc;
    msg = T(msgn);
    msdx = T(rho * C(msdx) + one_m_rho * dx * dx);
    p = T(C(p) - dx);
  }
};

}  // namespace

AdaDelta::AdaDelta(double rho, double eps)
    : rho_(declare_hyperparam("rho", rho)), eps_(declare_hyperparam("eps", eps)) {
  optimizer_name_ = "AdaDelta";
}

std::unique_ptr<UpdateRule> AdaDelta::create_update_rule() {
  return std::make_unique<detail::FusedRule>(
      optimizer_name_, std::vector<std::string>{"msg", "msdx"}, 2, nullptr,
      [this](const Array& param, const Array& grad, const Array* state, int64_t) {
        backends::fused_update<AdaDeltaStep>(param, grad, state, optimizer_name_, *rho_, *eps_);
      });
}

}  // namespace rensa::optimizers
