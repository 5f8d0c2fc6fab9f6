// RMSprop: hyperparameters and the fused rule.
#include "rensa/optimizers/rmsprop.h"

#include "src/optimizers/fused_rule.h"

namespace rensa::optimizers {

RMSprop::RMSprop(double lr, double alpha, double eps)
    : lr_(declare_hyperparam("lr", lr)),
      alpha_(declare_hyperparam("alpha", alpha)),
      eps_(declare_hyperparam("eps", eps)) {
  optimizer_name_ = "RMSprop";
}

std::unique_ptr<UpdateRule> RMSprop::create_update_rule() {
  return std::make_unique<detail::FusedRule>(OptimizerKind::rmsprop, optimizer_name_, std::vector<std::string>{"ms"}, 1,
                                             [this](int64_t, double* hp) {
                                               hp[0] = *lr_;
                                               hp[1] = *alpha_;
                                               hp[2] = *eps_;
                                               return 1;
                                             });
}

}  // namespace rensa::optimizers
