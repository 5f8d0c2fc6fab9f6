#pragma once
/// \file
/// M-SVAG (Balles and Hennig, "Dissecting Adam"), with decoupled weight decay, as Chainer's MSVAG.

#include <memory>

#include "rensa/optimizers/optimizer.h"

namespace rensa::optimizers {

/// M-SVAG. With t the parameter's step count and b = beta^t:
///   rho = min(0.9999, (1 - beta)^2 (1 - b^2) / ((1 - b)^2 (1 - beta^2)));
///   m += (1 - beta) * (grad - m);  v += (1 - beta) * (grad^2 - v);
///   mt = m / (1 - b);  s = (v / (1 - b) - mt^2) / (1 - rho);
///   factor = clip(mt^2 / (mt^2 + rho * s), 0, 1), 0 where that is NaN;
///   param -= eta * (lr * mt * factor + weight_decay_rate * param).
/// Hyperparameters: "lr" (0.1), "beta" (0.9), "eta" (1), "weight_decay_rate" (0). State: "m", "v".
/// b is computed from the step count, which a snapshot keeps, so a resumed run goes on exactly
/// (Chainer keeps it in the rule and restarts it at beta on resume).
class MSVAG : public Optimizer {
 public:
  /// The hyperparameters' initial values (see above).
  explicit MSVAG(double lr = 0.1, double beta = 0.9, double eta = 1.0, double weight_decay_rate = 0.0);

 protected:
  std::unique_ptr<UpdateRule> create_update_rule() override;

 private:
  const double* lr_;
  const double* beta_;
  const double* eta_;
  const double* weight_decay_rate_;
};

}  // namespace rensa::optimizers
