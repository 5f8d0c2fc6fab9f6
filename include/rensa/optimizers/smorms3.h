#pragma once
/// \file
/// SMORMS3 (Simon Funk), as Chainer's SMORMS3.

#include <memory>

#include "rensa/optimizers/optimizer.h"

namespace rensa::optimizers {

/// SMORMS3: r = 1 / (mem + 1); g = (1 - r) g + r grad; g2 = (1 - r) g2 + r grad^2;
/// x = g^2 / (g2 + eps); param -= grad * min(x, lr) / (sqrt(g2) + eps); mem = 1 + mem (1 - x).
/// Hyperparameters: "lr" (0.001), "eps" (1e-16). State: "mem" (starts at 1), "g", "g2".
class SMORMS3 : public Optimizer {
 public:
  /// The hyperparameters' initial values (see above).
  explicit SMORMS3(double lr = 0.001, double eps = 1e-16);

 protected:
  std::unique_ptr<UpdateRule> create_update_rule() override;

 private:
  const double* lr_;
  const double* eps_;
};

}  // namespace rensa::optimizers
