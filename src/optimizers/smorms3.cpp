// SMORMS3: hyperparameters and the update math.
#include "rensa/optimizers/smorms3.h"

#include <algorithm>
#include <cmath>

#include "src/optimizers/fused_rule.h"

namespace rensa::optimizers {
namespace {

// r = 1 / (mem + 1);  gbar = (1 - r) gbar + r g;  g2 = (1 - r) g2 + r g^2;  x = gbar^2 / (g2 + eps);
// p -= g min(x, lr) / (sqrt(g2) + eps);  mem = 1 + mem (1 - x)
template <class C>
struct SMORMS3Step {
  static constexpr std::size_t n_state = 3;
  C lr, eps;
  SMORMS3Step(double lr, double eps) : lr(C(lr)), eps(C(eps)) {}
  template <class T>
  void operator()(T& p, const T& grad, T& mem, T& gbar, T& g2) const {
    const C gc = C(grad), memc = C(mem);
    const C r = C(1) / (memc + C(1));
    const C gn = (C(1) - r) * C(gbar) + r * gc;
    const C g2n = (C(1) - r) * C(g2) + r * gc * gc;
    const C x = gn * gn / (g2n + eps);
    gbar = T(gn);
    g2 = T(g2n);
    p = T(C(p) - gc * std::min(x, lr) / (std::sqrt(g2n) + eps));
    mem = T(C(1) + memc * (C(1) - x));
  }
};

}  // namespace

SMORMS3::SMORMS3(double lr, double eps) : lr_(declare_hyperparam("lr", lr)), eps_(declare_hyperparam("eps", eps)) {
  optimizer_name_ = "SMORMS3";
}

std::unique_ptr<UpdateRule> SMORMS3::create_update_rule() {
  auto rule = std::make_unique<detail::FusedRule>(
      optimizer_name_, std::vector<std::string>{"mem", "g", "g2"}, 3, nullptr,
      [this](const Array& param, const Array& grad, const Array* state, int64_t) {
        backends::fused_update<SMORMS3Step>(param, grad, state, optimizer_name_, *lr_, *eps_);
      });
  rule->set_initial_value(0, 1.0);
  return rule;
}

}  // namespace rensa::optimizers
