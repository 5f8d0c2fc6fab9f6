// Chainer's 19 distributions: every statistic against Chainer 7.8.1 on the same inputs (float64,
// chainer_values.h), gradient checks of every differentiable statistic, KL divergence and
// reparameterized draw, the statistics of the draws, and the errors bad input gets.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "rensa/rensa.h"
#include "rensa/testing/gradient_check.h"
#include "tests/unit/distributions/chainer_values.h"
#include "tests/unit/test_util.h"

namespace rensa {
namespace {

namespace D = rensa::distributions;
namespace F = rensa::functions;
using rensa::test::expect_error;
using rensa::testing_values::kChainer;

Array a64(const std::vector<double>& v, const Shape& shape) {
  return Array::from_vector(v, shape);
}
Array v3(double a, double b, double c) {
  return a64({a, b, c}, {3});
}

using Maker = std::function<std::shared_ptr<D::Distribution>(const std::vector<Variable>&)>;

// One family on the inputs of the reference script: two parameter sets (KL is from the first to the
// second), x for the functions of x, u for icdf.
struct Case {
  std::string name;
  Maker make;
  std::vector<Array> params1, params2;
  Array x, u;
  bool x_is_constant = false;        // log_prob is not differentiated in x (as Chainer)
  std::vector<bool> sample_no_grad;  // parameters a draw is not differentiated in; empty: no reparameterized draw
};

template <class T, class... Args>
std::shared_ptr<D::Distribution> make_shared_dist(Args&&... args) {
  return std::make_shared<T>(std::forward<Args>(args)...);
}

std::vector<Case> cases() {
  const Array u = v3(0.1, 0.5, 0.85);
  const Array loc1 = v3(-0.5, 0.3, 1.2), scale1 = v3(0.7, 1.5, 0.4), loc2 = v3(0.2, -0.4, 1.0),
              scale2 = v3(1.1, 0.6, 0.9), x = v3(0.1, -1.0, 1.5);
  const Array P1 = a64({0.1, 0.2, 0.3, 0.4, 0.5, 0.25, 0.15, 0.1}, {2, 4});
  const Array P2 = a64({0.25, 0.25, 0.25, 0.25, 0.1, 0.2, 0.3, 0.4}, {2, 4});
  std::vector<Case> c;
  c.push_back({"Normal",
               [](auto& p) { return make_shared_dist<D::Normal>(p[0], p[1]); },
               {loc1, scale1},
               {loc2, scale2},
               x,
               u,
               false,
               {false, false}});
  c.push_back({"LogNormal",
               [](auto& p) { return make_shared_dist<D::LogNormal>(p[0], p[1]); },
               {v3(0.1, -0.3, 0.5), v3(0.6, 1.2, 0.3)},
               {v3(0.4, 0.2, -0.1), v3(0.9, 0.7, 0.5)},
               v3(0.8, 2.0, 1.3),
               Array(),
               false,
               {false, false}});
  c.push_back({"MultivariateNormal",
               [](auto& p) { return make_shared_dist<D::MultivariateNormal>(p[0], p[1]); },
               {a64({0.1, -0.2, 0.5, 1.0, 0.3, -0.7}, {2, 3}),
                a64({1.2, 0, 0, 0.3, 0.8, 0, -0.5, 0.2, 1.5, 0.7, 0, 0, -0.2, 1.1, 0, 0.4, 0.6, 0.9}, {2, 3, 3})},
               {a64({0.3, 0.2, -0.1, 0.6, -0.4, 0.2}, {2, 3}),
                a64({0.9, 0, 0, 0.1, 1.3, 0, 0.2, -0.3, 0.6, 1.4, 0, 0, 0.5, 0.7, 0, -0.1, 0.2, 1.2}, {2, 3, 3})},
               a64({0.5, 0.1, -0.3, 0.2, 0.9, 0.4}, {2, 3}),
               Array(),
               false,
               {false, false}});
  c.push_back({"Bernoulli",
               [](auto& p) { return make_shared_dist<D::Bernoulli>(p[0]); },
               {v3(0.2, 0.6, 0.9)},
               {v3(0.5, 0.3, 0.7)},
               v3(0, 1, 1),
               Array(),
               true,
               {}});
  c.push_back({"Categorical",
               [](auto& p) { return make_shared_dist<D::Categorical>(p[0]); },
               {P1},
               {P2},
               Array::from_vector<int32_t>({1, 3}, {2}),
               Array(),
               true,
               {}});
  c.push_back({"OneHotCategorical",
               [](auto& p) { return make_shared_dist<D::OneHotCategorical>(p[0]); },
               {P1},
               {P2},
               a64({0, 1, 0, 0, 0, 0, 0, 1}, {2, 4}),
               Array(),
               false,
               {}});
  c.push_back({"Geometric",
               [](auto& p) { return make_shared_dist<D::Geometric>(p[0]); },
               {v3(0.2, 0.5, 0.8)},
               {v3(0.4, 0.3, 0.6)},
               v3(1, 3, 2),
               Array(),
               false,
               {}});
  c.push_back({"Poisson",
               [](auto& p) { return make_shared_dist<D::Poisson>(p[0]); },
               {v3(0.5, 2.0, 7.5)},
               {v3(1.5, 1.0, 4.0)},
               v3(0, 3, 6),
               Array(),
               true,
               {}});
  c.push_back({"Gamma",
               [](auto& p) { return make_shared_dist<D::Gamma>(p[0], p[1]); },
               {v3(0.5, 2.0, 3.5), v3(1.5, 0.5, 2.0)},
               {v3(1.0, 3.0, 2.5), v3(0.8, 1.2, 1.5)},
               v3(0.4, 1.2, 5.0),
               Array(),
               false,
               {true, false}});
  c.push_back({"Chisquare",
               [](auto& p) { return make_shared_dist<D::Chisquare>(p[0]); },
               {v3(1.0, 3.0, 5.5)},
               {},
               v3(0.3, 2.0, 6.0),
               Array(),
               false,
               {}});
  c.push_back({"Exponential",
               [](auto& p) { return make_shared_dist<D::Exponential>(p[0]); },
               {v3(0.5, 1.5, 3.0)},
               {v3(1.0, 0.7, 2.0)},
               v3(0.2, 1.0, 2.5),
               u,
               false,
               {false}});
  c.push_back({"Beta",
               [](auto& p) { return make_shared_dist<D::Beta>(p[0], p[1]); },
               {v3(0.7, 2.0, 5.0), v3(1.5, 2.0, 0.8)},
               {v3(1.0, 3.0, 2.0), v3(2.0, 1.0, 1.5)},
               v3(0.2, 0.5, 0.9),
               Array(),
               false,
               {}});
  c.push_back({"Dirichlet",
               [](auto& p) { return make_shared_dist<D::Dirichlet>(p[0]); },
               {a64({0.5, 1.0, 2.0, 3.0, 1.5, 0.8}, {2, 3})},
               {a64({1.0, 1.0, 1.0, 2.0, 2.5, 0.5}, {2, 3})},
               a64({0.2, 0.3, 0.5, 0.6, 0.3, 0.1}, {2, 3}),
               Array(),
               false,
               {}});
  c.push_back({"Cauchy",
               [](auto& p) { return make_shared_dist<D::Cauchy>(p[0], p[1]); },
               {loc1, scale1},
               {},
               x,
               u,
               false,
               {false, false}});
  c.push_back({"Gumbel",
               [](auto& p) { return make_shared_dist<D::Gumbel>(p[0], p[1]); },
               {loc1, scale1},
               {loc2, scale2},
               x,
               Array(),
               false,
               {false, false}});
  c.push_back({"Laplace",
               [](auto& p) { return make_shared_dist<D::Laplace>(p[0], p[1]); },
               {loc1, scale1},
               {loc2, scale2},
               x,
               u,
               false,
               {false, false}});
  c.push_back({"Uniform",
               [](auto& p) { return make_shared_dist<D::Uniform>(p[0], p[1]); },
               {v3(-1.0, 0.0, 2.0), v3(1.0, 0.5, 5.0)},
               {v3(-2.0, 0.1, 1.0), v3(1.5, 1.0, 6.0)},
               v3(0.3, 0.6, 2.5),
               u,
               false,
               {false, false}});
  c.push_back({"Pareto",
               [](auto& p) { return make_shared_dist<D::Pareto>(p[0], p[1]); },
               {v3(1.0, 0.5, 2.0), v3(1.5, 3.0, 0.8)},
               {v3(0.8, 0.6, 1.0), v3(2.0, 1.0, 1.2)},
               v3(2.0, 0.7, 1.5),
               Array(),
               false,
               {false, true}});
  c.push_back({"Independent",
               [](auto& p) { return make_shared_dist<D::Independent>(D::Normal(p[0], p[1])); },
               {a64({-0.5, 0.3, 1.2, 0.1, 0.0, -0.2}, {2, 3}), a64({0.7, 1.5, 0.4, 1.0, 0.5, 2.0}, {2, 3})},
               {a64({0.2, -0.4, 1.0, 0.0, 0.3, 0.1}, {2, 3}), a64({1.1, 0.6, 0.9, 0.8, 0.7, 1.5}, {2, 3})},
               a64({0.1, -1.0, 1.5, 0.3, 0.2, 0.1}, {2, 3}),
               Array(),
               false,
               {false, false}});
  return c;
}

std::vector<Variable> vars(const std::vector<Array>& arrays) {
  return {arrays.begin(), arrays.end()};
}

// The statistic `method` of d (x, u for the functions of a point; q for kl).
Variable statistic(const D::Distribution& d, const std::string& method, const Variable& x, const Variable& u,
                   const D::Distribution* q) {
  if (method == "log_prob") return d.log_prob(x);
  if (method == "prob") return d.prob(x);
  if (method == "cdf") return d.cdf(x);
  if (method == "log_cdf") return d.log_cdf(x);
  if (method == "survival_function") return d.survival_function(x);
  if (method == "log_survival_function") return d.log_survival_function(x);
  if (method == "icdf") return d.icdf(u);
  if (method == "entropy") return d.entropy();
  if (method == "mean") return d.mean();
  if (method == "mode") return d.mode();
  if (method == "variance") return d.variance();
  if (method == "stddev") return d.stddev();
  if (method == "covariance") return d.covariance();
  if (method == "kl") return D::kl_divergence(d, *q);
  throw ValueError("statistic: unknown method " + method);
}

bool close(double actual, double expected, double rtol) {
  if (std::isnan(expected)) return std::isnan(actual);
  if (std::isinf(expected)) return actual == expected;
  return std::fabs(actual - expected) <= 1e-14 + rtol * std::fabs(expected);
}

TEST(Distributions, EveryStatisticMatchesChainer) {
  int checked = 0;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const auto d1 = c.make(vars(c.params1));
    const auto d2 = c.params2.empty() ? nullptr : c.make(vars(c.params2));
    const auto& expected = kChainer.at(c.name);
    for (const auto& [method, want] : expected) {
      const Variable got = statistic(*d1, method, Variable(c.x), Variable(c.u), d2.get());
      EXPECT_EQ(got.dtype(), Dtype::float64) << method;
      const std::vector<double> values = got.array().to_vector<double>();
      ASSERT_EQ(values.size(), want.size()) << method << " has shape " << got.shape();
      // 1e-12: the special functions (lgamma, digamma, ndtr) are not SciPy's, and agree to a few ulp.
      for (std::size_t i = 0; i < want.size(); ++i) {
        EXPECT_TRUE(close(values[i], want[i], 1e-12))
            << method << "[" << i << "]: rensa " << values[i] << ", Chainer " << want[i];
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 115);
}

// Non-finite outputs (log_prob outside the support, Pareto's infinite mean) become 0, so that the
// numerical differences there are 0 as the gradient is.
Variable finite_part(const Variable& y) {
  const std::vector<double> v = y.array().to_vector<double>();
  Array mask = Array::empty(y.shape(), Dtype::bool_);
  for (std::size_t i = 0; i < v.size(); ++i) mask.data<bool>()[i] = std::isfinite(v[i]);
  return F::where(mask, y, Variable(Array::zeros(y.shape(), y.dtype())));
}

TEST(Distributions, GradientsOfEveryStatistic) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const std::size_t np = c.params1.size();
    for (const auto& [method, want] : kChainer.at(c.name)) {
      SCOPED_TRACE(method);
      std::vector<Array> inputs = c.params1;
      std::vector<bool> no_grads(np, false);
      const bool of_x = method != "icdf" && method != "kl" && method != "entropy" && method != "mean" &&
                        method != "mode" && method != "variance" && method != "stddev" && method != "covariance";
      if (method == "kl") {
        inputs.insert(inputs.end(), c.params2.begin(), c.params2.end());
        no_grads.resize(inputs.size(), false);
      } else if (of_x || method == "icdf") {
        inputs.push_back(method == "icdf" ? c.u : c.x);
        no_grads.push_back(of_x && c.x_is_constant);
      }
      const auto f = [&](const std::vector<Variable>& in) -> std::vector<Variable> {
        std::vector<Variable> p1(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(np));
        const auto d = c.make(p1);
        std::shared_ptr<D::Distribution> q;
        if (method == "kl") q = c.make(std::vector<Variable>(in.begin() + static_cast<std::ptrdiff_t>(np), in.end()));
        const Variable point = in.size() > np && method != "kl" ? in[np] : Variable();
        return {finite_part(statistic(*d, method, point, point, q.get()))};
      };
      EXPECT_NO_THROW(
          testing::check_backward(f, inputs, {}, {.eps = 1e-6, .atol = 1e-7, .rtol = 1e-6, .no_grads = no_grads}));
    }
  }
}

TEST(Distributions, ReparameterizedDrawsAreDifferentiable) {
  for (const Case& c : cases()) {
    if (c.sample_no_grad.empty()) continue;
    SCOPED_TRACE(c.name);
    const auto f = [&](const std::vector<Variable>& in) -> std::vector<Variable> {
      Generator gen(7);
      return {c.make(in)->sample_n(4, &gen)};
    };
    EXPECT_NO_THROW(testing::check_backward(f, c.params1, {},
                                            {.eps = 1e-6, .atol = 1e-7, .rtol = 1e-6, .no_grads = c.sample_no_grad}));
  }
}

TEST(Distributions, DrawsHaveTheDistributionsMoments) {
  const int64_t n = 40000;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const auto d = c.make(vars(c.params1));
    Generator gen(11);
    const Variable s = d->sample_n(n, &gen);
    Shape want{n};
    for (int64_t b : d->batch_shape()) want.push_back(b);
    for (int64_t e : d->event_shape()) want.push_back(e);
    ASSERT_EQ(s.shape(), want);
    if (c.name == "Categorical") {
      // Class frequencies against p.
      const std::vector<int32_t> draws = s.array().to_vector<int32_t>();
      const std::vector<double> p = c.params1[0].to_vector<double>();
      for (int64_t row = 0; row < 2; ++row) {
        for (int k = 0; k < 4; ++k) {
          int64_t hits = 0;
          for (int64_t i = 0; i < n; ++i) hits += draws[static_cast<std::size_t>(i * 2 + row)] == k;
          const double pk = p[static_cast<std::size_t>(row * 4 + k)];
          EXPECT_NEAR(static_cast<double>(hits) / n, pk, 6 * std::sqrt(pk * (1 - pk) / n)) << row << ", " << k;
        }
      }
      continue;
    }
    const std::vector<double> draws = s.array().to_vector<double>();
    const std::size_t width = draws.size() / static_cast<std::size_t>(n);
    if (c.name == "Cauchy") {
      // No moments: half the draws fall below loc.
      const std::vector<double> loc = c.params1[0].to_vector<double>();
      for (std::size_t j = 0; j < width; ++j) {
        int64_t below = 0;
        for (int64_t i = 0; i < n; ++i) below += draws[static_cast<std::size_t>(i) * width + j] < loc[j];
        EXPECT_NEAR(static_cast<double>(below) / n, 0.5, 6 * 0.5 / std::sqrt(n));
      }
      continue;
    }
    const std::vector<double> mean =
        d->mean().array().broadcast_to(Shape(std::vector<int64_t>(want.begin() + 1, want.end()))).to_vector<double>();
    std::vector<double> var;
    if (c.name == "MultivariateNormal") {
      const Array cov = d->covariance().array();  // (2, 3, 3): the variances are its diagonal
      for (int64_t b = 0; b < 2; ++b) {
        for (int64_t i = 0; i < 3; ++i) var.push_back(cov.at<double>({b, i, i}));
      }
    } else {
      var = d->variance().array().to_vector<double>();
    }
    for (std::size_t j = 0; j < width; ++j) {
      double sum = 0, sq = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double v = draws[static_cast<std::size_t>(i) * width + j];
        sum += v;
        sq += v * v;
      }
      const double m = sum / n, sample_var = sq / n - m * m;
      if (!std::isfinite(var[j])) continue;  // Pareto with alpha <= 2: the sample mean does not settle
      EXPECT_NEAR(m, mean[j], 6 * std::sqrt(var[j] / n) + 1e-12) << "mean of element " << j;
      // Pareto's fourth moment is infinite for alpha <= 4: its sample variance does not settle either.
      if (c.name != "Pareto") {
        EXPECT_NEAR(sample_var, var[j], 0.06 * var[j] + 1e-12) << "variance of element " << j;
      }
    }
  }
}

