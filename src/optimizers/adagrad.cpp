// AdaGrad: hyperparameters and the update math.
#include "rensa/optimizers/adagrad.h"

#include <cmath>

#include "src/optimizers/fused_rule.h"

namespace rensa::optimizers {
namespace {

// h += g^2;  p -= lr g / (sqrt(h) + eps)
template <class C>
struct AdaGradStep {
  static constexpr std::size_t n_state = 1;
  C lr, eps;
  AdaGradStep(double lr, double eps) : lr(C(lr)), eps(C(eps)) {}
  template <class T>
  void operator()(T& p, const T& g, T& h) const {
    const C gc = C(g);
    const C hn = C(h) + gc * gc;
    h = T(hn);
    p = T(C(p) - lr * gc / (std::sqrt(hn) + eps));
  }
};

}  // namespace

AdaGrad::AdaGrad(double lr, double eps) : lr_(declare_hyperparam("lr", lr)), eps_(declare_hyperparam("eps", eps)) {
  optimizer_name_ = "AdaGrad";
}

std::unique_ptr<UpdateRule> AdaGrad::create_update_rule() {
  return std::make_unique<detail::FusedRule>(
      optimizer_name_, std::vector<std::string>{"h"}, 1, nullptr,
      [this](const Array& param, const Array& grad, const Array* state, int64_t) {
        backends::fused_update<AdaGradStep>(param, grad, state, optimizer_name_, *lr_, *eps_);
      });
}

}  // namespace rensa::optimizers
