#include "rensa/distributions/gamma.h"

#include <cmath>
#include <numbers>

#include "rensa/core/error.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/exponential.h"
#include "rensa/functions/reduction.h"
#include "rensa/functions/special.h"
#include "src/distributions/builtin_kls.h"
#include "src/distributions/common.h"

namespace rensa::distributions {

namespace F = rensa::functions;

namespace {
// logp where lo <= x <= hi, -inf elsewhere (Chainer's masks on the support).
Variable on_support(const Variable& logp, const Variable& x, double lo, double hi) {
  const Array inside = detail::compare(x.array(), Array::scalar(0.0, x.dtype()),
                                       [lo, hi](double a, double) { return a >= lo && a <= hi; });
  return F::where(inside, logp, detail::constant(logp, -INFINITY));
}

// Dirichlet's log B(x) = sum(lgamma(x)) - lgamma(sum(x)) over the last axis.
Variable lbeta_vector(const Variable& x) {
  return F::sum(F::lgamma(x), {-1}) - F::lgamma(F::sum(x, {-1}));
}

Variable gamma_draws(int64_t n, const Variable& k, double k_scale, Generator* gen) {
  return Variable(
      detail::draw_elementwise(n, k.shape(), k.dtype(), {k.array()}, detail::generator_or_default(gen),
                               [k_scale](const double* p, detail::Stream& s) { return s.gamma(p[0] * k_scale); }));
}
}  // namespace

// ---- Gamma --------------------------------------------------------------------------------------

Gamma::Gamma(const Variable& k, const Variable& theta) {
  auto p = detail::broadcast_params("Gamma", {{"k", k}, {"theta", theta}});
  k_ = p[0];
  theta_ = p[1];
}

Variable Gamma::log_prob(const Variable& x) const {
  check_x("log_prob", x, k_.dtype());
  const Variable logp = -F::lgamma(k_) - k_ * F::log(theta_) + (k_ - 1.0) * F::log(x) - x / theta_;
  return on_support(logp, x, 0.0, INFINITY);
}

Variable Gamma::entropy() const {
  return k_ + F::log(theta_) + F::lgamma(k_) + (1.0 - k_) * F::digamma(k_);
}
Variable Gamma::mean() const {
  return k_ * theta_;
}
Variable Gamma::variance() const {
  return mean() * theta_;
}

Variable Gamma::sample_n(int64_t n, Generator* gen) const {
  detail::check_sample_count(name(), n);
  return theta_ * gamma_draws(n, k_, 1.0, gen);
}

// ---- Chisquare ----------------------------------------------------------------------------------

Chisquare::Chisquare(const Variable& k) {
  k_ = detail::broadcast_params("Chisquare", {{"k", k}})[0];
}

Variable Chisquare::log_prob(const Variable& x) const {
  check_x("log_prob", x, k_.dtype());
  const Variable half_k = 0.5 * k_;
  return -F::lgamma(half_k) - half_k * std::numbers::ln2 + (half_k - 1.0) * F::log(x) - 0.5 * x;
}

Variable Chisquare::entropy() const {
  const Variable half_k = 0.5 * k_;
  return half_k + std::numbers::ln2 + F::lgamma(half_k) + (1.0 - half_k) * F::digamma(half_k);
}

Variable Chisquare::variance() const {
  return 2.0 * k_;
}

Variable Chisquare::sample_n(int64_t n, Generator* gen) const {
  detail::check_sample_count(name(), n);
  return 2.0 * gamma_draws(n, k_, 0.5, gen);
}

// ---- Exponential --------------------------------------------------------------------------------

Exponential::Exponential(const Variable& lam) {
  lam_ = detail::broadcast_params("Exponential", {{"lam", lam}})[0];
  log_lam_ = F::log(lam_);
}

Variable Exponential::log_prob(const Variable& x) const {
  check_x("log_prob", x, lam_.dtype());
  return on_support(log_lam_ - lam_ * x, x, 0.0, INFINITY);
}

Variable Exponential::cdf(const Variable& x) const {
  check_x("cdf", x, lam_.dtype());
  return -F::expm1(-lam_ * x);
}

Variable Exponential::icdf(const Variable& x) const {
  check_x("icdf", x, lam_.dtype());
  return -1.0 / lam_ * F::log1p(-x);
}

Variable Exponential::entropy() const {
  return 1.0 - log_lam_;
}
Variable Exponential::mean() const {
  return 1.0 / lam_;
}
Variable Exponential::variance() const {
  return F::square(mean());
}

Variable Exponential::sample_n(int64_t n, Generator* gen) const {
  detail::check_sample_count(name(), n);
  const Array e = detail::draw_elementwise(n, lam_.shape(), lam_.dtype(), {}, detail::generator_or_default(gen),
                                           [](const double*, detail::Stream& s) { return s.exponential(); });
  return Variable(e) / lam_;
}

// ---- Beta ---------------------------------------------------------------------------------------

Beta::Beta(const Variable& a, const Variable& b) {
  auto p = detail::broadcast_params("Beta", {{"a", a}, {"b", b}});
  a_ = p[0];
  b_ = p[1];
}

Variable Beta::log_prob(const Variable& x) const {
  check_x("log_prob", x, a_.dtype());
  const Variable logp = (a_ - 1.0) * F::log(x) + (b_ - 1.0) * F::log(1.0 - x) - detail::lbeta(a_, b_);
  return on_support(logp, x, 0.0, 1.0);
}

Variable Beta::entropy() const {
  const Variable apb = a_ + b_;
  return detail::lbeta(a_, b_) - (a_ - 1.0) * F::digamma(a_) - (b_ - 1.0) * F::digamma(b_) +
         (apb - 2.0) * F::digamma(apb);
}

Variable Beta::mean() const {
  return a_ / (a_ + b_);
}
Variable Beta::variance() const {
  const Variable apb = a_ + b_;
  return a_ * b_ / F::square(apb) / (apb + 1.0);
}

Variable Beta::sample_n(int64_t n, Generator* gen) const {
  detail::check_sample_count(name(), n);
  return Variable(detail::draw_elementwise(n, a_.shape(), a_.dtype(), {a_.array(), b_.array()},
                                           detail::generator_or_default(gen), [](const double* p, detail::Stream& s) {
                                             const double x = s.gamma(p[0]), y = s.gamma(p[1]);
                                             return x / (x + y);
                                           }));
}

// ---- Dirichlet ----------------------------------------------------------------------------------

Dirichlet::Dirichlet(const Variable& alpha) {
  detail::check_vector_param("Dirichlet", "alpha", alpha);
  alpha_ = alpha;
  alpha0_ = F::sum(alpha_, {-1});
}

Shape Dirichlet::batch_shape() const {
  Shape s = alpha_.shape();
  s.resize(s.size() - 1);
  return s;
}

Variable Dirichlet::log_prob(const Variable& x) const {
  check_x("log_prob", x, alpha_.dtype());
  return -lbeta_vector(alpha_) + F::sum((alpha_ - 1.0) * F::log(x), {-1});
}

Variable Dirichlet::entropy() const {
  const double k = static_cast<double>(alpha_.shape().back());
  return lbeta_vector(alpha_) + (alpha0_ - k) * F::digamma(alpha0_) - F::sum((alpha_ - 1.0) * F::digamma(alpha_), {-1});
}

Variable Dirichlet::mean() const {
  return alpha_ / F::expand_dims(alpha0_, -1);
}

Variable Dirichlet::variance() const {
  const Variable a0 = F::expand_dims(alpha0_, -1);
  return alpha_ * (a0 - alpha_) / F::square(a0) / (a0 + 1.0);
}

Variable Dirichlet::sample_n(int64_t n, Generator* gen) const {
  detail::check_sample_count(name(), n);
  const int64_t k = alpha_.shape().back();
  return Variable(detail::draw_rows(n, alpha_.array(), k, alpha_.dtype(), detail::generator_or_default(gen),
                                    [](const double* p, int64_t k, detail::Stream& s, double* out) {
                                      double total = 0.0;
                                      for (int64_t j = 0; j < k; ++j) total += (out[j] = s.gamma(p[j]));
                                      for (int64_t j = 0; j < k; ++j) out[j] /= total;
                                    }));
}

// ---- KL divergences -----------------------------------------------------------------------------

void detail::register_gamma_kls(const AddKL& add) {
  add_kl<Gamma, Gamma>(add, [](const Gamma& p, const Gamma& q) {
    return (p.k() - q.k()) * F::digamma(p.k()) - (F::lgamma(p.k()) - F::lgamma(q.k())) +
           q.k() * (F::log(q.theta()) - F::log(p.theta())) + p.k() * (p.theta() / q.theta() - 1.0);
  });
  add_kl<Exponential, Exponential>(add, [](const Exponential& p, const Exponential& q) {
    return p.log_lam() - q.log_lam() + q.lam() / p.lam() - 1.0;
  });
  add_kl<Beta, Beta>(add, [](const Beta& p, const Beta& q) {
    const Variable p_apb = p.a() + p.b(), q_apb = q.a() + q.b();
    return -detail::lbeta(p.a(), p.b()) + detail::lbeta(q.a(), q.b()) + (p.a() - q.a()) * F::digamma(p.a()) +
           (p.b() - q.b()) * F::digamma(p.b()) + (q_apb - p_apb) * F::digamma(p_apb);
  });
  add_kl<Dirichlet, Dirichlet>(add, [](const Dirichlet& p, const Dirichlet& q) {
    return -lbeta_vector(p.alpha()) + lbeta_vector(q.alpha()) +
           F::sum((p.alpha() - q.alpha()) * (F::digamma(p.alpha()) - F::expand_dims(F::digamma(p.alpha0()), -1)), {-1});
  });
}

}  // namespace rensa::distributions
