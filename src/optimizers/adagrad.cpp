// AdaGrad: hyperparameters and the update math.
#include "rensa/optimizers/adagrad.h"

#include <cmath>

#include "src/optimizers/fused_rule.h"

namespace rensa::optimizers {

AdaGrad::AdaGrad(double lr, double eps) : lr_(declare_hyperparam("lr", lr)), eps_(declare_hyperparam("eps", eps)) {
  optimizer_name_ = "AdaGrad";
}

std::unique_ptr<UpdateRule> AdaGrad::create_update_rule() {
  return std::make_unique<detail::FusedRule>(
      optimizer_name_, std::vector<std::string>{"h"}, 1, nullptr,
      [this](const Array& param, const Array& grad, const Array* state, int64_t) {
        backends::fused_update<1>(param, grad, state, [lr = *lr_, eps = *eps_]<class T>() {
          using C = compute_t<T>;
          return [lr = C(lr), eps = C(eps)](T& p, const T& g, T& h) {
            const C gc = C(g);
            const C hn = C(h) + gc * gc;
            h = T(hn);
            p = T(C(p) - lr * gc / (std::sqrt(hn) + eps));
          };
        }, optimizer_name_);
      });
}

}  // namespace rensa::optimizers
