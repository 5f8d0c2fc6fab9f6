#pragma once
/// \file
/// Adam (Kingma and Ba) with Chainer's options: decoupled weight decay (AdamW), AMSGrad and the
/// schedule multiplier eta.

#include <memory>

#include "rensa/optimizers/optimizer.h"

namespace rensa::optimizers {

/// Adam. With t the parameter's step count and alpha_t = alpha * sqrt(1 - beta2^t) / (1 - beta1^t):
///   m += (1 - beta1) * (grad - m);  v += (1 - beta2) * (grad^2 - v);
///   vhat = max(vhat, v) with amsgrad, else v;
///   param -= eta * (alpha_t * m / (sqrt(vhat) + eps) + weight_decay_rate * param).
/// Hyperparameters: "alpha" (0.001), "beta1" (0.9), "beta2" (0.999), "eps" (1e-8), "eta" (1),
/// "weight_decay_rate" (0), "amsgrad" (0 or 1). State: "m", "v", and "vhat" with amsgrad.
class Adam : public Optimizer {
 public:
  explicit Adam(double alpha = 0.001, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8, double eta = 1.0,
                double weight_decay_rate = 0.0, bool amsgrad = false);

  /// alpha_t at the optimizer's step count t (Chainer's Adam.lr). ValueError before the first
  /// update (t = 0), where it is undefined.
  double lr() const override;
  /// alpha * sqrt(1 - beta2^t) / (1 - beta1^t) for the given hyperparameters (t >= 1).
  static double alpha_t(double alpha, double beta1, double beta2, int64_t t);

 protected:
  std::unique_ptr<UpdateRule> create_update_rule() override;

 private:
  const double* alpha_;
  const double* beta1_;
  const double* beta2_;
  const double* eps_;
  const double* eta_;
  const double* weight_decay_rate_;
  const double* amsgrad_;
};

/// Adam with decoupled weight decay (Chainer's AdamW): Adam with `weight_decay_rate` set.
class AdamW : public Adam {
 public:
  explicit AdamW(double alpha = 0.001, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8, double eta = 1.0,
                 double weight_decay_rate = 0.0)
      : Adam(alpha, beta1, beta2, eps, eta, weight_decay_rate, false) {
    optimizer_name_ = "AdamW";
  }
};

/// AMSGrad (Chainer's AMSGrad): Adam with `amsgrad` set.
class AMSGrad : public Adam {
 public:
  explicit AMSGrad(double alpha = 0.001, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8, double eta = 1.0)
      : Adam(alpha, beta1, beta2, eps, eta, 0.0, true) {
    optimizer_name_ = "AMSGrad";
  }
};

}  // namespace rensa::optimizers
