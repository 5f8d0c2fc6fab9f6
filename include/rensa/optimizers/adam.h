#pragma once
/// \file
/// Adam (Kingma and Ba) with Chainer's options: decoupled weight decay (AdamW), AMSGrad, AdaBound
/// and the schedule multiplier eta.

#include <memory>

#include "rensa/optimizers/optimizer.h"

namespace rensa::optimizers {

/// Adam. With t the parameter's step count and alpha_t = alpha * sqrt(1 - beta2^t) / (1 - beta1^t):
///   m += (1 - beta1) * (grad - m);  v += (1 - beta2) * (grad^2 - v);
///   vhat = max(vhat, v) with amsgrad, else v;
///   step = alpha_t / (sqrt(vhat) + eps), clipped to [lower, upper] with adabound;
///   param -= eta * (step * m + weight_decay_rate * param).
/// AdaBound's bounds (Luo et al.), with f = final_lr * alpha / alpha0 (alpha0 the alpha when the
/// parameter's rule was made, at setup, as Chainer; a schedule on alpha moves the bounds too):
/// lower = f * (1 - 1 / (gamma * t + 1)), upper = f * (1 + 1 / (gamma * t)).
/// Hyperparameters: "alpha" (0.001), "beta1" (0.9), "beta2" (0.999), "eps" (1e-8), "eta" (1),
/// "weight_decay_rate" (0), "amsgrad" (0 or 1), "adabound" (0 or 1), "final_lr" (0.1), "gamma"
/// (1e-3; positive when adabound is on). State: "m", "v", and "vhat" with amsgrad.
class Adam : public Optimizer {
 public:
  /// The hyperparameters' initial values (see above; the booleans are stored as 0 or 1).
  explicit Adam(double alpha = 0.001, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8, double eta = 1.0,
                double weight_decay_rate = 0.0, bool amsgrad = false, bool adabound = false, double final_lr = 0.1,
                double gamma = 1e-3);

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
  const double* adabound_;
  const double* final_lr_;
  const double* gamma_;
};

/// Adam with decoupled weight decay (Chainer's AdamW): Adam with `weight_decay_rate` set.
class AdamW : public Adam {
 public:
  /// Adam(alpha, beta1, beta2, eps, eta, weight_decay_rate), named "AdamW" in messages.
  explicit AdamW(double alpha = 0.001, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8, double eta = 1.0,
                 double weight_decay_rate = 0.0)
      : Adam(alpha, beta1, beta2, eps, eta, weight_decay_rate, false) {
    optimizer_name_ = "AdamW";
  }
};

/// AMSGrad (Chainer's AMSGrad): Adam with `amsgrad` set.
class AMSGrad : public Adam {
 public:
  /// Adam with amsgrad, named "AMSGrad" in messages.
  explicit AMSGrad(double alpha = 0.001, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8, double eta = 1.0)
      : Adam(alpha, beta1, beta2, eps, eta, 0.0, true) {
    optimizer_name_ = "AMSGrad";
  }
};

/// AdaBound (Chainer's AdaBound): Adam with `adabound` set.
class AdaBound : public Adam {
 public:
  /// Adam with adabound, named "AdaBound" in messages.
  explicit AdaBound(double alpha = 0.001, double beta1 = 0.9, double beta2 = 0.999, double final_lr = 0.1,
                    double gamma = 1e-3, double eps = 1e-8, double eta = 1.0)
      : Adam(alpha, beta1, beta2, eps, eta, 0.0, false, true, final_lr, gamma) {
    optimizer_name_ = "AdaBound";
  }
};

/// AMSBound (Chainer's AMSBound): Adam with `amsgrad` and `adabound` set.
class AMSBound : public Adam {
 public:
  /// Adam with amsgrad and adabound, named "AMSBound" in messages.
  explicit AMSBound(double alpha = 0.001, double beta1 = 0.9, double beta2 = 0.999, double final_lr = 0.1,
                    double gamma = 1e-3, double eps = 1e-8, double eta = 1.0)
      : Adam(alpha, beta1, beta2, eps, eta, 0.0, true, true, final_lr, gamma) {
    optimizer_name_ = "AMSBound";
  }
};

}  // namespace rensa::optimizers
