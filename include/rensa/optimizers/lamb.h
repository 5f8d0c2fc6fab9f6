#pragma once
/// \file
/// LAMB (You et al. 2019, "Large Batch Optimization for Deep Learning: Training BERT in 76
/// minutes"): Adam's bias-corrected step, with decoupled weight decay, rescaled per parameter by the
/// ratio of the weight norm to the step norm.

#include <memory>

#include "rensa/optimizers/lars.h"
#include "rensa/optimizers/optimizer.h"

namespace rensa::optimizers {

/// LAMB. With t the parameter's step count:
///   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2;
///   r = (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps) + weight_decay_rate * w;
///   ratio = ||w|| / ||r||   (1 when either norm is 0);
///   w -= lr * ratio * r.
/// An excluded parameter (ParamFilter; by default biases and normalization parameters) takes
/// ratio 1 and no weight decay: the Adam step. Norms are over the whole parameter, in float64.
/// Hyperparameters: "lr" (0.001), "beta1" (0.9), "beta2" (0.999), "eps" (1e-6),
/// "weight_decay_rate" (0). State: "m", "v". ValueError naming LAMB and the value for a negative or
/// non-finite lr, eps or weight_decay_rate, or a beta outside [0, 1), at construction and at each
/// update.
class LAMB : public Optimizer {
 public:
  /// `exclude`: the parameters updated without the trust ratio or weight decay (null: none). ValueError as above.
  explicit LAMB(double lr = 0.001, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-6,
                double weight_decay_rate = 0.0, ParamFilter exclude = exclude_bias_and_normalization);

  /// Replaces the exclusion rule; null excludes nothing.
  void set_exclude(ParamFilter exclude) { exclude_ = std::move(exclude); }
  /// The exclusion rule (null excludes nothing).
  const ParamFilter& exclude() const { return exclude_; }

 protected:
  std::unique_ptr<UpdateRule> create_update_rule() override;

 private:
  void check_hyperparams() const;

  const double* lr_;
  const double* beta1_;
  const double* beta2_;
  const double* eps_;
  const double* weight_decay_rate_;
  ParamFilter exclude_;
};

}  // namespace rensa::optimizers