TEST(Distributions, DrawsRepeatWithTheGeneratorAndShapeAsSampleShape) {
  const D::Gamma g(Variable(v3(0.3, 2.0, 9.0)), Variable(v3(1.0, 1.0, 1.0)));
  Generator a(5), b(5), c(6);
  const Array x = g.sample_n(3, &a).array(), y = g.sample_n(3, &b).array(), z = g.sample_n(3, &c).array();
  EXPECT_EQ(x.to_vector<double>(), y.to_vector<double>());
  EXPECT_NE(x.to_vector<double>(), z.to_vector<double>());
  EXPECT_EQ(a.offset(), 9u);
  const Variable s = g.sample({2, 5}, &a);
  EXPECT_EQ(s.shape(), (Shape{2, 5, 3}));
  EXPECT_EQ(D::Normal(Variable(v3(0, 0, 0)), Variable(v3(1, 1, 1))).sample().shape(), (Shape{3}));
  rensa::seed(3);
  const Array d1 = D::Poisson(Variable(v3(1, 20, 300))).sample_n(2).array();
  rensa::seed(3);
  const Array d2 = D::Poisson(Variable(v3(1, 20, 300))).sample_n(2).array();
  EXPECT_EQ(d1.to_vector<double>(), d2.to_vector<double>());
}

