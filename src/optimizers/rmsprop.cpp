// RMSprop and RMSpropGraves: hyperparameters and the update math.
#include "rensa/optimizers/rmsprop.h"

#include <cmath>

#include "src/optimizers/fused_rule.h"

namespace rensa::optimizers {
namespace {

// ms = alpha ms + (1 - alpha) g^2;  p -= lr g / (sqrt(ms) + eps)
template <class C>
struct RMSpropStep {
  static constexpr std::size_t n_state = 1;
  C lr, alpha, one_m_alpha, eps;
  RMSpropStep(double lr, double alpha, double eps)
      : lr(C(lr)), alpha(C(alpha)), one_m_alpha(C(1.0 - alpha)), eps(C(eps)) {}
  template <class T>
  void operator()(T& p, const T& g, T& ms) const {
    const C gc = C(g);
    const C msn = alpha * C(ms) + one_m_alpha * gc * gc;
    ms = T(msn);
    p = T(C(p) - lr * gc / (std::sqrt(msn) + eps));
  }
};

// Graves' centred RMSprop: n = alpha n + (1 - alpha) g^2;  gbar = alpha gbar + (1 - alpha) g;
// delta = momentum delta - lr g / sqrt(n - gbar^2 + eps);  p += delta
template <class C>
struct RMSpropGravesStep {
  static constexpr std::size_t n_state = 3;
  C lr, alpha, one_m_alpha, momentum, eps;
  RMSpropGravesStep(double lr, double alpha, double momentum, double eps)
      : lr(C(lr)), alpha(C(alpha)), one_m_alpha(C(1.0 - alpha)), momentum(C(momentum)), eps(C(eps)) {}
  template <class T>
  void operator()(T& p, const T& g, T& n, T& gbar, T& delta) const {
    const C gc = C(g);
    const C nn = alpha * C(n) + one_m_alpha * gc * gc;
    const C gn = alpha * C(gbar) + one_m_alpha * gc;
    const C dn = momentum * C(delta) - lr * gc / std::sqrt(nn - gn * gn + eps);
    n = T(nn);
    gbar = T(gn);
    delta = T(dn);
    p = T(C(p) + dn);
  }
};

}  // namespace

RMSprop::RMSprop(double lr, double alpha, double eps)
    : lr_(declare_hyperparam("lr", lr)),
      alpha_(declare_hyperparam("alpha", alpha)),
      eps_(declare_hyperparam("eps", eps)) {
  optimizer_name_ = "RMSprop";
}

std::unique_ptr<UpdateRule> RMSprop::create_update_rule() {
  return std::make_unique<detail::FusedRule>(
      optimizer_name_, std::vector<std::string>{"ms"}, 1, nullptr,
      [this](const Array& param, const Array& grad, const Array* state, int64_t) {
        backends::fused_update<RMSpropStep>(param, grad, state, optimizer_name_, *lr_, *alpha_, *eps_);
      });
}

RMSpropGraves::RMSpropGraves(double lr, double alpha, double momentum, double eps)
    : lr_(declare_hyperparam("lr", lr)),
      alpha_(declare_hyperparam("alpha", alpha)),
      momentum_(declare_hyperparam("momentum", momentum)),
      eps_(declare_hyperparam("eps", eps)) {
  optimizer_name_ = "RMSpropGraves";
}

std::unique_ptr<UpdateRule> RMSpropGraves::create_update_rule() {
  return std::make_unique<detail::FusedRule>(
      optimizer_name_, std::vector<std::string>{"n", "g", "delta"}, 3, nullptr,
      [this](const Array& param, const Array& grad, const Array* state, int64_t) {
        backends::fused_update<RMSpropGravesStep>(param, grad, state, optimizer_name_, *lr_, *alpha_, *momentum_,
                                                  *eps_);
      });
}

}  // namespace rensa::optimizers
