#pragma once
/// \file
/// Location-scale families: Cauchy, Gumbel, Laplace, Uniform and Pareto (Chainer's names and
/// parameters). Their draws are reparameterized: gradients flow to loc and scale.

#include "rensa/distributions/distribution.h"

namespace rensa::distributions {

/// Cauchy(loc, scale): density scale / (pi ((x - loc)^2 + scale^2)). Mean and variance are
/// undefined: NaN, as Chainer (which also warns).
class Cauchy : public Distribution {
 public:
  /// loc and scale > 0, broadcast to one batch shape.
  Cauchy(const Variable& loc, const Variable& scale);
  /// The location.
  const Variable& loc() const { return loc_; }
  /// The scale.
  const Variable& scale() const { return scale_; }

  std::string name() const override { return "Cauchy"; }
  Shape batch_shape() const override { return loc_.shape(); }
  std::map<std::string, Variable> params() const override { return {{"loc", loc_}, {"scale", scale_}}; }
  std::string support() const override { return "real"; }
  Variable log_prob(const Variable& x) const override;
  Variable cdf(const Variable& x) const override;
  Variable icdf(const Variable& x) const override;
  Variable entropy() const override;
  Variable mean() const override;
  Variable variance() const override;
  Variable sample_n(int64_t n, Generator* gen = nullptr) const override;

 private:
  Variable loc_, scale_;
};

/// Gumbel(loc, scale): density exp(-(y + exp(-y))) / scale with y = (x - loc) / scale.
class Gumbel : public Distribution {
 public:
  /// loc and scale > 0, broadcast to one batch shape.
  Gumbel(const Variable& loc, const Variable& scale);
  /// The location.
  const Variable& loc() const { return loc_; }
  /// The scale.
  const Variable& scale() const { return scale_; }
  /// log(scale).
  const Variable& log_scale() const { return log_scale_; }

  std::string name() const override { return "Gumbel"; }
  Shape batch_shape() const override { return loc_.shape(); }
  std::map<std::string, Variable> params() const override { return {{"loc", loc_}, {"scale", scale_}}; }
  std::string support() const override { return "real"; }
  Variable log_prob(const Variable& x) const override;
  Variable entropy() const override;
  Variable mean() const override;
  Variable variance() const override;
  Variable sample_n(int64_t n, Generator* gen = nullptr) const override;

 private:
  Variable loc_, scale_, log_scale_;
};

/// Laplace(loc, scale): density exp(-|x - loc| / scale) / (2 scale).
class Laplace : public Distribution {
 public:
  /// loc and scale > 0, broadcast to one batch shape.
  Laplace(const Variable& loc, const Variable& scale);
  /// The location (mean, mode).
  const Variable& loc() const { return loc_; }
  /// The scale.
  const Variable& scale() const { return scale_; }

  std::string name() const override { return "Laplace"; }
  Shape batch_shape() const override { return loc_.shape(); }
  std::map<std::string, Variable> params() const override { return {{"loc", loc_}, {"scale", scale_}}; }
  std::string support() const override { return "real"; }
  Variable log_prob(const Variable& x) const override;
  Variable prob(const Variable& x) const override;
  Variable cdf(const Variable& x) const override;
  Variable icdf(const Variable& x) const override;
  Variable entropy() const override;
  Variable mean() const override { return loc_; }
  Variable mode() const override { return loc_; }
  Variable variance() const override;
  Variable stddev() const override;
  Variable sample_n(int64_t n, Generator* gen = nullptr) const override;

 private:
  Variable loc_, scale_;
};

/// Uniform(low, high): density 1 / (high - low) on [low, high].
class Uniform : public Distribution {
 public:
  /// low < high, broadcast to one batch shape.
  Uniform(const Variable& low, const Variable& high);
  /// From loc = low and scale = high - low, Chainer's `Uniform(loc=..., scale=...)`.
  static Uniform from_loc_scale(const Variable& loc, const Variable& scale);
  /// The lower end.
  const Variable& low() const { return low_; }
  /// The upper end.
  const Variable& high() const { return high_; }
  /// low.
  const Variable& loc() const { return loc_; }
  /// high - low.
  const Variable& scale() const { return scale_; }

  std::string name() const override { return "Uniform"; }
  Shape batch_shape() const override { return low_.shape(); }
  /// {low, high} or {loc, scale}, whichever the distribution was made from (as Chainer).
  std::map<std::string, Variable> params() const override;
  std::string support() const override { return "[low, high]"; }
  /// -inf outside [low, high].
  Variable log_prob(const Variable& x) const override;
  /// clip((x - loc) / scale, 0, 1).
  Variable cdf(const Variable& x) const override;
  Variable icdf(const Variable& x) const override;
  Variable entropy() const override;
  Variable mean() const override;
  Variable variance() const override;
  Variable stddev() const override;
  Variable sample_n(int64_t n, Generator* gen = nullptr) const override;

 private:
  Uniform() = default;
  Variable low_, high_, loc_, scale_;
  bool from_loc_scale_ = false;
};

/// Pareto(scale, alpha): density alpha scale^alpha / x^(alpha+1) for x >= scale.
class Pareto : public Distribution {
 public:
  /// scale > 0 and alpha > 0, broadcast to one batch shape.
  Pareto(const Variable& scale, const Variable& alpha);
  /// The minimum value.
  const Variable& scale() const { return scale_; }
  /// The tail index.
  const Variable& alpha() const { return alpha_; }

  std::string name() const override { return "Pareto"; }
  Shape batch_shape() const override { return scale_.shape(); }
  std::map<std::string, Variable> params() const override { return {{"scale", scale_}, {"alpha", alpha_}}; }
  std::string support() const override { return "[scale, inf]"; }
  /// -inf for x < scale.
  Variable log_prob(const Variable& x) const override;
  Variable entropy() const override;
  /// inf where alpha <= 1.
  Variable mean() const override;
  /// inf where alpha <= 2.
  Variable variance() const override;
  /// scale * (1 + e) with e a Lomax draw: differentiable in scale, not in alpha (as Chainer).
  Variable sample_n(int64_t n, Generator* gen = nullptr) const override;

 private:
  Variable scale_, alpha_;
};

}  // namespace rensa::distributions
