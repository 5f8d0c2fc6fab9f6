#pragma once
/// \file
/// Discrete distributions: Bernoulli, Categorical, OneHotCategorical, Geometric and Poisson
/// (Chainer's names and parameters). Their draws are not differentiable.

#include "rensa/distributions/distribution.h"

namespace rensa::distributions {

/// Bernoulli(p): 1 with probability p, else 0.
class Bernoulli : public Distribution {
 public:
  /// From probabilities p. With binary_check, log_prob and prob of x outside {0, 1} are -inf and 0
  /// (and the gradient there is NaN, as Chainer).
  explicit Bernoulli(const Variable& p, bool binary_check = false);
  /// From logits log(p / (1 - p)), Chainer's `Bernoulli(logit=...)`.
  static Bernoulli from_logit(const Variable& logit, bool binary_check = false);
  /// The probability of 1.
  const Variable& p() const { return p_; }
  /// log(p / (1 - p)).
  const Variable& logit() const { return logit_; }

  std::string name() const override { return "Bernoulli"; }
  Shape batch_shape() const override { return p_.shape(); }
  /// {"logit": ...}, as Chainer.
  std::map<std::string, Variable> params() const override { return {{"logit", logit_}}; }
  std::string support() const override { return "{0, 1}"; }
  /// x log(p) + (1 - x) log(1 - p), computed from the logit (stable for large |logit|); the gradient
  /// flows to the parameter, not to x.
  Variable log_prob(const Variable& x) const override;
  Variable prob(const Variable& x) const override;
  Variable entropy() const override;
  Variable mean() const override { return p_; }
  Variable variance() const override;
  /// Draws of p's dtype (Chainer: int64), 0 or 1.
  Variable sample_n(int64_t n, Generator* gen = nullptr) const override;

 private:
  Bernoulli() = default;
  Variable p_, logit_;
  bool binary_check_ = false;
};

/// Categorical(p): class k of p.shape[-1] classes with probability p[..., k]. Batch shape
/// p.shape[:-1]; draws and log_prob's x are integer class indices.
class Categorical : public Distribution {
 public:
  /// From probabilities p (..., K) that sum to 1 along the last axis.
  explicit Categorical(const Variable& p);
  /// From unnormalized log-probabilities, Chainer's `Categorical(logit=...)`.
  static Categorical from_logit(const Variable& logit);
  /// The probabilities, (..., K).
  const Variable& p() const { return p_; }
  /// log(p).
  const Variable& log_p() const { return log_p_; }

  std::string name() const override { return "Categorical"; }
  Shape batch_shape() const override;
  std::map<std::string, Variable> params() const override { return {{"p", p_}}; }
  /// log p[..., x] for integer x (int32 or int64) broadcasting with the batch shape; IndexError for
  /// a class outside [0, K).
  Variable log_prob(const Variable& x) const override;
  Variable entropy() const override;
  /// int32 class indices (Chainer: int64).
  Variable sample_n(int64_t n, Generator* gen = nullptr) const override;

 private:
  Categorical() = default;
  Variable p_, log_p_;
};

/// OneHotCategorical(p): a one-hot vector of p.shape[-1] entries; event shape (K,).
class OneHotCategorical : public Distribution {
 public:
  /// From probabilities p (..., K).
  explicit OneHotCategorical(const Variable& p);
  /// The probabilities.
  const Variable& p() const { return p_; }
  /// log(p).
  const Variable& log_p() const { return log_p_; }

  std::string name() const override { return "OneHotCategorical"; }
  Shape batch_shape() const override;
  Shape event_shape() const override { return {p_.shape().back()}; }
  std::map<std::string, Variable> params() const override { return {{"p", p_}}; }
  /// sum(log(p) * x) over the last axis.
  Variable log_prob(const Variable& x) const override;
  Variable mean() const override { return p_; }
  Variable variance() const override;
  /// One-hot draws of p's dtype.
  Variable sample_n(int64_t n, Generator* gen = nullptr) const override;

 private:
  Variable p_, log_p_;
};

/// Geometric(p): the number of trials up to and including the first success, x = 1, 2, ...
class Geometric : public Distribution {
 public:
  /// Success probability p in (0, 1].
  explicit Geometric(const Variable& p);
  /// The success probability.
  const Variable& p() const { return p_; }

  std::string name() const override { return "Geometric"; }
  Shape batch_shape() const override { return p_.shape(); }
  std::map<std::string, Variable> params() const override { return {{"p", p_}}; }
  std::string support() const override { return "positive integer"; }
  Variable log_prob(const Variable& x) const override;
  Variable mean() const override;
  Variable variance() const override;
  /// Draws of p's dtype.
  Variable sample_n(int64_t n, Generator* gen = nullptr) const override;

 private:
  Variable p_;
};

/// Poisson(lam): x = 0, 1, 2, ... with mass lam^x exp(-lam) / x!.
class Poisson : public Distribution {
 public:
  /// Rate lam > 0.
  explicit Poisson(const Variable& lam);
  /// The rate.
  const Variable& lam() const { return lam_; }
  /// log(lam).
  const Variable& log_lam() const { return log_lam_; }

  std::string name() const override { return "Poisson"; }
  Shape batch_shape() const override { return lam_.shape(); }
  std::map<std::string, Variable> params() const override { return {{"lam", lam_}}; }
  std::string support() const override { return "non negative integer"; }
  /// x of any real or integer dtype (converted to lam's); not differentiated in x, as Chainer.
  Variable log_prob(const Variable& x) const override;
  Variable mean() const override { return lam_; }
  Variable variance() const override { return lam_; }
  /// Draws of lam's dtype (Chainer: float32).
  Variable sample_n(int64_t n, Generator* gen = nullptr) const override;

 private:
  Variable lam_, log_lam_;
};

}  // namespace rensa::distributions
