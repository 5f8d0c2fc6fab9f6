#pragma once
/// \file
/// The normal family: Normal, LogNormal and MultivariateNormal (Chainer's names and parameters).

#include "rensa/distributions/distribution.h"

namespace rensa::distributions {

/// Normal(loc, scale): density exp(-(x - loc)^2 / (2 scale^2)) / sqrt(2 pi scale^2).
class Normal : public Distribution {
 public:
  /// loc (mean) and scale (standard deviation), broadcast to one batch shape.
  Normal(const Variable& loc, const Variable& scale);
  /// From log(scale), Chainer's `Normal(loc, log_scale=...)`.
  static Normal with_log_scale(const Variable& loc, const Variable& log_scale);

  /// The mean.
  const Variable& loc() const { return loc_; }
  /// The standard deviation.
  const Variable& scale() const { return scale_; }
  /// log(scale), computed once.
  const Variable& log_scale() const { return log_scale_; }

  std::string name() const override { return "Normal"; }
  Shape batch_shape() const override { return loc_.shape(); }
  std::map<std::string, Variable> params() const override { return {{"loc", loc_}, {"scale", scale_}}; }
  std::string support() const override { return "real"; }
  Variable log_prob(const Variable& x) const override;
  Variable prob(const Variable& x) const override;
  Variable cdf(const Variable& x) const override;
  Variable log_cdf(const Variable& x) const override;
  Variable icdf(const Variable& x) const override;
  Variable survival_function(const Variable& x) const override;
  Variable log_survival_function(const Variable& x) const override;
  Variable entropy() const override;
  Variable mean() const override { return loc_; }
  Variable variance() const override;
  Variable stddev() const override { return scale_; }
  Variable sample_n(int64_t n, Generator* gen = nullptr) const override;

 private:
  Normal() = default;
  Variable loc_, scale_, log_scale_;
};

/// LogNormal(mu, sigma): the distribution of exp(y) for y ~ Normal(mu, sigma).
class LogNormal : public Distribution {
 public:
  /// mu and sigma of the underlying normal, broadcast to one batch shape.
  LogNormal(const Variable& mu, const Variable& sigma);
  /// The underlying normal's mean.
  const Variable& mu() const { return mu_; }
  /// The underlying normal's standard deviation.
  const Variable& sigma() const { return sigma_; }
  /// log(sigma).
  const Variable& log_sigma() const { return log_sigma_; }

  std::string name() const override { return "LogNormal"; }
  Shape batch_shape() const override { return mu_.shape(); }
  std::map<std::string, Variable> params() const override { return {{"mu", mu_}, {"sigma", sigma_}}; }
  std::string support() const override { return "positive"; }
  Variable log_prob(const Variable& x) const override;
  Variable entropy() const override;
  Variable mean() const override;
  Variable variance() const override;
  Variable sample_n(int64_t n, Generator* gen = nullptr) const override;

 private:
  Variable mu_, sigma_, log_sigma_;
};

/// MultivariateNormal(loc, scale_tril): loc (..., d) and the lower-triangular Cholesky factor
/// scale_tril (..., d, d) of the covariance; only the lower triangle is read (and differentiated),
/// as Chainer's triangular solve. Batch shape loc.shape[:-1], event shape (d,).
class MultivariateNormal : public Distribution {
 public:
  /// ShapeError unless scale_tril is loc.shape + (d,) with d = loc.shape[-1].
  MultivariateNormal(const Variable& loc, const Variable& scale_tril);
  /// The mean, (..., d).
  const Variable& loc() const { return loc_; }
  /// The Cholesky factor, (..., d, d).
  const Variable& scale_tril() const { return scale_tril_; }
  /// The event size d.
  int64_t d() const { return loc_.shape().back(); }
  /// log|det(scale_tril)| per distribution.
  const Variable& logdet_scale() const { return logdet_scale_; }
  /// The inverse of scale_tril's lower triangle, (..., d, d).
  Variable scale_tril_inv() const;

  std::string name() const override { return "MultivariateNormal"; }
  Shape batch_shape() const override;
  Shape event_shape() const override { return {d()}; }
  std::map<std::string, Variable> params() const override { return {{"loc", loc_}, {"scale_tril", scale_tril_}}; }
  std::string support() const override { return "real"; }
  Variable log_prob(const Variable& x) const override;
  Variable entropy() const override;
  Variable mean() const override { return loc_; }
  Variable covariance() const override;
  Variable sample_n(int64_t n, Generator* gen = nullptr) const override;

 private:
  Variable loc_, scale_tril_, logdet_scale_;
};

}  // namespace rensa::distributions
