#pragma once
/// \file
/// Independent: reinterprets batch axes of a distribution as event axes (Chainer's Independent).

#include <memory>
#include <optional>

#include "rensa/distributions/distribution.h"

namespace rensa::distributions {

/// Treats the last `reinterpreted_batch_ndims` batch axes of `distribution` as event axes:
/// log_prob, entropy, log_cdf and log_survival_function sum over them; prob, cdf,
/// survival_function and perplexity multiply. A diagonal Normal over (B, D) becomes B distributions
/// over D-vectors with `Independent(Normal(loc, scale), 1)`.
class Independent : public Distribution {
 public:
  /// reinterpreted_batch_ndims defaults to all batch axes but the first (Chainer's default);
  /// ValueError when it is negative or more than the batch axes.
  explicit Independent(std::shared_ptr<const Distribution> distribution,
                       std::optional<int64_t> reinterpreted_batch_ndims = std::nullopt);
  /// Copies `distribution` into the Independent.
  template <class D>
  requires std::is_base_of_v<Distribution, D>
  explicit Independent(D distribution, std::optional<int64_t> reinterpreted_batch_ndims = std::nullopt)
      : Independent(std::make_shared<const D>(std::move(distribution)), reinterpreted_batch_ndims) {}

  /// The underlying distribution.
  const Distribution& distribution() const { return *base_; }
  /// The number of batch axes reinterpreted as event axes.
  int64_t reinterpreted_batch_ndims() const { return ndims_; }

  std::string name() const override { return "Independent"; }
  Shape batch_shape() const override { return batch_shape_; }
  Shape event_shape() const override { return event_shape_; }
  std::map<std::string, Variable> params() const override { return base_->params(); }
  std::string support() const override { return base_->support(); }
  Variable log_prob(const Variable& x) const override;
  Variable prob(const Variable& x) const override;
  Variable cdf(const Variable& x) const override;
  Variable log_cdf(const Variable& x) const override;
  /// Not invertible for a multivariate variable: NotImplementedError.
  Variable icdf(const Variable& x) const override;
  Variable survival_function(const Variable& x) const override;
  Variable log_survival_function(const Variable& x) const override;
  Variable perplexity(const Variable& x) const override;
  Variable entropy() const override;
  Variable mean() const override { return base_->mean(); }
  Variable mode() const override { return base_->mode(); }
  Variable variance() const override { return base_->variance(); }
  Variable stddev() const override { return base_->stddev(); }
  /// Block-diagonal: batch_shape + (n d, n d), n the reinterpreted batch size and d the event size.
  Variable covariance() const override;
  Variable sample_n(int64_t n, Generator* gen = nullptr) const override { return base_->sample_n(n, gen); }

 private:
  Variable reduce_sum(const Variable& v) const;
  Variable reduce_prod(const Variable& v) const;
  std::shared_ptr<const Distribution> base_;
  int64_t ndims_ = 0;
  Shape batch_shape_, event_shape_;
};

}  // namespace rensa::distributions
