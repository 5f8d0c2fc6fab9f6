#include "rensa/distributions/independent.h"

#include "rensa/core/error.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/array_rearrange.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/reduction.h"
#include "src/distributions/builtin_kls.h"
#include "src/distributions/common.h"

namespace rensa::distributions {

namespace F = rensa::functions;

namespace {
// The last n axes, (-n, ..., -1).
Shape last_axes(int64_t n) {
  Shape axes;
  for (int64_t i = -n; i < 0; ++i) axes.push_back(i);
  return axes;
}
}  // namespace

Independent::Independent(std::shared_ptr<const Distribution> distribution,
                         std::optional<int64_t> reinterpreted_batch_ndims)
    : base_(std::move(distribution)) {
  RENSA_CHECK(base_ != nullptr, ValueError, "Independent: the distribution is null");
  const Shape batch = base_->batch_shape();
  const int64_t ndim = static_cast<int64_t>(batch.size());
  ndims_ = reinterpreted_batch_ndims.value_or(std::max<int64_t>(0, ndim - 1));
  RENSA_CHECK(ndims_ >= 0 && ndims_ <= ndim, ValueError, "Independent: reinterpreted_batch_ndims must be in [0, ", ndim,
              "] for ", base_->name(), " of batch shape ", batch, ", got ", ndims_);
  for (int64_t i = 0; i < ndim; ++i) (i < ndim - ndims_ ? batch_shape_ : event_shape_).push_back(batch[i]);
  for (int64_t e : base_->event_shape()) event_shape_.push_back(e);
}

Variable Independent::reduce_sum(const Variable& v) const {
  return ndims_ == 0 ? v : F::sum(v, last_axes(ndims_));
}
Variable Independent::reduce_prod(const Variable& v) const {
  return ndims_ == 0 ? v : F::prod(v, last_axes(ndims_));
}

Variable Independent::log_prob(const Variable& x) const {
  return reduce_sum(base_->log_prob(x));
}
Variable Independent::prob(const Variable& x) const {
  return reduce_prod(base_->prob(x));
}
Variable Independent::cdf(const Variable& x) const {
  return reduce_prod(base_->cdf(x));
}
Variable Independent::log_cdf(const Variable& x) const {
  return reduce_sum(base_->log_cdf(x));
}
Variable Independent::icdf(const Variable&) const {
  throw NotImplementedError(
      "Independent.icdf: the cumulative distribution function of a multivariate variable is "
      "not invertible");
}
Variable Independent::survival_function(const Variable& x) const {
  return reduce_prod(base_->survival_function(x));
}
Variable Independent::log_survival_function(const Variable& x) const {
  return reduce_sum(base_->log_survival_function(x));
}
Variable Independent::perplexity(const Variable& x) const {
  return reduce_prod(base_->perplexity(x));
}
Variable Independent::entropy() const {
  return reduce_sum(base_->entropy());
}

Variable Independent::covariance() const {
  // The base's (n, d, d) covariances as the diagonal blocks of one (n d, n d) matrix per batch entry.
  const Shape base_batch = base_->batch_shape();
  int64_t n = 1;
  for (std::size_t i = batch_shape_.size(); i < base_batch.size(); ++i) n *= base_batch[i];
  const int64_t d = base_->event_shape().numel();
  const int64_t nb = static_cast<int64_t>(batch_shape_.size());
  Shape blocks = batch_shape_;
  for (int64_t v : {int64_t{1}, n, d, d}) blocks.push_back(v);
  Variable cov = F::repeat(F::reshape(base_->covariance(), blocks), n, nb);  // (..., n, n, d, d): [i, j] = cov_j
  Shape axes;
  for (int64_t i = 0; i < nb; ++i) axes.push_back(i);
  for (int64_t v : {nb, nb + 2, nb + 1, nb + 3}) axes.push_back(v);
  Shape square = batch_shape_;
  square.push_back(n * d);
  square.push_back(n * d);
  cov = F::reshape(F::transpose(cov, axes), square);
  Array mask = Array::empty({n * d, n * d}, Dtype::bool_);
  for (int64_t i = 0; i < n * d; ++i) {
    for (int64_t j = 0; j < n * d; ++j) mask.data<bool>()[i * n * d + j] = i / d == j / d;
  }
  return F::where(mask.to(cov.device()), cov, detail::constant(cov, 0.0));
}

void detail::register_independent_kls(const AddKL& add) {
  add_kl<Independent, Independent>(add, [](const Independent& p, const Independent& q) {
    RENSA_CHECK(p.distribution().event_shape() == q.distribution().event_shape(), NotImplementedError,
                "kl_divergence: Independents over distributions of different event shapes ",
                p.distribution().event_shape(), " and ", q.distribution().event_shape(), " (as Chainer)");
    const Variable kl = kl_divergence(p.distribution(), q.distribution());
    const int64_t n = static_cast<int64_t>(p.event_shape().size() - p.distribution().event_shape().size());
    return n == 0 ? kl : F::sum(kl, last_axes(n));
  });
}

}  // namespace rensa::distributions
