// AdaGrad: hyperparameters and the fused rule.
#include "rensa/optimizers/adagrad.h"

#include "src/optimizers/fused_rule.h"

namespace rensa::optimizers {

AdaGrad::AdaGrad(double lr, double eps) : lr_(declare_hyperparam("lr", lr)), eps_(declare_hyperparam("eps", eps)) {
  optimizer_name_ = "AdaGrad";
}

std::unique_ptr<UpdateRule> AdaGrad::create_update_rule() {
  return std::make_unique<detail::FusedRule>(OptimizerKind::adagrad, optimizer_name_, std::vector<std::string>{"h"}, 1,
                                             [this](int64_t, double* hp) {
                                               hp[0] = *lr_;
                                               hp[1] = *eps_;
                                               return 1;
                                             });
}

}  // namespace rensa::optimizers
