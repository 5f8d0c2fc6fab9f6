#pragma once
/// \file
/// Stochastic gradient descent and its momentum variants (Chainer's SGD, MomentumSGD,
/// CorrectedMomentumSGD, NesterovAG).

#include <memory>

#include "rensa/optimizers/optimizer.h"

namespace rensa::optimizers {

/// Plain SGD: param -= lr * grad. Hyperparameter: "lr" (default 0.01). No state.
class SGD : public Optimizer {
 public:
  /// `lr`: the learning rate (not checked).
  explicit SGD(double lr = 0.01);

 protected:
  std::unique_ptr<UpdateRule> create_update_rule() override;

 private:
  const double* lr_;
};

/// SGD with momentum: v = momentum * v - lr * grad; param += v. Hyperparameters: "lr" (0.01),
/// "momentum" (0.9). State: "v".
class MomentumSGD : public Optimizer {
 public:
  /// `lr`: the learning rate; `momentum`: the decay of v (neither checked).
  explicit MomentumSGD(double lr = 0.01, double momentum = 0.9);

 protected:
  std::unique_ptr<UpdateRule> create_update_rule() override;

 private:
  const double* lr_;
  const double* momentum_;
};

/// Momentum SGD with momentum correction (Goyal et al., "Accurate, Large Minibatch SGD", eq. 9):
/// v = momentum * v - grad; param += lr * v. The velocity does not carry the learning rate, so a
/// change of lr (warmup, a step schedule) takes effect at once instead of fading in through v.
/// Hyperparameters: "lr" (0.01), "momentum" (0.9). State: "v".
class CorrectedMomentumSGD : public Optimizer {
 public:
  /// `lr`: the learning rate; `momentum`: the decay of v (neither checked).
  explicit CorrectedMomentumSGD(double lr = 0.01, double momentum = 0.9);

 protected:
  std::unique_ptr<UpdateRule> create_update_rule() override;

 private:
  const double* lr_;
  const double* momentum_;
};

/// Nesterov's accelerated gradient (Chainer's formulation): v = momentum * v - lr * grad;
/// param += momentum^2 * v - (1 + momentum) * lr * grad. Hyperparameters: "lr" (0.01),
/// "momentum" (0.9). State: "v".
class NesterovAG : public Optimizer {
 public:
  /// `lr`: the learning rate; `momentum`: the decay of v (neither checked).
  explicit NesterovAG(double lr = 0.01, double momentum = 0.9);

 protected:
  std::unique_ptr<UpdateRule> create_update_rule() override;

 private:
  const double* lr_;
  const double* momentum_;
};

}  // namespace rensa::optimizers
