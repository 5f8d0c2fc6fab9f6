#pragma once
/// \file
/// Optimizer hooks (Chainer's chainer.optimizer_hooks): they rewrite the gradients of the target's
/// parameters in place before the update. Parameters without a gradient are skipped.

#include "rensa/optimizers/optimizer.h"

namespace rensa::optimizers {

/// L2 regularization: grad += rate * param. Name "WeightDecay".
class WeightDecay : public OptimizerHook {
 public:
  explicit WeightDecay(double rate) : rate_(rate) {}
  const char* name() const override { return "WeightDecay"; }
  void operator()(Optimizer& optimizer) override;
  double rate() const { return rate_; }

 private:
  double rate_;
};

/// L1 regularization: grad += rate * sign(param). Name "Lasso".
class Lasso : public OptimizerHook {
 public:
  explicit Lasso(double rate) : rate_(rate) {}
  const char* name() const override { return "Lasso"; }
  void operator()(Optimizer& optimizer) override;
  double rate() const { return rate_; }

 private:
  double rate_;
};

/// Scales all gradients by threshold / norm when their global L2 norm (over every parameter)
/// exceeds `threshold`. Name "GradientClipping". ValueError for a threshold that is not positive.
class GradientClipping : public OptimizerHook {
 public:
  explicit GradientClipping(double threshold);
  const char* name() const override { return "GradientClipping"; }
  void operator()(Optimizer& optimizer) override;
  double threshold() const { return threshold_; }
  /// The global norm seen by the last call (for reporting).
  double last_norm() const { return last_norm_; }

 private:
  double threshold_;
  double last_norm_ = 0.0;
};

/// Clips every gradient element to [lower, upper]. Name "GradientHardClipping". ValueError when
/// lower > upper.
class GradientHardClipping : public OptimizerHook {
 public:
  GradientHardClipping(double lower, double upper);
  const char* name() const override { return "GradientHardClipping"; }
  void operator()(Optimizer& optimizer) override;
  double lower() const { return lower_; }
  double upper() const { return upper_; }

 private:
  double lower_;
  double upper_;
};

}  // namespace rensa::optimizers