TEST(Distributions, Float32ParametersGiveFloat32) {
  const Array loc = v3(0, 1, 2).astype(Dtype::float32), scale = v3(1, 2, 3).astype(Dtype::float32);
  const D::Normal n(loc, scale);
  EXPECT_EQ(n.log_prob(Variable(loc)).dtype(), Dtype::float32);
  EXPECT_EQ(n.sample_n(2).dtype(), Dtype::float32);
  EXPECT_EQ(D::Bernoulli(Variable(v3(0.1, 0.5, 0.9).astype(Dtype::float32))).sample_n(2).dtype(), Dtype::float32);
  EXPECT_EQ(D::Categorical(Variable(v3(0.1, 0.5, 0.4).astype(Dtype::float32))).sample_n(2).dtype(), Dtype::int32);
}

TEST(Distributions, AlternativeParameterizations) {
  const Array loc = v3(0.2, -1.0, 3.0), log_scale = v3(-0.5, 0.1, 0.7);
  const D::Normal a = D::Normal::with_log_scale(loc, log_scale);
  const D::Normal b(loc, F::exp(log_scale));
  EXPECT_TRUE(
      allclose(a.log_prob(Variable(v3(0, 0, 0))).array(), b.log_prob(Variable(v3(0, 0, 0))).array(), 1e-15, 1e-15));
  const Array logit = v3(-2.0, 0.0, 30.0);
  const D::Bernoulli bl = D::Bernoulli::from_logit(logit);
  EXPECT_EQ(bl.params().count("logit"), 1u);
  // A large logit stays finite where the naive log(1 + exp(-logit)) of the other sign would not.
  const std::vector<double> lp =
      D::Bernoulli::from_logit(v3(-800, 800, 0)).log_prob(Variable(v3(0, 1, 1))).array().to_vector<double>();
  EXPECT_NEAR(lp[0], 0.0, 1e-300);
  EXPECT_NEAR(lp[1], 0.0, 1e-300);
  EXPECT_NEAR(lp[2], -std::log(2.0), 1e-15);
  const D::Categorical cl = D::Categorical::from_logit(a64({1.0, 2.0, 3.0}, {3}));
  EXPECT_NEAR(F::sum(cl.p()).array().item<double>(), 1.0, 1e-15);
  const D::Uniform u = D::Uniform::from_loc_scale(v3(1, 2, 3), v3(2, 2, 2));
  EXPECT_EQ(u.high().array().to_vector<double>(), (std::vector<double>{3, 4, 5}));
  EXPECT_EQ(u.params().count("loc"), 1u);
  // Binary check: x outside {0, 1} has log probability -inf and probability 0.
  const D::Bernoulli checked(v3(0.3, 0.3, 0.3), true);
  const std::vector<double> y = checked.log_prob(Variable(v3(0, 0.5, 1))).array().to_vector<double>();
  EXPECT_TRUE(std::isinf(y[1]) && y[1] < 0);
  EXPECT_EQ(checked.prob(Variable(v3(0, 0.5, 1))).array().to_vector<double>()[1], 0.0);
}

