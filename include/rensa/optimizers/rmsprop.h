#pragma once
/// \file
/// RMSprop (Tieleman and Hinton) and Graves's variant, as Chainer's RMSprop and RMSpropGraves.

#include <memory>

#include "rensa/optimizers/optimizer.h"

namespace rensa::optimizers {

/// RMSprop: ms = alpha * ms + (1 - alpha) * grad^2; param -= lr * grad / (sqrt(ms) + eps).
/// Hyperparameters: "lr" (0.01), "alpha" (0.99), "eps" (1e-8). State: "ms".
class RMSprop : public Optimizer {
 public:
  /// The hyperparameters' initial values (see above).
  explicit RMSprop(double lr = 0.01, double alpha = 0.99, double eps = 1e-8);

 protected:
  std::unique_ptr<UpdateRule> create_update_rule() override;

 private:
  const double* lr_;
  const double* alpha_;
  const double* eps_;
};

/// Alex Graves's RMSprop (arXiv:1308.0850): n = alpha n + (1 - alpha) grad^2;
/// g = alpha g + (1 - alpha) grad; delta = momentum delta - lr grad / sqrt(n - g^2 + eps);
/// param += delta. Hyperparameters: "lr" (1e-4), "alpha" (0.95), "momentum" (0.9), "eps" (1e-4).
/// State: "n", "g", "delta".
class RMSpropGraves : public Optimizer {
 public:
  /// The hyperparameters' initial values (see above).
  explicit RMSpropGraves(double lr = 1e-4, double alpha = 0.95, double momentum = 0.9, double eps = 1e-4);

 protected:
  std::unique_ptr<UpdateRule> create_update_rule() override;

 private:
  const double* lr_;
  const double* alpha_;
  const double* momentum_;
  const double* eps_;
};

}  // namespace rensa::optimizers
