#include "rensa/distributions/location_scale.h"

#include <cmath>
#include <numbers>

#include "rensa/core/error.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/exponential.h"
#include "rensa/functions/special.h"
#include "rensa/functions/trigonometric.h"
#include "src/distributions/builtin_kls.h"
#include "src/distributions/common.h"

namespace rensa::distributions {

namespace F = rensa::functions;

namespace {
constexpr double kEuler = 0.5772156649015329;
constexpr double kPi = std::numbers::pi;

// Standard draws of the batch's shape, n times, as a constant of `like`'s dtype.
Variable standard_draws(int64_t n, const Variable& like, Generator* gen, double (*draw)(detail::Stream&)) {
  return Variable(detail::draw_elementwise(n, like.shape(), like.dtype(), {}, detail::generator_or_default(gen),
                                           [draw](const double*, detail::Stream& s) { return draw(s); }));
}

bool less_than(double a, double b) {
  return a < b;
}
bool at_least(double a, double b) {
  return a >= b;
}
bool at_most(double a, double b) {
  return a <= b;
}
bool greater_than(double a, double b) {
  return a > b;
}
bool both(double a, double b) {
  return a != 0.0 && b != 0.0;
}
bool either(double a, double b) {
  return a != 0.0 || b != 0.0;
}
}  // namespace

// ---- Cauchy -------------------------------------------------------------------------------------

Cauchy::Cauchy(const Variable& loc, const Variable& scale) {
  auto p = detail::broadcast_params("Cauchy", {{"loc", loc}, {"scale", scale}});
  loc_ = p[0];
  scale_ = p[1];
}

Variable Cauchy::log_prob(const Variable& x) const {
  check_x("log_prob", x, loc_.dtype());
  return -std::log(kPi) + F::log(scale_) - F::log(F::square(x - loc_) + F::square(scale_));
}

Variable Cauchy::cdf(const Variable& x) const {
  check_x("cdf", x, loc_.dtype());
  return 1.0 / kPi * F::arctan((x - loc_) / scale_) + 0.5;
}

Variable Cauchy::icdf(const Variable& x) const {
  check_x("icdf", x, loc_.dtype());
  return loc_ + scale_ * F::tan((x - 0.5) * kPi);
}

Variable Cauchy::entropy() const {
  return F::log(4.0 * kPi * scale_);
}
Variable Cauchy::mean() const {
  return detail::constant(loc_, NAN);
}
Variable Cauchy::variance() const {
  return detail::constant(loc_, NAN);
}

Variable Cauchy::sample_n(int64_t n, Generator* gen) const {
  detail::check_sample_count(name(), n);
  const Variable eps =
      standard_draws(n, loc_, gen, [](detail::Stream& s) { return std::tan(kPi * (s.open_uniform() - 0.5)); });
  return scale_ * eps + loc_;
}

// ---- Gumbel -------------------------------------------------------------------------------------

Gumbel::Gumbel(const Variable& loc, const Variable& scale) {
  auto p = detail::broadcast_params("Gumbel", {{"loc", loc}, {"scale", scale}});
  loc_ = p[0];
  scale_ = p[1];
  log_scale_ = F::log(scale_);
}

Variable Gumbel::log_prob(const Variable& x) const {
  check_x("log_prob", x, loc_.dtype());
  const Variable y = (x - loc_) / scale_;
  return -log_scale_ - y - F::exp(-y);
}

Variable Gumbel::entropy() const {
  return log_scale_ + (kEuler + 1.0);
}
Variable Gumbel::mean() const {
  return loc_ + kEuler * scale_;
}
Variable Gumbel::variance() const {
  return kPi * kPi / 6.0 * F::square(scale_);
}

Variable Gumbel::sample_n(int64_t n, Generator* gen) const {
  detail::check_sample_count(name(), n);
  const Variable eps =
      standard_draws(n, loc_, gen, [](detail::Stream& s) { return -std::log(-std::log(s.open_uniform())); });
  return scale_ * eps + loc_;
}

// ---- Laplace ------------------------------------------------------------------------------------

Laplace::Laplace(const Variable& loc, const Variable& scale) {
  auto p = detail::broadcast_params("Laplace", {{"loc", loc}, {"scale", scale}});
  loc_ = p[0];
  scale_ = p[1];
}

Variable Laplace::log_prob(const Variable& x) const {
  check_x("log_prob", x, loc_.dtype());
  return -F::log(2.0 * scale_) - F::abs(x - loc_) / scale_;
}

Variable Laplace::prob(const Variable& x) const {
  check_x("prob", x, loc_.dtype());
  return 0.5 / scale_ * F::exp(-F::abs(x - loc_) / scale_);
}

Variable Laplace::cdf(const Variable& x) const {
  check_x("cdf", x, loc_.dtype());
  // 0.5 exp(-|z|) below loc, 1 - 0.5 exp(-|z|) from it: the gradient 0.5 exp(-|z|) / scale holds at
  // z = 0 too, as Chainer's.
  const Variable z = (x - loc_) / scale_;
  const Array below = detail::compare(z.array(), Array::scalar(0.0, z.dtype()), less_than);
  const Variable y = 0.5 * F::exp(F::where(below, z, -z));
  return F::where(below, y, 1.0 - y);
}

Variable Laplace::icdf(const Variable& x) const {
  check_x("icdf", x, loc_.dtype());
  // log(2x) up to 1/2 and -log(2 - 2x) above, each written with log1p; neither branch overflows
  // where it is not taken, so the unused one passes a zero gradient.
  const Array low = detail::compare(x.array(), Array::scalar(0.5, x.dtype()), at_most);
  const Variable h = 2.0 * x - 1.0;
  return loc_ + scale_ * F::where(low, F::log1p(h), -F::log1p(-h));
}

Variable Laplace::entropy() const {
  return 1.0 + F::log(2.0 * scale_);
}
Variable Laplace::variance() const {
  return 2.0 * F::square(scale_);
}
Variable Laplace::stddev() const {
  return std::numbers::sqrt2 * scale_;
}

Variable Laplace::sample_n(int64_t n, Generator* gen) const {
  detail::check_sample_count(name(), n);
  const Variable eps = standard_draws(n, loc_, gen, [](detail::Stream& s) {
    const double u = s.open_uniform();
    return u < 0.5 ? std::log(2.0 * u) : -std::log(2.0 - 2.0 * u);
  });
  return scale_ * eps + loc_;
}

// ---- Uniform ------------------------------------------------------------------------------------

Uniform::Uniform(const Variable& low, const Variable& high) {
  auto p = detail::broadcast_params("Uniform", {{"low", low}, {"high", high}});
  low_ = p[0];
  high_ = p[1];
  loc_ = low_;
  scale_ = high_ - low_;
}

Uniform Uniform::from_loc_scale(const Variable& loc, const Variable& scale) {
  auto p = detail::broadcast_params("Uniform", {{"loc", loc}, {"scale", scale}});
  Uniform u;
  u.from_loc_scale_ = true;
  u.loc_ = p[0];
  u.scale_ = p[1];
  u.low_ = u.loc_;
  u.high_ = u.loc_ + u.scale_;
  return u;
}

std::map<std::string, Variable> Uniform::params() const {
  if (from_loc_scale_) return {{"loc", loc_}, {"scale", scale_}};
  return {{"low", low_}, {"high", high_}};
}

Variable Uniform::log_prob(const Variable& x) const {
  check_x("log_prob", x, low_.dtype());
  const Array inside = detail::compare(detail::compare(x.array(), low_.array(), at_least),
                                       detail::compare(x.array(), high_.array(), at_most), both);
  const Variable logp = F::broadcast_to(-F::log(scale_), inside.shape());
  return F::where(inside, logp, detail::constant(logp, -INFINITY));
}

Variable Uniform::cdf(const Variable& x) const {
  check_x("cdf", x, low_.dtype());
  return F::clip((x - loc_) / scale_, 0.0, 1.0);
}

Variable Uniform::icdf(const Variable& x) const {
  check_x("icdf", x, low_.dtype());
  return x * scale_ + loc_;
}

Variable Uniform::entropy() const {
  return F::log(scale_);
}
Variable Uniform::mean() const {
  return (high_ + low_) / 2.0;
}
Variable Uniform::variance() const {
  return F::square(scale_) / 12.0;
}
Variable Uniform::stddev() const {
  return F::sqrt(variance());
}

Variable Uniform::sample_n(int64_t n, Generator* gen) const {
  detail::check_sample_count(name(), n);
  return standard_draws(n, low_, gen, [](detail::Stream& s) { return s.uniform(); }) * scale_ + loc_;
}

// ---- Pareto -------------------------------------------------------------------------------------

Pareto::Pareto(const Variable& scale, const Variable& alpha) {
  auto p = detail::broadcast_params("Pareto", {{"scale", scale}, {"alpha", alpha}});
  scale_ = p[0];
  alpha_ = p[1];
}

Variable Pareto::log_prob(const Variable& x) const {
  check_x("log_prob", x, scale_.dtype());
  const Variable logp = F::log(alpha_) + alpha_ * F::log(scale_) - (alpha_ + 1.0) * F::log(x);
  const Array inside = detail::compare(x.array(), scale_.array(), at_least);
  return F::where(inside, logp, detail::constant(logp, -INFINITY));
}

Variable Pareto::entropy() const {
  return -F::log(alpha_) + F::log(scale_) + 1.0 / alpha_ + 1.0;
}

Variable Pareto::mean() const {
  const Variable mean = alpha_ * scale_ / (alpha_ - 1.0);
  const Array finite = detail::compare(alpha_.array(), Array::scalar(1.0, alpha_.dtype()), greater_than);
  return F::where(finite, mean, detail::constant(mean, INFINITY));
}

Variable Pareto::variance() const {
  const Variable var = F::square(scale_) * alpha_ / F::square(alpha_ - 1.0) / (alpha_ - 2.0);
  const Array finite = detail::compare(alpha_.array(), Array::scalar(2.0, alpha_.dtype()), greater_than);
  return F::where(finite, var, detail::constant(var, INFINITY));
}

Variable Pareto::sample_n(int64_t n, Generator* gen) const {
  detail::check_sample_count(name(), n);
  const Variable eps(
      detail::draw_elementwise(n, alpha_.shape(), alpha_.dtype(), {alpha_.array()}, detail::generator_or_default(gen),
                               [](const double* p, detail::Stream& s) { return std::expm1(s.exponential() / p[0]); }));
  return scale_ * (eps + 1.0);
}

// ---- KL divergences -----------------------------------------------------------------------------

void detail::register_location_scale_kls(const AddKL& add) {
  add_kl<Gumbel, Gumbel>(add, [](const Gumbel& p, const Gumbel& q) {
    const Variable ratio = p.scale() / q.scale();
    return q.log_scale() - p.log_scale() + kEuler * (ratio - 1.0) +
           F::exp((q.loc() - p.loc()) / q.scale() + F::lgamma(ratio + 1.0)) - 1.0 + (p.loc() - q.loc()) / q.scale();
  });
  add_kl<Laplace, Laplace>(add, [](const Laplace& p, const Laplace& q) {
    const Variable diff = F::abs(p.loc() - q.loc());
    return F::log(q.scale()) - F::log(p.scale()) + diff / q.scale() +
           p.scale() / q.scale() * F::exp(-diff / p.scale()) - 1.0;
  });
  add_kl<Uniform, Uniform>(add, [](const Uniform& p, const Uniform& q) {
    const Array outside = compare(compare(p.high().array(), q.high().array(), greater_than),
                                  compare(p.low().array(), q.low().array(), less_than), either);
    const Variable kl = -F::log(p.high() - p.low()) + F::log(q.high() - q.low());
    return F::where(outside, detail::constant(kl, INFINITY), kl);
  });
  add_kl<Pareto, Pareto>(add, [](const Pareto& p, const Pareto& q) {
    const Variable kl = q.alpha() * (F::log(p.scale()) - F::log(q.scale())) + F::log(p.alpha()) - F::log(q.alpha()) +
                        (q.alpha() - p.alpha()) / p.alpha();
    const Array ok = compare(p.scale().array(), q.scale().array(), at_least);
    return F::where(ok, kl, detail::constant(kl, INFINITY));
  });
}

}  // namespace rensa::distributions
