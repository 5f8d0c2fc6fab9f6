#include "rensa/distributions/discrete.h"

#include <cmath>

#include "rensa/core/error.h"
#include "rensa/functions/activation.h"
#include "rensa/functions/array_indexing.h"
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
Shape without_last(const Shape& s) {
  Shape out = s;
  out.resize(out.size() - 1);
  return out;
}

// x as a constant of `dtype`: the statistics below are not differentiated in x, as Chainer's.
Variable constant_x(const Variable& x, Dtype dtype) {
  return Variable(x.array().astype(dtype));
}
}  // namespace

// ---- Bernoulli ----------------------------------------------------------------------------------

Bernoulli::Bernoulli(const Variable& p, bool binary_check) : binary_check_(binary_check) {
  p_ = detail::broadcast_params("Bernoulli", {{"p", p}})[0];
  logit_ = F::log(p_) - F::log1p(-p_);
}

Bernoulli Bernoulli::from_logit(const Variable& logit, bool binary_check) {
  Bernoulli b;
  b.binary_check_ = binary_check;
  b.logit_ = detail::broadcast_params("Bernoulli", {{"logit", logit}})[0];
  b.p_ = F::sigmoid(b.logit_);
  return b;
}

Variable Bernoulli::log_prob(const Variable& x) const {
  check_x("log_prob", x, p_.dtype());
  const Variable xc = constant_x(x, p_.dtype());
  // logit (x - 1) - log(1 + exp(-logit)), with softplus so that a large |logit| stays finite.
  Variable y = logit_ * (xc - 1.0) - F::softplus(-logit_);
  const Array zero = Array::scalar(0.0, p_.dtype());
  const Array pinf = detail::compare(logit_.array(), zero, [](double a, double) { return std::isinf(a) && a > 0; });
  const Array minf = detail::compare(logit_.array(), zero, [](double a, double) { return std::isinf(a) && a < 0; });
  if (detail::any(pinf)) y = F::where(pinf, F::log(xc), y);
  if (detail::any(minf)) y = F::where(minf, F::log(1.0 - xc), y);
  if (binary_check_) {
    const Array invalid = detail::compare(xc.array(), zero, [](double a, double) { return a != 0.0 && a != 1.0; });
    y = F::where(invalid, detail::constant(y, -INFINITY), y);
  }
  return y;
}

Variable Bernoulli::prob(const Variable& x) const {
  check_x("prob", x, p_.dtype());
  Variable prob = x * p_ + (1.0 - x) * (1.0 - p_);
  if (binary_check_) {
    const Array valid = detail::compare(x.array(), Array::scalar(0.0, x.dtype()),
                                        [](double a, double) { return a == 0.0 || a == 1.0; });
    prob = prob * Variable(valid.astype(p_.dtype()));
  }
  return prob;
}

Variable Bernoulli::entropy() const {
  return -detail::modified_xlogx(p_) - detail::modified_xlogx(1.0 - p_);
}
Variable Bernoulli::variance() const {
  return p_ * (1.0 - p_);
}

Variable Bernoulli::sample_n(int64_t n, Generator* gen) const {
  detail::check_sample_count(name(), n);
  return Variable(
      detail::draw_elementwise(n, p_.shape(), p_.dtype(), {p_.array()}, detail::generator_or_default(gen),
                               [](const double* p, detail::Stream& s) { return s.uniform() < p[0] ? 1.0 : 0.0; }));
}

// ---- Categorical --------------------------------------------------------------------------------

Categorical::Categorical(const Variable& p) {
  detail::check_vector_param("Categorical", "p", p);
  p_ = p;
  log_p_ = F::log(p_);
}

Categorical Categorical::from_logit(const Variable& logit) {
  detail::check_vector_param("Categorical", "logit", logit);
  Categorical c;
  c.log_p_ = F::log_softmax(logit, -1);
  c.p_ = F::exp(c.log_p_);
  return c;
}

Shape Categorical::batch_shape() const {
  return without_last(p_.shape());
}

Variable Categorical::log_prob(const Variable& x) const {
  RENSA_CHECK(!x.is_null(), ValueError, "Categorical.log_prob: x is a null Variable");
  RENSA_CHECK(x.dtype() == Dtype::int32 || x.dtype() == Dtype::int64, DtypeError,
              "Categorical.log_prob: x must hold int32 or int64 class indices, got ", dtype_name(x.dtype()));
  const Shape batch = batch_shape();
  Shape out;
  try {
    out = broadcast_shapes(x.shape(), batch, "Categorical.log_prob");
  } catch (const ShapeError&) {
    throw ShapeError(
        rensa::detail::concat("Categorical.log_prob: x ", x.shape(), " does not broadcast with batch_shape ", batch));
  }
  const int64_t k = p_.shape().back();
  Shape wide = out;
  wide.push_back(k);
  const Variable rows = F::reshape(F::broadcast_to(log_p_, wide), {out.numel(), k});
  const Array labels = x.array().broadcast_to(out).astype(Dtype::int32).reshape({out.numel()});
  return F::reshape(F::select_item(rows, labels), out);
}