TEST(Distributions, ShapesAndBroadcastParameters) {
  const D::Normal n(Variable(Array::scalar(0.0, Dtype::float64)), Variable(v3(1, 2, 3)));
  EXPECT_EQ(n.batch_shape(), (Shape{3}));
  const D::Dirichlet dir(Variable(a64({1, 1, 1, 2, 2, 2}, {2, 3})));
  EXPECT_EQ(dir.batch_shape(), (Shape{2}));
  EXPECT_EQ(dir.event_shape(), (Shape{3}));
  // log_prob of x of more axes than the batch: one value per draw and batch entry.
  EXPECT_EQ(n.log_prob(Variable(Array::zeros({4, 3}, Dtype::float64))).shape(), (Shape{4, 3}));
  const D::Independent ind(
      D::Normal(Variable(Array::zeros({2, 5}, Dtype::float64)), Variable(Array::ones({2, 5}, Dtype::float64))));
  EXPECT_EQ(ind.batch_shape(), (Shape{2}));
  EXPECT_EQ(ind.event_shape(), (Shape{5}));
  EXPECT_EQ(ind.log_prob(Variable(Array::zeros({2, 5}, Dtype::float64))).shape(), (Shape{2}));
  // Independent's covariance: the base's covariances as blocks on the diagonal.
  const Array L = a64({1, 0, 0.5, 2, 3, 0, 0.1, 1}, {2, 2, 2});
  const D::Independent mv(D::MultivariateNormal(Variable(Array::zeros({2, 2}, Dtype::float64)), Variable(L)), 1);
  const Array cov = mv.covariance().array();
  EXPECT_EQ(cov.shape(), (Shape{4, 4}));
  EXPECT_EQ(cov.at<double>({0, 1}), 0.5);
  EXPECT_EQ(cov.at<double>({3, 3}), 0.01 + 1);
  EXPECT_EQ(cov.at<double>({0, 2}), 0.0);
  // cross_entropy = entropy + KL.
  const D::Normal p(v3(0, 1, 2), v3(1, 1, 1)), q(v3(1, 1, 1), v3(2, 2, 2));
  EXPECT_TRUE(allclose(D::cross_entropy(p, q).array(), (p.entropy() + D::kl_divergence(p, q)).array(), 0, 0));
}

