#pragma once
/// \file
/// The gamma family and its relatives: Gamma, Chisquare, Exponential, Beta and Dirichlet (Chainer's
/// names and parameters).

#include "rensa/distributions/distribution.h"

namespace rensa::distributions {

/// Gamma(k, theta): shape k > 0, scale theta > 0; density x^(k-1) exp(-x/theta) / (Gamma(k) theta^k).
class Gamma : public Distribution {
 public:
  /// Shape k and scale theta, broadcast to one batch shape.
  Gamma(const Variable& k, const Variable& theta);
  /// The shape.
  const Variable& k() const { return k_; }
  /// The scale.
  const Variable& theta() const { return theta_; }

  std::string name() const override { return "Gamma"; }
  Shape batch_shape() const override { return k_.shape(); }
  std::map<std::string, Variable> params() const override { return {{"k", k_}, {"theta", theta_}}; }
  std::string support() const override { return "positive"; }
  /// -inf for x < 0.
  Variable log_prob(const Variable& x) const override;
  Variable entropy() const override;
  Variable mean() const override;
  Variable variance() const override;
  /// theta * g with g ~ Gamma(k, 1): differentiable in theta, not in k (as Chainer).
  Variable sample_n(int64_t n, Generator* gen = nullptr) const override;

 private:
  Variable k_, theta_;
};

/// Chisquare(k): the sum of squares of k standard normals, Gamma(k / 2, 2).
class Chisquare : public Distribution {
 public:
  /// Degrees of freedom k > 0.
  explicit Chisquare(const Variable& k);
  /// The degrees of freedom.
  const Variable& k() const { return k_; }

  std::string name() const override { return "Chisquare"; }
  Shape batch_shape() const override { return k_.shape(); }
  std::map<std::string, Variable> params() const override { return {{"k", k_}}; }
  std::string support() const override { return "positive"; }
  Variable log_prob(const Variable& x) const override;
  Variable entropy() const override;
  Variable mean() const override { return k_; }
  Variable variance() const override;
  /// Draws of k's dtype.
  Variable sample_n(int64_t n, Generator* gen = nullptr) const override;

 private:
  Variable k_;
};

/// Exponential(lam): density lam exp(-lam x) for x >= 0.
class Exponential : public Distribution {
 public:
  /// Rate lam > 0.
  explicit Exponential(const Variable& lam);
  /// The rate.
  const Variable& lam() const { return lam_; }
  /// log(lam).
  const Variable& log_lam() const { return log_lam_; }

  std::string name() const override { return "Exponential"; }
  Shape batch_shape() const override { return lam_.shape(); }
  std::map<std::string, Variable> params() const override { return {{"lam", lam_}}; }
  std::string support() const override { return "positive"; }
  /// -inf for x < 0.
  Variable log_prob(const Variable& x) const override;
  Variable cdf(const Variable& x) const override;
  Variable icdf(const Variable& x) const override;
  Variable entropy() const override;
  Variable mean() const override;
  Variable variance() const override;
  /// e / lam with e standard exponential: differentiable in lam.
  Variable sample_n(int64_t n, Generator* gen = nullptr) const override;

 private:
  Variable lam_, log_lam_;
};

/// Beta(a, b): density x^(a-1) (1-x)^(b-1) / B(a, b) on [0, 1].
class Beta : public Distribution {
 public:
  /// a > 0 and b > 0, broadcast to one batch shape.
  Beta(const Variable& a, const Variable& b);
  /// The first shape parameter.
  const Variable& a() const { return a_; }
  /// The second shape parameter.
  const Variable& b() const { return b_; }

  std::string name() const override { return "Beta"; }
  Shape batch_shape() const override { return a_.shape(); }
  std::map<std::string, Variable> params() const override { return {{"a", a_}, {"b", b_}}; }
  std::string support() const override { return "[0, 1]"; }
  /// -inf outside [0, 1].
  Variable log_prob(const Variable& x) const override;
  Variable entropy() const override;
  Variable mean() const override;
  Variable variance() const override;
  /// Draws of a's dtype.
  Variable sample_n(int64_t n, Generator* gen = nullptr) const override;

 private:
  Variable a_, b_;
};

/// Dirichlet(alpha): alpha (..., K) > 0; batch shape alpha.shape[:-1], event shape (K,).
class Dirichlet : public Distribution {
 public:
  /// Concentrations alpha (at least 1-d).
  explicit Dirichlet(const Variable& alpha);
  /// The concentrations.
  const Variable& alpha() const { return alpha_; }
  /// sum(alpha) over the last axis.
  const Variable& alpha0() const { return alpha0_; }

  std::string name() const override { return "Dirichlet"; }
  Shape batch_shape() const override;
  Shape event_shape() const override { return {alpha_.shape().back()}; }
  std::map<std::string, Variable> params() const override { return {{"alpha", alpha_}}; }
  std::string support() const override { return "[0, 1]"; }
  Variable log_prob(const Variable& x) const override;
  Variable entropy() const override;
  Variable mean() const override;
  Variable variance() const override;
  /// Draws of alpha's dtype (Chainer: float32).
  Variable sample_n(int64_t n, Generator* gen = nullptr) const override;

 private:
  Variable alpha_, alpha0_;
};

}  // namespace rensa::distributions
