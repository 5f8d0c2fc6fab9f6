// RMSprop and RMSpropGraves: hyperparameters and the update math.
#include "rensa/optimizers/rmsprop.h"

#include <cmath>

#include "src/optimizers/fused_rule.h"

namespace rensa::optimizers {

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
        backends::fused_update<1>(param, grad, state, [lr = *lr_, alpha = *alpha_, eps = *eps_]<class T>() {
          using C = compute_t<T>;
          return [lr = C(lr), a = C(alpha), one_m_a = C(1.0 - alpha), eps = C(eps)](T& p, const T& g, T& ms) {
            const C gc = C(g);
            const C msn = a * C(ms) + one_m_a * gc * gc;
            ms = T(msn);
            p = T(C(p) - lr * gc / (std::sqrt(msn) + eps));
          };
        }, optimizer_name_);
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
        backends::fused_update<3>(param, grad, state,
                                  [lr = *lr_, alpha = *alpha_, momentum = *momentum_, eps = *eps_]<class T>() {
          using C = compute_t<T>;
          return [lr = C(lr), a = C(alpha), one_m_a = C(1.0 - alpha), mom = C(momentum), eps = C(eps)](
                     T& p, const T& grad, T& n, T& g, T& delta) {
            const C gc = C(grad);
            const C nn = a * C(n) + one_m_a * gc * gc;
            const C gn = a * C(g) + one_m_a * gc;
            const C dn = mom * C(delta) - lr * gc / std::sqrt(nn - gn * gn + eps);
            n = T(nn);
            g = T(gn);
            delta = T(dn);
            p = T(C(p) + dn);
          };
        }, optimizer_name_);
      });
}

}  // namespace rensa::optimizers
