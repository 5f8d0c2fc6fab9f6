#pragma once
/// \file
/// AdaGrad (Duchi et al.), as Chainer's AdaGrad.

#include <memory>

#include "rensa/optimizers/optimizer.h"

namespace rensa::optimizers {

/// AdaGrad: h += grad^2; param -= lr * grad / (sqrt(h) + eps).
/// Hyperparameters: "lr" (0.001), "eps" (1e-8). State: "h".
class AdaGrad : public Optimizer {
 public:
  /// The hyperparameters' initial values (see above).
  explicit AdaGrad(double lr = 0.001, double eps = 1e-8);

 protected:
  std::unique_ptr<UpdateRule> create_update_rule() override;

 private:
  const double* lr_;
  const double* eps_;
};

}  // namespace rensa::optimizers
