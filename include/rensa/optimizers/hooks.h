#pragma once
/// \file
/// Optimizer hooks (Chainer's chainer.optimizer_hooks): they rewrite the gradients of the target's
/// parameters in place before the update. Parameters without a gradient are skipped.

#include <cstdint>
#include <functional>
#include <optional>

#include "rensa/core/random.h"
#include "rensa/optimizers/optimizer.h"

namespace rensa::optimizers {

/// L2 regularization: grad += rate * param. Name "WeightDecay".
class WeightDecay : public OptimizerHook {
 public:
  /// `rate`: the L2 coefficient (not checked).
  explicit WeightDecay(double rate) : rate_(rate) {}
  const char* name() const override { return "WeightDecay"; }
  void operator()(Optimizer& optimizer) override;
  /// The L2 coefficient.
  double rate() const { return rate_; }

 private:
  double rate_;
};

/// L1 regularization: grad += rate * sign(param). Name "Lasso".
class Lasso : public OptimizerHook {
 public:
  /// `rate`: the L1 coefficient (not checked).
  explicit Lasso(double rate) : rate_(rate) {}
  const char* name() const override { return "Lasso"; }
  void operator()(Optimizer& optimizer) override;
  /// The L1 coefficient.
  double rate() const { return rate_; }

 private:
  double rate_;
};

/// Scales all gradients by threshold / norm when their global L2 norm (over every parameter)
/// exceeds `threshold`. Name "GradientClipping". ValueError for a threshold that is not positive.
class GradientClipping : public OptimizerHook {
 public:
  /// ValueError for a threshold that is not positive.
  explicit GradientClipping(double threshold);
  const char* name() const override { return "GradientClipping"; }
  void operator()(Optimizer& optimizer) override;
  /// The largest global L2 norm left unscaled.
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
  /// ValueError when lower > upper.
  GradientHardClipping(double lower, double upper);
  const char* name() const override { return "GradientHardClipping"; }
  void operator()(Optimizer& optimizer) override;
  /// The lower clipping bound.
  double lower() const { return lower_; }
  /// The upper clipping bound.
  double upper() const { return upper_; }

 private:
  double lower_;
  double upper_;
};

/// Adds noise to every gradient (Chainer's GradientNoise; Neelakantan et al., "Adding Gradient
/// Noise Improves Learning for Very Deep Networks"). By default the noise is Gaussian with
/// variance eta / (1 + t)^0.55, t the number of updates the parameter's rule has made (0 at the
/// first step); the paper picks eta from {0.01, 0.3, 1.0}. Name "GradientNoise".
///
/// Each parameter's noise at each step comes from its own stream, keyed by the hook's seed, the
/// parameter's position in the target and t: every rank of a data-parallel job adds the same noise
/// (the replicas stay identical), and a resumed run adds what the uninterrupted one would have.
/// (Chainer draws from NumPy's global generator, so its values differ.)
class GradientNoise : public OptimizerHook {
 public:
  /// Returns the noise for `grad` (its shape and dtype, on its device) at the rule's step, drawn
  /// from `gen`.
  using NoiseFunc =
      std::function<Array(const Array& grad, const GradientNoise& hook, const UpdateRule& rule, Generator& gen)>;
  /// The default: normal noise with standard deviation sqrt(eta / (1 + rule.t)^0.55).
  static Array exponential_decay_noise(const Array& grad, const GradientNoise& hook, const UpdateRule& rule,
                                       Generator& gen);

  /// `seed` unset: Config::seed at construction. ValueError for an eta that is negative or not
  /// finite, or an empty noise function.
  explicit GradientNoise(double eta, NoiseFunc noise_func = exponential_decay_noise,
                         std::optional<uint64_t> seed = std::nullopt);
  const char* name() const override { return "GradientNoise"; }
  /// Adds the noise; ShapeError or DtypeError naming the parameter when the noise function returns
  /// an array of another shape or dtype than the gradient.
  void operator()(Optimizer& optimizer) override;
  /// The noise scale eta (the noise's variance is eta / (1 + t)^0.55 with the default function).
  double eta() const { return eta_; }
  /// The seed of the noise generator (Config::seed at construction when none was given).
  uint64_t seed() const { return seed_; }

 private:
  double eta_;
  NoiseFunc noise_func_;
  uint64_t seed_;
};

}  // namespace rensa::optimizers
