#include "rensa/distributions/normal.h"

#include <cmath>
#include <numbers>

#include "rensa/core/error.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/array_rearrange.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/linalg.h"
#include "rensa/functions/reduction.h"
#include "rensa/functions/special.h"
#include "src/distributions/builtin_kls.h"
#include "src/distributions/common.h"

namespace rensa::distributions {

namespace F = rensa::functions;

namespace {
const double kEntropyC = 0.5 * std::log(2.0 * std::numbers::pi * std::numbers::e);
const double kLogProbC = -0.5 * std::log(2.0 * std::numbers::pi);
const double kProbC = 1.0 / std::sqrt(2.0 * std::numbers::pi);

Variable standard_normal(const Shape& batch, int64_t n, const Variable& like, Generator* gen) {
  Shape shape = batch;
  shape.insert(0, n);
  return Variable(random::normal(shape, 0.0, 1.0, like.dtype(), like.device(), &detail::generator_or_default(gen)));
}
}  // namespace

// ---- Normal -------------------------------------------------------------------------------------

Normal::Normal(const Variable& loc, const Variable& scale) {
  auto p = detail::broadcast_params("Normal", {{"loc", loc}, {"scale", scale}});
  loc_ = p[0];
  scale_ = p[1];
  log_scale_ = F::log(scale_);
}

Normal Normal::with_log_scale(const Variable& loc, const Variable& log_scale) {
  auto p = detail::broadcast_params("Normal", {{"loc", loc}, {"log_scale", log_scale}});
  Normal n;
  n.loc_ = p[0];
  n.log_scale_ = p[1];
  n.scale_ = F::exp(n.log_scale_);
  return n;
}

Variable Normal::log_prob(const Variable& x) const {
  check_x("log_prob", x, loc_.dtype());
  return kLogProbC - log_scale_ - 0.5 * F::square(x - loc_) / variance();
}

Variable Normal::prob(const Variable& x) const {
  check_x("prob", x, loc_.dtype());
  return (kProbC / scale_) * F::exp(-0.5 * F::square(x - loc_) / variance());
}

Variable Normal::cdf(const Variable& x) const {
  check_x("cdf", x, loc_.dtype());
  return F::ndtr((x - loc_) / scale_);
}

Variable Normal::log_cdf(const Variable& x) const {
  check_x("log_cdf", x, loc_.dtype());
  return F::log_ndtr((x - loc_) / scale_);
}

Variable Normal::icdf(const Variable& x) const {
  check_x("icdf", x, loc_.dtype());
  return loc_ + scale_ * F::ndtri(x);
}

Variable Normal::survival_function(const Variable& x) const {
  check_x("survival_function", x, loc_.dtype());
  return F::ndtr((loc_ - x) / scale_);
}

Variable Normal::log_survival_function(const Variable& x) const {
  check_x("log_survival_function", x, loc_.dtype());
  return F::log_ndtr((loc_ - x) / scale_);
}

Variable Normal::entropy() const {
  return log_scale_ + kEntropyC;
}
Variable Normal::variance() const {
  return F::square(scale_);
}

Variable Normal::sample_n(int64_t n, Generator* gen) const {
  detail::check_sample_count(name(), n);
  return loc_ + scale_ * standard_normal(loc_.shape(), n, loc_, gen);
}

// ---- LogNormal ----------------------------------------------------------------------------------

LogNormal::LogNormal(const Variable& mu, const Variable& sigma) {
  auto p = detail::broadcast_params("LogNormal", {{"mu", mu}, {"sigma", sigma}});
  mu_ = p[0];
  sigma_ = p[1];
  log_sigma_ = F::log(sigma_);
}

Variable LogNormal::log_prob(const Variable& x) const {
  check_x("log_prob", x, mu_.dtype());
  const Variable logx = F::log(x);
  return kLogProbC - log_sigma_ - logx - 0.5 * F::square(logx - mu_) / F::square(sigma_);
}

Variable LogNormal::entropy() const {
  return 0.5 - kLogProbC + log_sigma_ + mu_;
}
Variable LogNormal::mean() const {
  return F::exp(mu_ + 0.5 * F::square(sigma_));
}
Variable LogNormal::variance() const {
  return F::exp(2.0 * mu_ + F::square(sigma_)) * (F::exp(F::square(sigma_)) - 1.0);
}

Variable LogNormal::sample_n(int64_t n, Generator* gen) const {
  detail::check_sample_count(name(), n);
  return F::exp(sigma_ * standard_normal(mu_.shape(), n, mu_, gen) + mu_);
}

// ---- MultivariateNormal -------------------------------------------------------------------------

MultivariateNormal::MultivariateNormal(const Variable& loc, const Variable& scale_tril) {
  detail::check_vector_param("MultivariateNormal", "loc", loc);
  detail::check_vector_param("MultivariateNormal", "scale_tril", scale_tril);
  Shape want = loc.shape();
  want.push_back(loc.shape().back());
  RENSA_CHECK(scale_tril.shape() == want, ShapeError, "MultivariateNormal: scale_tril ", scale_tril.shape(),
              " must be loc's shape ", loc.shape(), " plus (d,) = ", want);
  RENSA_CHECK(scale_tril.dtype() == loc.dtype(), DtypeError, "MultivariateNormal: scale_tril is ",
              dtype_name(scale_tril.dtype()), " but loc is ", dtype_name(loc.dtype()));
  loc_ = loc;
  scale_tril_ = scale_tril;
  logdet_scale_ = F::sum(F::log(F::abs(F::diagonal(scale_tril_, 0, -2, -1))), {-1});
}

Shape MultivariateNormal::batch_shape() const {
  Shape s = loc_.shape();
  s.resize(s.size() - 1);
  return s;
}

Variable MultivariateNormal::scale_tril_inv() const {
  const int64_t n = d();
  Array lower = Array::empty({n, n}, Dtype::bool_);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) lower.data<bool>()[i * n + j] = j <= i;
  }
  const Variable tril = F::where(lower.to(loc_.device()), scale_tril_, detail::constant(scale_tril_, 0.0));
  const Variable inv = F::batch_inv(F::reshape(tril, {batch_shape().numel(), n, n}));
  return F::reshape(inv, scale_tril_.shape());
}

