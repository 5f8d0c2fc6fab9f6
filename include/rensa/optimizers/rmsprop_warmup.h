#pragma once
/// \file
/// RMSprop warm-up (Akiba, Suzuki and Fukuda 2017, "Extremely Large Minibatch SGD: Training
/// ResNet-50 on ImageNet in 15 Minutes"): training starts as RMSprop, whose per-element scaling
/// tolerates the large, uneven gradients of the first large-batch steps, and moves gradually to
/// momentum SGD, which generalizes better.

#include <cstdint>
#include <memory>

#include "rensa/optimizers/optimizer.h"

namespace rensa::optimizers {

/// RMSprop warm-up. With t the parameter's step count and s(t) the transition, 0 up to
/// transition_begin, 1 from transition_end on, linear in between:
///   ms = alpha * ms + (1 - alpha) * g^2;
///   v = momentum * v - lr * (s + (1 - s) * rmsprop_scale / (sqrt(ms) + eps)) * g;
///   w += v.
/// At s = 0 this is RMSprop with momentum and learning rate lr * rmsprop_scale; at s = 1 it is
/// MomentumSGD with learning rate lr (bit for bit). One lr scales both, so the scaling rule,
/// warm-up and decay schedules of "lr" apply to the whole run. The formula is ours: the paper
/// describes the blend, not a fixed equation.
/// Hyperparameters: "lr" (0.1), "transition_begin" (0), "transition_end" (1000), "rmsprop_scale"
/// (0.01: RMSprop's step is then lr / 100, as RMSprop's usual 0.001 is to SGD's 0.1), "momentum"
/// (0.9), "alpha" (0.99), "eps" (1e-8). The transition counts updates; to move over E epochs, set
/// transition_end to E times the iterations per epoch. State: "v", "ms". ValueError naming
/// RMSpropWarmup and the value for a negative or non-finite lr, rmsprop_scale or eps, a momentum or
/// alpha outside [0, 1), a negative transition_begin or transition_end < transition_begin, at
/// construction and at each update.
class RMSpropWarmup : public Optimizer {
 public:
  /// The hyperparameters' initial values (see above); ValueError as above.
  explicit RMSpropWarmup(double lr = 0.1, int64_t transition_end = 1000, int64_t transition_begin = 0,
                         double rmsprop_scale = 0.01, double momentum = 0.9, double alpha = 0.99, double eps = 1e-8);

  /// s(t): the weight of momentum SGD at step t (1-based), in [0, 1].
  double transition(int64_t t) const;

 protected:
  std::unique_ptr<UpdateRule> create_update_rule() override;

 private:
  void check_hyperparams() const;

  const double* lr_;
  const double* transition_begin_;
  const double* transition_end_;
  const double* rmsprop_scale_;
  const double* momentum_;
  const double* alpha_;
  const double* eps_;
};

}  // namespace rensa::optimizers
