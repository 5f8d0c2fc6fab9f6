#pragma once
/// \file
/// Layer-wise adaptive rate scaling (You, Gitman and Ginsburg 2017, "Large Batch Training of
/// Convolutional Networks"): each parameter's step is scaled by the ratio of its weight norm to its
/// gradient norm, so that every layer moves by a similar relative amount however large the batch.
/// As an optimizer (LARS) and as Chainer's hook (GradientLARS) in front of any optimizer.

#include <functional>
#include <memory>
#include <utility>

#include "rensa/optimizers/optimizer.h"

namespace rensa::optimizers {

/// Decides which parameters layer-wise adaptation (and decoupled weight decay) leaves alone:
/// returns true for a parameter to exclude. Called with the parameter at each update, so it may
/// look at its shape and name ("b", "gamma", "beta").
using ParamFilter = std::function<bool(const Variable& param)>;

/// The default exclusion of LARS and LAMB: parameters of at most one dimension, that is biases and
/// normalization scales and shifts (Goyal et al. and You et al. leave them out).
bool exclude_bias_and_normalization(const Variable& param);

/// LARS: momentum SGD whose step for each parameter w with gradient g is scaled by the local rate
///   local = eta * ||w|| / (||g|| + weight_decay_rate * ||w|| + eps)   (1 when ||w|| or ||g|| is 0)
///   v = momentum * v - lr * local * (g + weight_decay_rate * w);  w += v.
/// An excluded parameter takes the plain momentum step v = momentum * v - lr * g (no adaptation, no
/// weight decay). Norms are over the whole parameter, summed in float64.
/// Hyperparameters: "lr" (1.0: with eta 0.001 a weight moves by about 0.1% of its norm per step),
/// "momentum" (0.9), "weight_decay_rate" (0), "eta" (the trust coefficient, 0.001), "eps" (1e-9).
/// State: "v". ValueError naming LARS and the value for a negative or non-finite lr, eta, eps or
/// weight_decay_rate, or a momentum outside [0, 1), at construction and at each update.
class LARS : public Optimizer {
 public:
  /// `exclude`: the parameters updated without the trust ratio or weight decay (null: none). ValueError as above.
  explicit LARS(double lr = 1.0, double momentum = 0.9, double weight_decay_rate = 0.0, double eta = 0.001,
                double eps = 1e-9, ParamFilter exclude = exclude_bias_and_normalization);

  /// Replaces the exclusion rule; null excludes nothing.
  void set_exclude(ParamFilter exclude) { exclude_ = std::move(exclude); }
  /// The exclusion rule (null excludes nothing).
  const ParamFilter& exclude() const { return exclude_; }
  /// The local rate `local` the next update gives `param` from its current value and gradient
  /// (1 for an excluded parameter). ValueError for a parameter without a gradient.
  double local_rate(const Variable& param) const;

 protected:
  std::unique_ptr<UpdateRule> create_update_rule() override;

 private:
  void check_hyperparams() const;
  bool excluded(const Variable& param) const { return exclude_ && exclude_(param); }

  const double* lr_;
  const double* momentum_;
  const double* weight_decay_rate_;
  const double* eta_;
  const double* eps_;
  ParamFilter exclude_;
};

/// Chainer's GradientLARS hook: for each parameter p with gradient g,
///   rate = ||p|| / (eps + ||g|| + weight_decay * ||p||) when ||p|| > threshold, else 1;
///   g = (g + weight_decay * p) * rate.
/// The optimizer's lr then plays the part of lr * eta. Chainer's hook treats every parameter;
/// `exclude` (null by default, as Chainer) leaves the gradients of the parameters it selects
/// untouched. Name "GradientLARS". ValueError for a negative or non-finite threshold,
/// weight_decay or eps.
class GradientLARS : public OptimizerHook {
 public:
  /// `exclude`: the parameters whose gradients are left untouched (null: none). ValueError as above.
  explicit GradientLARS(double threshold = 1e-2, double weight_decay = 0.0, double eps = 1e-9,
                        ParamFilter exclude = nullptr);
  const char* name() const override { return "GradientLARS"; }
  void operator()(Optimizer& optimizer) override;
  /// Parameters whose norm ||p|| is at most this keep rate 1 (their gradient is unscaled).
  double threshold() const { return threshold_; }
  /// The weight decay coefficient added to the gradient before scaling.
  double weight_decay() const { return weight_decay_; }
  /// Added to the norms' denominator to avoid division by zero.
  double eps() const { return eps_; }

 private:
  double threshold_;
  double weight_decay_;
  double eps_;
  ParamFilter exclude_;
};

}  // namespace rensa::optimizers