Variable MultivariateNormal::log_prob(const Variable& x) const {
  check_x("log_prob", x, loc_.dtype());
  const Variable y = F::matmul(scale_tril_inv(), F::expand_dims(x - loc_, -1));
  const Variable m = F::sum(F::square(y), {-2, -1});
  const Variable logz = kLogProbC * static_cast<double>(d()) - logdet_scale_;
  return logz - 0.5 * m;
}

Variable MultivariateNormal::entropy() const {
  return logdet_scale_ + kEntropyC * static_cast<double>(d());
}

Variable MultivariateNormal::covariance() const {
  return F::matmul(scale_tril_, scale_tril_, false, true);
}

Variable MultivariateNormal::sample_n(int64_t n, Generator* gen) const {
  detail::check_sample_count(name(), n);
  Shape shape = loc_.shape();
  shape.push_back(1);
  const Variable eps = standard_normal(shape, n, loc_, gen);
  return loc_ + F::squeeze(F::matmul(scale_tril_, eps), {-1});
}

// ---- KL divergences -----------------------------------------------------------------------------

void detail::register_normal_kls(const AddKL& add) {
  add_kl<Normal, Normal>(add, [](const Normal& p, const Normal& q) {
    return q.log_scale() - p.log_scale() + 0.5 * (p.variance() + F::square(p.loc() - q.loc())) / q.variance() - 0.5;
  });
  add_kl<LogNormal, LogNormal>(add, [](const LogNormal& p, const LogNormal& q) {
    return 0.5 * (F::square(p.mu() - q.mu()) + F::square(p.sigma())) / F::square(q.sigma()) - 0.5 + q.log_sigma() -
           p.log_sigma();
  });
  add_kl<MultivariateNormal, MultivariateNormal>(add, [](const MultivariateNormal& p, const MultivariateNormal& q) {
    const Variable inv2 = q.scale_tril_inv();
    const Variable trace = F::sum(F::square(F::matmul(inv2, p.scale_tril())), {-2, -1});
    const Variable mah = F::sum(F::square(F::matmul(inv2, F::expand_dims(p.loc() - q.loc(), -1))), {-2, -1});
    return q.logdet_scale() - p.logdet_scale() + 0.5 * trace + 0.5 * mah - 0.5 * static_cast<double>(p.d());
  });
}

}  // namespace rensa::distributions
