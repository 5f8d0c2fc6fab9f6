// SGD, MomentumSGD and NesterovAG: hyperparameters and their fused update rules.
#include "rensa/optimizers/sgd.h"

#include "src/optimizers/fused_rule.h"

namespace rensa::optimizers {

SGD::SGD(double lr) : lr_(declare_hyperparam("lr", lr)) {
  optimizer_name_ = "SGD";
}

std::unique_ptr<UpdateRule> SGD::create_update_rule() {
  return std::make_unique<detail::FusedRule>(OptimizerKind::sgd, optimizer_name_, std::vector<std::string>{}, 0,
                                             [this](int64_t, double* hp) {
                                               hp[0] = *lr_;
                                               return 0;
                                             });
}

MomentumSGD::MomentumSGD(double lr, double momentum)
    : lr_(declare_hyperparam("lr", lr)), momentum_(declare_hyperparam("momentum", momentum)) {
  optimizer_name_ = "MomentumSGD";
}

std::unique_ptr<UpdateRule> MomentumSGD::create_update_rule() {
  return std::make_unique<detail::FusedRule>(OptimizerKind::momentum_sgd, optimizer_name_,
                                             std::vector<std::string>{"v"}, 1, [this](int64_t, double* hp) {
                                               hp[0] = *lr_;
                                               hp[1] = *momentum_;
                                               return 1;
                                             });
}

NesterovAG::NesterovAG(double lr, double momentum)
    : lr_(declare_hyperparam("lr", lr)), momentum_(declare_hyperparam("momentum", momentum)) {
  optimizer_name_ = "NesterovAG";
}

std::unique_ptr<UpdateRule> NesterovAG::create_update_rule() {
  return std::make_unique<detail::FusedRule>(OptimizerKind::nesterov_ag, optimizer_name_, std::vector<std::string>{"v"},
                                             1, [this](int64_t, double* hp) {
                                               hp[0] = *lr_;
                                               hp[1] = *momentum_;
                                               return 1;
                                             });
}

}  // namespace rensa::optimizers
