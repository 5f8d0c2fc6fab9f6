#pragma once
/// \file
/// RMSprop (Tieleman and Hinton), as Chainer's RMSprop.

#include <memory>

#include "rensa/optimizers/optimizer.h"

namespace rensa::optimizers {

/// RMSprop: ms = alpha * ms + (1 - alpha) * grad^2; param -= lr * grad / (sqrt(ms) + eps).
/// Hyperparameters: "lr" (0.01), "alpha" (0.99), "eps" (1e-8). State: "ms".
class RMSprop : public Optimizer {
 public:
  explicit RMSprop(double lr = 0.01, double alpha = 0.99, double eps = 1e-8);

 protected:
  std::unique_ptr<UpdateRule> create_update_rule() override;

 private:
  const double* lr_;
  const double* alpha_;
  const double* eps_;
};

}  // namespace rensa::optimizers