struct Shifted : D::Normal {
  using D::Normal::Normal;
  std::string name() const override { return "Shifted"; }
};

TEST(Distributions, RegisterKl) {
  const Shifted s(v3(0, 1, 2), v3(1, 1, 1));
  const D::Normal n(v3(0, 1, 2), v3(1, 1, 1));
  EXPECT_THROW(
      {
        try {
          D::kl_divergence(s, n);
        } catch (const NotImplementedError& e) {
          EXPECT_NE(std::string(e.what()).find("between Shifted and Normal"), std::string::npos) << e.what();
          throw;
        }
      },
      NotImplementedError);
  D::register_kl<Shifted, D::Normal>([](const Shifted& a, const D::Normal& b) { return a.loc() - b.loc() + 7.0; });
  EXPECT_EQ(D::kl_divergence(s, n).array().to_vector<double>(), (std::vector<double>{7, 7, 7}));
}

TEST(Distributions, BadInputGetsClearErrors) {
  const Array i3 = Array::from_vector<int32_t>({1, 2, 3}, {3});
  expect_error<DtypeError>([&] { D::Normal(i3, v3(1, 1, 1)); }, "Normal: loc must be of a floating dtype, got int32");
  expect_error<DtypeError>([&] { D::Normal(v3(0, 0, 0), v3(1, 1, 1).astype(Dtype::float32)); },
                           "Normal: scale is float32 but loc is float64");
  expect_error<ShapeError>(
      [&] {
        D::Gamma(v3(1, 1, 1), a64({1, 1}, {2}));
      },
      "Gamma: k (3,) and theta (2,) do not broadcast to one batch shape");
  const D::Normal n(v3(0, 0, 0), v3(1, 1, 1));
  expect_error<ShapeError>(
      [&] {
        n.log_prob(Variable(a64({1, 1}, {2})));
      },
      "Normal.log_prob: x (2,) does not broadcast with batch_shape + event_shape (3,)");
  expect_error<DtypeError>([&] { n.cdf(Variable(v3(0, 0, 0).astype(Dtype::float32))); },
                           "Normal.cdf: x is float32 but the parameters are float64");
  expect_error<NotImplementedError>([&] { D::Chisquare(v3(1, 1, 1)).cdf(Variable(v3(1, 1, 1))); },
                                    "Chisquare.cdf: not defined for Chisquare");
  expect_error<NotImplementedError>([&] { D::Independent(n, 1).icdf(Variable(v3(0.5, 0.5, 0.5))); },
                                    "Independent.icdf");
  expect_error<ValueError>([&] { n.sample_n(-1); }, "Normal.sample_n: n must not be negative, got -1");
  expect_error<ValueError>([&] { D::Independent(n, 2); }, "Independent: reinterpreted_batch_ndims must be in [0, 1]");
  expect_error<ShapeError>(
      [&] {
        D::MultivariateNormal(a64({0, 0}, {2}), Array::ones({3, 3}, Dtype::float64));
      },
      "MultivariateNormal: scale_tril (3, 3) must be loc's shape (2,) plus (d,) = (2, 2)");
  const D::Categorical cat(a64({0.2, 0.8, 0.5, 0.5}, {2, 2}));
  expect_error<DtypeError>(
      [&] {
        cat.log_prob(Variable(a64({0, 1}, {2})));
      },
      "Categorical.log_prob: x must hold int32 or int64 class indices, got float64");
  expect_error<IndexError>([&] { cat.log_prob(Variable(Array::from_vector<int32_t>({0, 2}, {2}))); }, "");
  expect_error<ValueError>(
      [&] {
        D::Categorical(a64({0.2, -0.1}, {2})).sample_n(1);
      },
      "Categorical.sample_n: probabilities must be non-negative, got -0.1 for class 1");
  expect_error<ShapeError>(
      [&] {
        D::kl_divergence(n, D::Normal(a64({0, 0}, {2}), a64({1, 1}, {2})));
      },
      "kl_divergence: Normal of batch shape (3,) and event shape () against Normal of batch shape (2,)");
  // A batch against one distribution broadcasts, as in Chainer (a VAE's posteriors against its prior).
  const D::Independent posterior(D::Normal(Array::zeros({4, 2}, Dtype::float64), Array::ones({4, 2}, Dtype::float64)),
                                 1);
  const D::Independent prior(D::Normal(Array::zeros({2}, Dtype::float64), Array::ones({2}, Dtype::float64)), 1);
  EXPECT_EQ(D::kl_divergence(posterior, prior).shape(), (Shape{4}));
  expect_error<ShapeError>(
      [&] { D::kl_divergence(prior, D::Independent(D::Normal(v3(0, 0, 0), v3(1, 1, 1)), 1)); },
      "kl_divergence: Independent of batch shape () and event shape (2,) against Independent of batch shape () and "
      "event shape (3,): the event shapes must be equal");
  expect_error<NotImplementedError>([&] { D::kl_divergence(n, D::Laplace(v3(0, 0, 0), v3(1, 1, 1))); },
                                    "no KL divergence is registered between Normal and Laplace");
  expect_error<ShapeError>([&] { D::Dirichlet(Variable(Array::scalar(1.0, Dtype::float64))); },
                           "Dirichlet: alpha must have at least 1 axis");
}

}  // namespace
}  // namespace rensa
