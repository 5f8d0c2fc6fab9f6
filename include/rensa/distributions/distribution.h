#pragma once
/// \file
/// Probability distributions with Chainer's names and semantics (chainer.distributions): the base
/// class, kl_divergence and its registry. Every statistic is a Variable made of differentiable
/// functions, so gradients flow to the parameters (and to x where the density depends on it).

#include <functional>
#include <map>
#include <string>
#include <typeindex>

#include "rensa/core/random.h"
#include "rensa/core/variable.h"

namespace rensa::distributions {

/// A batch of distributions of one family: batch_shape() independent distributions, each over
/// values of event_shape(). Parameters are Variables of a floating dtype; each subclass broadcasts
/// them to one batch shape at construction (ShapeError naming the class when they do not).
///
/// A statistic a family does not define throws NotImplementedError naming the class and method, as
/// Chainer raises NotImplementedError. Where Chainer's base class raises, rensa's gives the generic
/// definition: prob = exp(log_prob), log_cdf = log(cdf), survival_function = 1 - cdf,
/// log_survival_function = log(survival_function), stddev = sqrt(variance), perplexity(x) =
/// exp(-log_prob(x)). Methods taking x check that it has the parameters' dtype and broadcasts with
/// batch_shape + event_shape (DtypeError, ShapeError naming the class and method).
class Distribution {
 public:
  virtual ~Distribution() = default;
  /// The class name, as in Chainer ("Normal").
  virtual std::string name() const = 0;
  /// The shape of the batch of distributions.
  virtual Shape batch_shape() const = 0;
  /// The shape of one draw: () for scalar distributions.
  virtual Shape event_shape() const { return {}; }
  /// The parameters by Chainer's names (Normal: loc and scale).
  virtual std::map<std::string, Variable> params() const = 0;
  /// The support, as Chainer writes it ("real", "positive", "[0, 1]", ...).
  virtual std::string support() const;

  /// Log density (or log mass) at x, of shape broadcast(x, batch_shape + event_shape) less the event
  /// axes.
  virtual Variable log_prob(const Variable& x) const;
  /// Density (or mass) at x.
  virtual Variable prob(const Variable& x) const;
  /// Cumulative distribution function at x.
  virtual Variable cdf(const Variable& x) const;
  /// log(cdf(x)).
  virtual Variable log_cdf(const Variable& x) const;
  /// Inverse of the cumulative distribution function at probabilities x.
  virtual Variable icdf(const Variable& x) const;
  /// 1 - cdf(x).
  virtual Variable survival_function(const Variable& x) const;
  /// log(1 - cdf(x)).
  virtual Variable log_survival_function(const Variable& x) const;
  /// exp(-log_prob(x)).
  virtual Variable perplexity(const Variable& x) const;

  /// Entropy of each distribution in the batch (shape batch_shape).
  virtual Variable entropy() const;
  /// Mean (shape batch_shape + event_shape).
  virtual Variable mean() const;
  /// Mode.
  virtual Variable mode() const;
  /// Variance.
  virtual Variable variance() const;
  /// Standard deviation.
  virtual Variable stddev() const;
  /// Covariance matrix (batch_shape + (d, d)) of a multivariate distribution.
  virtual Variable covariance() const;

  /// Draws of shape sample_shape + batch_shape + event_shape. `gen` defaults to the calling thread's
  /// default generator; the same generator state gives the same draws. Where Chainer's draw is
  /// reparameterized (Normal, LogNormal, MultivariateNormal, Cauchy, Exponential, Gamma in theta,
  /// Gumbel, Laplace, Pareto in scale, Uniform), gradients flow to the parameters.
  Variable sample(const Shape& sample_shape = {}, Generator* gen = nullptr) const;
  /// n draws: shape (n,) + batch_shape + event_shape. ValueError for negative n.
  virtual Variable sample_n(int64_t n, Generator* gen = nullptr) const;

 protected:
  /// Throws NotImplementedError naming the distribution and `method` (as Chainer's undefined methods).
  [[noreturn]] void not_implemented(const char* method) const;
  /// Checks x against the parameters' dtype and batch_shape + event_shape (see the class comment).
  void check_x(const char* method, const Variable& x, Dtype dtype) const;
};

/// KL(d1 || d2) for two distributions of a registered pair of classes.
/// Registered: each of the 17 families with itself, as Chainer (Bernoulli, Beta, Categorical,
/// Dirichlet, Exponential, Gamma, Geometric, Gumbel, Independent, Laplace, LogNormal,
/// MultivariateNormal, Normal, OneHotCategorical, Pareto, Poisson, Uniform). NotImplementedError
/// naming both classes for any other pair; ShapeError unless the event shapes are equal and the
/// batch shapes broadcast (the result has the broadcast batch shape).
Variable kl_divergence(const Distribution& d1, const Distribution& d2);

/// Cross entropy H(d1, d2) = entropy(d1) + KL(d1 || d2).
Variable cross_entropy(const Distribution& d1, const Distribution& d2);

/// A KL divergence between two classes, called with the two distributions as their base class.
using KLFunction = std::function<Variable(const Distribution&, const Distribution&)>;

/// Registers (or replaces) the KL divergence between classes d1 and d2 (exact types, as Chainer's
/// registry: a subclass needs its own entry). Thread-safe.
void register_kl(std::type_index d1, std::type_index d2, KLFunction kl);

/// Typed form: `register_kl<MyDist, Normal>([](const MyDist& p, const Normal& q) { ... });`
template <class D1, class D2, class F>
void register_kl(F kl) {
  register_kl(typeid(D1), typeid(D2), [kl](const Distribution& a, const Distribution& b) {
    return kl(static_cast<const D1&>(a), static_cast<const D2&>(b));
  });
}

}  // namespace rensa::distributions
