#pragma once
/// \file
/// ADADELTA (Zeiler), as Chainer's AdaDelta.

#include <memory>

#include "rensa/optimizers/optimizer.h"

namespace rensa::optimizers {

/// ADADELTA: msg = rho * msg + (1 - rho) * grad^2; dx = sqrt((msdx + eps) / (msg + eps)) * grad;
/// msdx = rho * msdx + (1 - rho) * dx^2; param -= dx. It has no learning rate.
/// Hyperparameters: "rho" (0.95), "eps" (1e-6). State: "msg", "msdx".
class AdaDelta : public Optimizer {
 public:
  /// The hyperparameters' initial values (see above).
  explicit AdaDelta(double rho = 0.95, double eps = 1e-6);

 protected:
  std::unique_ptr<UpdateRule> create_update_rule() override;

 private:
  const double* rho_;
  const double* eps_;
};

}  // namespace rensa::optimizers