Variable Categorical::entropy() const {
  return -F::sum(detail::modified_xlogx(p_), {-1});
}

Variable Categorical::sample_n(int64_t n, Generator* gen) const {
  detail::check_sample_count(name(), n);
  const Array draws =
      detail::draw_rows(n, p_.array(), 1, Dtype::int32, detail::generator_or_default(gen),
                        [](const double* p, int64_t k, detail::Stream& s, double* out) {
                          out[0] = static_cast<double>(detail::draw_category(p, k, s, "Categorical.sample_n"));
                        });
  return Variable(draws.squeeze({-1}));
}

// ---- OneHotCategorical --------------------------------------------------------------------------

OneHotCategorical::OneHotCategorical(const Variable& p) {
  detail::check_vector_param("OneHotCategorical", "p", p);
  p_ = p;
  log_p_ = F::log(p_);
}

Shape OneHotCategorical::batch_shape() const {
  return without_last(p_.shape());
}

Variable OneHotCategorical::log_prob(const Variable& x) const {
  check_x("log_prob", x, p_.dtype());
  return F::sum(log_p_ * x, {-1});
}

Variable OneHotCategorical::variance() const {
  return p_ * (1.0 - p_);
}

Variable OneHotCategorical::sample_n(int64_t n, Generator* gen) const {
  detail::check_sample_count(name(), n);
  const int64_t k = p_.shape().back();
  return Variable(detail::draw_rows(n, p_.array(), k, p_.dtype(), detail::generator_or_default(gen),
                                    [](const double* p, int64_t k, detail::Stream& s, double* out) {
                                      for (int64_t j = 0; j < k; ++j) out[j] = 0.0;
                                      out[detail::draw_category(p, k, s, "OneHotCategorical.sample_n")] = 1.0;
                                    }));
}

// ---- Geometric ----------------------------------------------------------------------------------

Geometric::Geometric(const Variable& p) {
  p_ = detail::broadcast_params("Geometric", {{"p", p}})[0];
}

Variable Geometric::log_prob(const Variable& x) const {
  check_x("log_prob", x, p_.dtype());
  return (x - 1.0) * F::log(1.0 - p_) + F::log(p_);
}

Variable Geometric::mean() const {
  return 1.0 / p_;
}
Variable Geometric::variance() const {
  return (1.0 - p_) / F::square(p_);
}

Variable Geometric::sample_n(int64_t n, Generator* gen) const {
  detail::check_sample_count(name(), n);
  return Variable(detail::draw_elementwise(n, p_.shape(), p_.dtype(), {p_.array()}, detail::generator_or_default(gen),
                                           [](const double* p, detail::Stream& s) { return s.geometric(p[0]); }));
}

// ---- Poisson ------------------------------------------------------------------------------------

Poisson::Poisson(const Variable& lam) {
  lam_ = detail::broadcast_params("Poisson", {{"lam", lam}})[0];
  log_lam_ = F::log(lam_);
}

Variable Poisson::log_prob(const Variable& x) const {
  RENSA_CHECK(!x.is_null(), ValueError, "Poisson.log_prob: x is a null Variable");
  const Variable xc = constant_x(x, lam_.dtype());  // any dtype is taken: the check is of the shape
  check_x("log_prob", xc, lam_.dtype());
  return xc * log_lam_ - F::lgamma(xc + 1.0) - lam_;
}

Variable Poisson::sample_n(int64_t n, Generator* gen) const {
  detail::check_sample_count(name(), n);
  return Variable(detail::draw_elementwise(n, lam_.shape(), lam_.dtype(), {lam_.array()},
                                           detail::generator_or_default(gen),
                                           [](const double* p, detail::Stream& s) { return s.poisson(p[0]); }));
}

// ---- KL divergences -----------------------------------------------------------------------------

void detail::register_discrete_kls(const AddKL& add) {
  add_kl<Bernoulli, Bernoulli>(add, [](const Bernoulli& p, const Bernoulli& q) {
    return (p.logit() - q.logit()) * (p.p() - 1.0) - F::softplus(-p.logit()) + F::softplus(-q.logit());
  });
  add_kl<Categorical, Categorical>(
      add, [](const Categorical& p, const Categorical& q) { return F::sum(p.p() * (p.log_p() - q.log_p()), {-1}); });
  add_kl<OneHotCategorical, OneHotCategorical>(add, [](const OneHotCategorical& p, const OneHotCategorical& q) {
    return F::sum(p.p() * (p.log_p() - q.log_p()), {-1});
  });
  add_kl<Geometric, Geometric>(add, [](const Geometric& p, const Geometric& q) {
    return (1.0 / p.p() - 1.0) * (F::log(1.0 - p.p()) - F::log(1.0 - q.p())) + F::log(p.p()) - F::log(q.p());
  });
  add_kl<Poisson, Poisson>(add, [](const Poisson& p, const Poisson& q) {
    return p.lam() * (p.log_lam() - q.log_lam()) - p.lam() + q.lam();
  });
}

}  // namespace rensa::distributions
