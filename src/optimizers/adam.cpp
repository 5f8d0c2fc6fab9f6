// Adam (with AdamW's decoupled weight decay and AMSGrad): hyperparameters and the fused rule.
#include "rensa/optimizers/adam.h"

#include <cmath>

#include "src/optimizers/fused_rule.h"

namespace rensa::optimizers {

Adam::Adam(double alpha, double beta1, double beta2, double eps, double eta, double weight_decay_rate, bool amsgrad)
    : alpha_(declare_hyperparam("alpha", alpha)),
      beta1_(declare_hyperparam("beta1", beta1)),
      beta2_(declare_hyperparam("beta2", beta2)),
      eps_(declare_hyperparam("eps", eps)),
      eta_(declare_hyperparam("eta", eta)),
      weight_decay_rate_(declare_hyperparam("weight_decay_rate", weight_decay_rate)),
      amsgrad_(declare_hyperparam("amsgrad", amsgrad ? 1.0 : 0.0)) {
  optimizer_name_ = "Adam";
}

double Adam::alpha_t(double alpha, double beta1, double beta2, int64_t t) {
  RENSA_CHECK(t >= 1, ValueError, "Adam: the learning rate alpha_t is undefined at step t = ", t,
              " (no update has been made yet)");
  const double td = static_cast<double>(t);
  return alpha * std::sqrt(1.0 - std::pow(beta2, td)) / (1.0 - std::pow(beta1, td));
}

double Adam::lr() const {
  return alpha_t(*alpha_, *beta1_, *beta2_, t_);
}

std::unique_ptr<UpdateRule> Adam::create_update_rule() {
  return std::make_unique<detail::FusedRule>(OptimizerKind::adam, optimizer_name_,
                                             std::vector<std::string>{"m", "v", "vhat"}, 2,
                                             [this](int64_t t, double* hp) {
                                               // The bias correction uses the rule's own step count, as Chainer's
                                               // AdamRule does.
                                               hp[0] = alpha_t(*alpha_, *beta1_, *beta2_, t);
                                               hp[1] = *beta1_;
                                               hp[2] = *beta2_;
                                               hp[3] = *eps_;
                                               hp[4] = *eta_;
                                               hp[5] = *weight_decay_rate_;
                                               hp[6] = *amsgrad_ != 0.0 ? 1.0 : 0.0;
                                               return *amsgrad_ != 0.0 ? 3 : 2;
                                             });
}

}  // namespace rensa::optimizers
