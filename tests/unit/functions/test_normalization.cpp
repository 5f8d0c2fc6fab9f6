#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>
#include <vector>

#include "tests/unit/functions/conformance.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::expect_cpu_matches_reference;
using rensa::test::expect_error;
using rensa::test::randn;
using rensa::test::randu;
using rensa::testing::check_backward;
using rensa::testing::check_double_backward;
using rensa::testing::make_noncontiguous;
using rensa::testing::TestFunction;

namespace {

TestFunction bn_fn(const F::BatchNormOptions& o = {}) {
  return [o](const std::vector<Variable>& v) {
    return std::vector<Variable>{F::batch_normalization(v[0], v[1], v[2], o).y};
  };
}

TestFunction fixed_bn_fn(const F::BatchNormOptions& o = {}) {
  return [o](const std::vector<Variable>& v) {
    return std::vector<Variable>{F::fixed_batch_normalization(v[0], v[1], v[2], v[3], v[4], o)};
  };
}

TestFunction ln_fn(double eps = 1e-5) {
  return [eps](const std::vector<Variable>& v) {
    return std::vector<Variable>{F::layer_normalization(v[0], v[1], v[2], eps)};
  };
}

// The outputs and the gradients of every input (output gradient: the outputs' values), to compare backends.
TestFunction with_grads(const TestFunction& f) {
  return [f](const std::vector<Variable>& v) {
    std::vector<Variable> in;
    for (const auto& x : v) in.emplace_back(x.array(), true);
    std::vector<Variable> y = f(in);
    std::vector<Variable> out = y;
    std::vector<Variable> g = grad(y, in, {Variable(y[0].array().copy())});
    out.insert(out.end(), g.begin(), g.end());
    return out;
  };
}

std::vector<Array> noncontig(const std::vector<Array>& xs) {
  std::vector<Array> out;
  for (const auto& x : xs) out.push_back(make_noncontiguous(x));
  return out;
}

// Loose tolerances: normalization divides by a small standard deviation.
rensa::testing::CheckOptions opts() {
  rensa::testing::CheckOptions o;
  o.eps = 1e-4;
  o.atol = 1e-6;
  o.rtol = 1e-4;
  return o;
}

TestFunction lrn_fn(int64_t n = 5, double k = 2.0, double alpha = 1e-4, double beta = 0.75) {
  return [=](const std::vector<Variable>& v) {
    return std::vector<Variable>{F::local_response_normalization(v[0], n, k, alpha, beta)};
  };
}

// Local response normalization by direct loops over (N, C, rest), with Chainer's window
// c - n / 2 .. c + n / 2 clipped to the channels.
std::vector<double> lrn_loop(const Array& x, int64_t n, double k, double alpha, double beta) {
  const std::vector<double> v = x.to_vector<double>();
  const int64_t N = x.shape()[0], C = x.shape()[1], R = x.size() / std::max<int64_t>(N * C, 1);
  std::vector<double> y(v.size());
  for (int64_t b = 0; b < N; ++b) {
    for (int64_t c = 0; c < C; ++c) {
      for (int64_t r = 0; r < R; ++r) {
        double s = 0.0;
        for (int64_t d = std::max<int64_t>(0, c - n / 2); d <= std::min(C - 1, c + n / 2); ++d) {
          const double e = v[static_cast<std::size_t>((b * C + d) * R + r)];
          s += e * e;
        }
        const auto i = static_cast<std::size_t>((b * C + c) * R + r);
        y[i] = v[i] / std::pow(k + alpha * s, beta);
      }
    }
  }
  return y;
}

}  // namespace

// ---- forward values -----------------------------------------------------------------------------

TEST(BatchNormalization, KnownValues) {
  // x (4, 2): channel 0 = 1, 2, 3, 4 (mean 2.5, var 1.25); channel 1 = 2, 2, 2, 2 (var 0).
  Variable x(Array::from_vector<double>({1, 2, 2, 2, 3, 2, 4, 2}, {4, 2}));
  Variable gamma(Array::from_vector<double>({2, 1}));
  Variable beta(Array::from_vector<double>({0.5, -1}));
  const double eps = 1e-5;
  auto r = F::batch_normalization(x, gamma, beta, {eps});
  EXPECT_EQ(r.mean.to_vector<double>(), (std::vector<double>{2.5, 2.0}));
  EXPECT_EQ(r.var.to_vector<double>(), (std::vector<double>{1.25, 0.0}));
  const auto y = r.y.array().to_vector<double>();
  const double s = 1.0 / std::sqrt(1.25 + eps);
  const std::vector<double> xs{1, 2, 3, 4};
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(y[2 * i], 2.0 * (xs[i] - 2.5) * s + 0.5, 1e-12);
    EXPECT_NEAR(y[2 * i + 1], -1.0, 1e-12);
  }
}

TEST(BatchNormalization, FourDimStatisticsPerChannel) {
  Array x = randn({3, 2, 4, 5}, Dtype::float64, 3);
  auto r = F::batch_normalization(Variable(x), Variable(), Variable());
  ASSERT_EQ(r.y.shape(), x.shape());
  ASSERT_EQ(r.mean.shape(), (Shape{2}));
  // Without gamma and beta every channel of y has mean 0 and variance var / (var + eps).
  auto m = F::mean(r.y, {0, 2, 3}).array().to_vector<double>();
  auto v = F::mean(F::square(r.y), {0, 2, 3}).array().to_vector<double>();
  const auto var = r.var.to_vector<double>();
  for (int c = 0; c < 2; ++c) {
    EXPECT_NEAR(m[c], 0.0, 1e-12);
    EXPECT_NEAR(v[c], var[c] / (var[c] + 2e-5), 1e-12);
  }
}

TEST(BatchNormalization, CustomAxes) {
  // Statistics over axis 0 only of (N, C, L): parameters (C, L).
  Array x = randn({5, 2, 3}, Dtype::float64, 4);
  auto r = F::batch_normalization(Variable(x), Variable(randn({2, 3}, Dtype::float64, 5)),
                                  Variable(randn({2, 3}, Dtype::float64, 6)), {1e-5, {0}});
  EXPECT_EQ(r.mean.shape(), (Shape{2, 3}));
  EXPECT_TRUE(allclose(r.mean, F::mean(Variable(x), {0}).array()));
}

TEST(FixedBatchNormalization, KnownValuesAndAgreesWithBatchStatistics) {
  Variable x(Array::from_vector<double>({1, 4, 3, 0}, {2, 2}));
  Variable gamma(Array::from_vector<double>({1, 2}));
  Variable beta(Array::from_vector<double>({0, 1}));
  Variable mean(Array::from_vector<double>({1, 2}));
  Variable var(Array::from_vector<double>({4, 1}));
  auto y = F::fixed_batch_normalization(x, gamma, beta, mean, var, {0.0001}).array().to_vector<double>();
  EXPECT_NEAR(y[0], 0.0, 1e-12);
  EXPECT_NEAR(y[1], 2.0 * 2.0 / std::sqrt(1.0001) + 1.0, 1e-12);
  EXPECT_NEAR(y[2], 2.0 / std::sqrt(4.0001), 1e-12);
  EXPECT_NEAR(y[3], 2.0 * -2.0 / std::sqrt(1.0001) + 1.0, 1e-12);

  // With the batch's own statistics it equals batch_normalization.
  Array xb = randn({6, 3, 2, 2}, Dtype::float64, 7);
  Variable g(randn({3}, Dtype::float64, 8)), b(randn({3}, Dtype::float64, 9));
  auto r = F::batch_normalization(Variable(xb), g, b);
  auto yf = F::fixed_batch_normalization(Variable(xb), g, b, Variable(r.mean), Variable(r.var));
  EXPECT_TRUE(allclose(r.y.array(), yf.array(), 1e-10, 1e-12));
}

TEST(LayerNormalization, KnownValues) {
  Variable x(Array::from_vector<double>({1, 2, 3, 4, -2, 2}, {2, 3}));
  Variable gamma(Array::from_vector<double>({1, 2, 3}));
  Variable beta(Array::from_vector<double>({0, 0, 1}));
  const double eps = 1e-5;
  auto y = F::layer_normalization(x, gamma, beta, eps).array().to_vector<double>();
  // Row 0: mean 2, var 2/3. Row 1: mean 4/3, var ((8/3)^2 + (10/3)^2 + (2/3)^2) / 3 = 56/9.
  const double s0 = 1 / std::sqrt(2.0 / 3 + eps), s1 = 1 / std::sqrt(56.0 / 9 + eps);
  const std::vector<double> expected{
      -1 * s0, 0.0, 3 * s0 + 1, (8.0 / 3) * s1, 2 * (-10.0 / 3) * s1, 3 * (2.0 / 3) * s1 + 1};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(y[i], expected[i], 1e-12) << i;
}

TEST(LayerNormalization, NoParametersAndHigherRank) {
  Array x = randn({2, 3, 5}, Dtype::float64, 10);
  auto y = F::layer_normalization(Variable(x), Variable(), Variable());
  auto m = F::mean(y, {2}).array().to_vector<double>();
  for (double v : m) EXPECT_NEAR(v, 0.0, 1e-12);
}

// ---- gradients ----------------------------------------------------------------------------------

TEST(BatchNormalizationGrad, ContiguousAndNoncontiguous) {
  for (const Shape& s : {Shape{5, 3}, Shape{3, 2, 3, 2}}) {
    std::vector<Array> in{randn(s, Dtype::float64, 11), randu({s[1]}, 0.5, 1.5, Dtype::float64, 12),
                          randn({s[1]}, Dtype::float64, 13)};
    check_backward(bn_fn(), in, {}, opts());
    check_backward(bn_fn(), noncontig(in), {}, opts());
    check_double_backward(bn_fn(), in, {randn(s, Dtype::float64, 14)}, {}, opts());
  }
}

TEST(BatchNormalizationGrad, WithoutParametersAndCustomAxes) {
  TestFunction no_params = [](const std::vector<Variable>& v) {
    return std::vector<Variable>{F::batch_normalization(v[0], Variable(), Variable()).y};
  };
  check_backward(no_params, {randn({4, 3, 2}, Dtype::float64, 15)}, {}, opts());
  std::vector<Array> in{randn({4, 2, 3}, Dtype::float64, 16), randn({2, 3}, Dtype::float64, 17),
                        randn({2, 3}, Dtype::float64, 18)};
  check_backward(bn_fn({1e-5, {0}}), in, {}, opts());
  check_double_backward(bn_fn({1e-5, {0}}), in, {randn({4, 2, 3}, Dtype::float64, 19)}, {}, opts());
}

TEST(BatchNormalizationGrad, SizeZeroChannels) {
  std::vector<Array> in{Array::zeros({3, 0, 2}, Dtype::float64), Array::zeros({0}, Dtype::float64),
                        Array::zeros({0}, Dtype::float64)};
  check_backward(bn_fn(), in, {}, opts());
}

TEST(FixedBatchNormalizationGrad, AllInputs) {
  const Shape s{3, 2, 2, 3};
  std::vector<Array> in{randn(s, Dtype::float64, 20), randn({2}, Dtype::float64, 21), randn({2}, Dtype::float64, 22),
                        randn({2}, Dtype::float64, 23), randu({2}, 0.5, 2.0, Dtype::float64, 24)};
  check_backward(fixed_bn_fn(), in, {}, opts());
  check_backward(fixed_bn_fn(), noncontig(in), {}, opts());
  check_double_backward(fixed_bn_fn(), in, {randn(s, Dtype::float64, 25)}, {}, opts());
  // Size-0 batch.
  std::vector<Array> empty{Array::zeros({0, 2}, Dtype::float64), in[1], in[2], in[3], in[4]};
  check_backward(fixed_bn_fn(), empty, {}, opts());
}

// Batch renormalization in test mode is batch normalization with the running statistics, values
// and gradients alike.
TEST(FixedBatchRenormalization, IsFixedBatchNormalization) {
  const Shape s{3, 2, 2, 3};
  std::vector<Array> in{randn(s, Dtype::float64, 30), randn({2}, Dtype::float64, 31), randn({2}, Dtype::float64, 32),
                        randn({2}, Dtype::float64, 33), randu({2}, 0.5, 2.0, Dtype::float64, 34)};
  auto renorm = [](const std::vector<Variable>& v) {
    return std::vector<Variable>{F::fixed_batch_renormalization(v[0], v[1], v[2], v[3], v[4], {0.001})};
  };
  std::vector<Variable> vs(in.begin(), in.end());
  EXPECT_TRUE(array_equal(renorm(vs)[0].array(), fixed_bn_fn({0.001})(vs)[0].array()));
  check_backward(renorm, in, {}, opts());
  check_backward(renorm, noncontig(in), {}, opts());
}

TEST(LayerNormalizationGrad, ContiguousNoncontiguousDouble) {
  for (const Shape& s : {Shape{4, 5}, Shape{2, 3, 4}}) {
    std::vector<Array> in{randn(s, Dtype::float64, 26), randn({s.back()}, Dtype::float64, 27),
                          randn({s.back()}, Dtype::float64, 28)};
    check_backward(ln_fn(), in, {}, opts());
    check_backward(ln_fn(), noncontig(in), {}, opts());
    check_double_backward(ln_fn(), in, {randn(s, Dtype::float64, 29)}, {}, opts());
  }
  // Size-0 batch.
  std::vector<Array> empty{Array::zeros({0, 3}, Dtype::float64), randn({3}, Dtype::float64, 30),
                           randn({3}, Dtype::float64, 31)};
  check_backward(ln_fn(), empty, {}, opts());
}

// ---- statistics over several workers (allreduce_sum) --------------------------------------------

namespace {

// An allreduce_sum for one worker (the sum over workers is the partial sum itself), counting calls.
std::function<Variable(const Variable&)> identity_reducer(int* calls = nullptr) {
  return [calls](const Variable& v) {
    if (calls != nullptr) ++*calls;
    return v;
  };
}

F::BatchNormOptions one_worker(F::BatchNormOptions o = {}) {
  o.allreduce_sum = identity_reducer();
  return o;
}

}  // namespace

TEST(BatchNormalizationOverWorkers, OneWorkerEqualsLocal) {
  for (const auto& [shape, axes] :
       std::vector<std::pair<Shape, Shape>>{{{5, 3}, {}}, {{3, 2, 3, 2}, {}}, {{4, 2, 3}, {0}}}) {
    Array x = randn(shape, Dtype::float64, 50);
    const F::BatchNormOptions local{1e-5, axes};
    const Shape param = F::batch_normalization(Variable(x), Variable(), Variable(), local).mean.shape();
    Variable g(randn(param, Dtype::float64, 51)), b(randn(param, Dtype::float64, 52));
    int calls = 0;
    F::BatchNormOptions o = local;
    o.allreduce_sum = identity_reducer(&calls);
    auto r = F::batch_normalization(Variable(x), g, b, o);
    auto e = F::batch_normalization(Variable(x), g, b, local);
    EXPECT_EQ(calls, 2) << shape;
    EXPECT_EQ(r.count, e.count) << shape;
    EXPECT_EQ(r.count, x.size() / param.numel()) << shape;
    EXPECT_TRUE(allclose(r.y.array(), e.y.array(), 1e-12, 1e-12)) << shape;
    EXPECT_TRUE(allclose(r.mean, e.mean, 1e-12, 1e-14)) << shape;
    EXPECT_TRUE(allclose(r.var, e.var, 1e-12, 1e-14)) << shape;
  }
  // 16-bit inputs: statistics in float32, outputs in the input dtype.
  Array h = randn({64, 4}, Dtype::float32, 53).astype(Dtype::float16);
  auto r = F::batch_normalization(Variable(h), Variable(), Variable(), one_worker());
  auto e = F::batch_normalization(Variable(h), Variable(), Variable());
  EXPECT_EQ(r.y.dtype(), Dtype::float16);
  EXPECT_EQ(r.mean.dtype(), Dtype::float16);
  EXPECT_TRUE(allclose(r.y.array().astype(Dtype::float32), e.y.array().astype(Dtype::float32), 1e-2, 1e-2));
  EXPECT_TRUE(allclose(r.var.astype(Dtype::float32), e.var.astype(Dtype::float32), 1e-2, 1e-3));
}

TEST(BatchNormalizationOverWorkers, VirtualSecondWorkerWithUnequalBatch) {
  // A reducer that adds the partial sums of a second worker holding `other` (computed from the
  // global mean of the first reduction): the result is batch normalization of both batches together.
  const Array other = randn({5, 3}, Dtype::float64, 54);
  Variable g(randn({3}, Dtype::float64, 55)), b(randn({3}, Dtype::float64, 56));
  for (int64_t n : {2, 0}) {
    const Array x = randn({n, 3}, Dtype::float64, 57);
    int calls = 0;
    Array global_mean;
    F::BatchNormOptions o;
    o.allreduce_sum = [&](const Variable& partial) {
      ++calls;
      Array theirs;
      if (calls == 1) {
        theirs = F::concat({F::sum(Variable(other), {0}), Variable(Array::full({1}, 5.0, Dtype::float64))}, 0).array();
        const auto total =
            F::split_axis(F::add(Variable(partial.array()), Variable(theirs)), std::vector<int64_t>{3}, 0);
        global_mean = F::div(total[0], total[1]).array();
      } else {
        theirs = F::sum(F::square(F::sub(Variable(other), Variable(global_mean))), {0}).array();
      }
      return F::add(partial, Variable(theirs));
    };
    auto r = F::batch_normalization(Variable(x), g, b, o);
    auto e = F::batch_normalization(Variable(F::concat({Variable(x), Variable(other)}, 0).array()), g, b);
    EXPECT_EQ(calls, 2);
    EXPECT_EQ(r.count, n + 5);
    ASSERT_EQ(r.y.shape(), x.shape());
    EXPECT_TRUE(allclose(r.y.array(), e.y.array().slice(0, 0, n), 1e-12, 1e-12)) << n;
    EXPECT_TRUE(allclose(r.mean, e.mean, 1e-12, 1e-14)) << n;
    EXPECT_TRUE(allclose(r.var, e.var, 1e-12, 1e-14)) << n;
  }
}

TEST(BatchNormalizationOverWorkersGrad, OneWorkerSingleAndDouble) {
  for (const Shape& s : {Shape{5, 3}, Shape{3, 2, 3, 2}}) {
    std::vector<Array> in{randn(s, Dtype::float64, 58), randu({s[1]}, 0.5, 1.5, Dtype::float64, 59),
                          randn({s[1]}, Dtype::float64, 60)};
    check_backward(bn_fn(one_worker()), in, {}, opts());
    check_backward(bn_fn(one_worker()), noncontig(in), {}, opts());
    check_double_backward(bn_fn(one_worker()), in, {randn(s, Dtype::float64, 61)}, {}, opts());
  }
  std::vector<Array> in{randn({4, 2, 3}, Dtype::float64, 62), randn({2, 3}, Dtype::float64, 63),
                        randn({2, 3}, Dtype::float64, 64)};
  check_backward(bn_fn(one_worker({1e-5, {0}})), in, {}, opts());
  // The gradients equal those of the local function.
  Array gy = randn({4, 2, 3}, Dtype::float64, 65);
  auto grads_of = [&](const F::BatchNormOptions& o) {
    std::vector<Variable> v;
    for (const Array& a : in) v.emplace_back(a, true);
    Variable y = F::batch_normalization(v[0], v[1], v[2], o).y;
    return grad({y}, v, {Variable(gy)});
  };
  const auto mine = grads_of(one_worker({1e-5, {0}})), local = grads_of({1e-5, {0}});
  for (std::size_t i = 0; i < mine.size(); ++i) EXPECT_TRUE(allclose(mine[i].array(), local[i].array(), 1e-10, 1e-12));
}

TEST(BatchNormalizationOverWorkersBackends, CpuMatchesReference) {
  std::vector<Array> in{randn({64, 16, 6, 6}, Dtype::float32, 66), randn({16}, Dtype::float32, 67),
                        randn({16}, Dtype::float32, 68)};
  // The statistics and the gradients of x, gamma and beta sum over N * H * W = 64 * 6 * 6.
  expect_cpu_matches_reference(with_grads(bn_fn(one_worker())), in, 64 * 6 * 6);
  expect_cpu_matches_reference(with_grads(bn_fn(one_worker())), noncontig(in), 64 * 6 * 6);
}

TEST(BatchNormalizationOverWorkersErrors, EmptyEverywhereAndBadReducer) {
  Variable g3(randn({3}));
  expect_error<ValueError>(
      [&] {
        F::batch_normalization(Variable(Array::zeros({0, 3}, Dtype::float64)), g3, g3, one_worker());
      },
      {"batch_normalization", "(0, 3)", "no element on any worker"});
  F::BatchNormOptions o;
  o.allreduce_sum = [](const Variable& v) { return F::concat({v, v}, 0); };
  expect_error<ValueError>(
      [&] {
        F::batch_normalization(Variable(randn({4, 3})), g3, g3, o);
      },
      {"batch_normalization", "allreduce_sum", "(8,)", "(4,)"});
  o.allreduce_sum = [](const Variable& v) { return F::cast(v, Dtype::float32); };
  expect_error<ValueError>(
      [&] {
        F::batch_normalization(Variable(randn({4, 3})), g3, g3, o);
      },
      {"batch_normalization", "allreduce_sum", "float32", "float64"});
  o.allreduce_sum = [](const Variable&) { return Variable(); };
  expect_error<ValueError>(
      [&] {
        F::batch_normalization(Variable(randn({4, 3})), g3, g3, o);
      },
      {"batch_normalization", "allreduce_sum", "null"});
}

// ---- backends -----------------------------------------------------------------------------------

TEST(NormalizationBackends, CpuMatchesReference) {
  // 64 * 16 * 6 * 6 = 36864 elements: above the OpenMP threshold.
  const Shape big{64, 16, 6, 6};
  std::vector<Array> bn_in{randn(big, Dtype::float32, 32), randn({16}, Dtype::float32, 33),
                           randn({16}, Dtype::float32, 34)};
  // Batch normalization's statistics and gradients sum over N * H * W; the fixed one's gradients of
  // gamma, beta, mean and var too.
  expect_cpu_matches_reference(with_grads(bn_fn()), bn_in, 64 * 6 * 6);
  expect_cpu_matches_reference(with_grads(bn_fn()), noncontig(bn_in), 64 * 6 * 6);
  std::vector<Array> fixed_in = bn_in;
  fixed_in.push_back(randn({16}, Dtype::float32, 35));
  fixed_in.push_back(randu({16}, 0.5, 2.0, Dtype::float32, 36));
  expect_cpu_matches_reference(with_grads(fixed_bn_fn()), fixed_in, 64 * 6 * 6);
  std::vector<Array> ln_in{randn({300, 128}, Dtype::float32, 37), randn({128}, Dtype::float32, 38),
                           randn({128}, Dtype::float32, 39)};
  // Layer normalization: statistics and x's gradient over 128 features, gamma's and beta's over 300 rows.
  expect_cpu_matches_reference(with_grads(ln_fn()), ln_in, 300);
  expect_cpu_matches_reference(with_grads(ln_fn()), noncontig(ln_in), 300);
}

// ---- errors -------------------------------------------------------------------------------------

TEST(NormalizationErrors, ShapesDtypesValues) {
  Variable x(randn({4, 3}));
  Variable g3(randn({3})), g2(randn({2}));
  expect_error<ShapeError>([&] { F::batch_normalization(x, g2, g3); },
                           {"batch_normalization", "gamma", "(2,)", "(4, 3)"});
  expect_error<ShapeError>([&] { F::batch_normalization(Variable(randn({4})), Variable(), Variable()); },
                           {"batch_normalization", "(4,)"});
  expect_error<DtypeError>([&] { F::batch_normalization(x, Variable(randn({3}, Dtype::float32)), g3); },
                           {"batch_normalization"});
  expect_error<DtypeError>(
      [&] {
        F::batch_normalization(Variable(Array::zeros({4, 3}, Dtype::int32)), Variable(), Variable());
      },
      {"batch_normalization"});
  expect_error<ValueError>(
      [&] {
        F::batch_normalization(Variable(Array::zeros({0, 3}, Dtype::float64)), g3, g3);
      },
      {"batch_normalization", "(0, 3)"});
  expect_error<ValueError>([&] { F::batch_normalization(x, g3, g3, {0.0}); }, {"batch_normalization", "eps"});
  expect_error<ShapeError>([&] { F::fixed_batch_normalization(x, g3, g3, g3, g2); },
                           {"fixed_batch_normalization", "var", "(2,)", "(4, 3)"});
  expect_error<ValueError>([&] { F::fixed_batch_normalization(x, g3, g3, Variable(), g3); },
                           {"fixed_batch_normalization"});
  expect_error<ShapeError>([&] { F::layer_normalization(x, g2, Variable()); },
                           {"layer_normalization", "(2,)", "(4, 3)"});
  expect_error<DtypeError>(
      [&] {
        F::layer_normalization(Variable(Array::zeros({2, 2}, Dtype::int64)), Variable(), Variable());
      },
      {"layer_normalization"});
}

// ---- local response normalization -----------------------------------------------------------------

TEST(LocalResponseNormalization, MatchesLoop) {
  struct Case {
    Shape shape;
    int64_t n;
    double k, alpha, beta;
  };
  const std::vector<Case> cases{
      {{2, 7, 3, 4}, 5, 2.0, 1e-4, 0.75},  // Chainer's defaults
      {{2, 7, 3, 4}, 3, 1.0, 0.5, 0.75},   // a strong normalization
      {{3, 6, 5}, 4, 1.5, 0.3, 0.5},       // even n: a window of n + 1 channels
      {{2, 3, 2, 2}, 7, 1.0, 0.2, 1.0},    // C < n: every window clipped
      {{4, 5}, 1, 1.0, 0.7, 2.0},          // n = 1: x alone
      {{2, 4, 1, 1}, 2, 0.5, 1.0, 0.25},   // 1x1 images
  };
  for (const Case& c : cases) {
    const Array x = randn(c.shape, Dtype::float64, 50);
    const Variable y = F::local_response_normalization(Variable(x), c.n, c.k, c.alpha, c.beta);
    ASSERT_EQ(y.shape(), c.shape);
    const auto got = y.array().to_vector<double>();
    const auto want = lrn_loop(x, c.n, c.k, c.alpha, c.beta);
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-12) << c.shape << " n " << c.n << " element " << i;
    }
  }
  // By hand: x = (1, 2, 3) over 3 channels, n = 3, k = 1, alpha = 1, beta = 1: sums 5, 14, 13.
  Variable x(Array::from_vector<double>({1, 2, 3}, {1, 3}));
  const auto y = F::local_response_normalization(x, 3, 1.0, 1.0, 1.0).array().to_vector<double>();
  EXPECT_NEAR(y[0], 1.0 / 6.0, 1e-15);
  EXPECT_NEAR(y[1], 2.0 / 15.0, 1e-15);
  EXPECT_NEAR(y[2], 3.0 / 14.0, 1e-15);
  // float32 keeps its dtype.
  EXPECT_EQ(F::local_response_normalization(Variable(randn({2, 3}, Dtype::float32))).dtype(), Dtype::float32);
}

TEST(LocalResponseNormalizationGrad, ContiguousNoncontiguousDouble) {
  for (const Shape& s : {Shape{2, 6, 3, 2}, Shape{3, 4}}) {
    for (int64_t n : {5, 2}) {
      const Array x = randn(s, Dtype::float64, 51);
      check_backward(lrn_fn(n, 1.0, 0.5, 0.75), {x}, {}, opts());
      check_backward(lrn_fn(n, 1.0, 0.5, 0.75), {make_noncontiguous(x)}, {}, opts());
      check_double_backward(lrn_fn(n, 1.0, 0.5, 0.75), {x}, {randn(s, Dtype::float64, 52)}, {}, opts());
    }
  }
  check_backward(lrn_fn(), {randn({2, 5, 2, 2}, Dtype::float64, 53)}, {}, opts());
  check_double_backward(lrn_fn(), {randn({2, 5, 2, 2}, Dtype::float64, 54)}, {randn({2, 5, 2, 2}, Dtype::float64, 55)},
                        {}, opts());
  // Size-0 batch and channels.
  check_backward(lrn_fn(), {Array::zeros({0, 3, 2}, Dtype::float64)}, {}, opts());
  check_backward(lrn_fn(), {Array::zeros({2, 0, 2}, Dtype::float64)}, {}, opts());
}

TEST(LocalResponseNormalizationBackends, CpuMatchesReference) {
  // 4 * 20 * 20 * 22 = 35200 elements: above the OpenMP threshold.
  const Array x = randn({4, 20, 20, 22}, Dtype::float32, 56);
  // The window's 2 * (n / 2) + 1 channels: the forward's sum of squares and x's gradient's sum.
  expect_cpu_matches_reference(with_grads(lrn_fn(5, 1.0, 0.1, 0.75)), {x}, 5);
  expect_cpu_matches_reference(with_grads(lrn_fn(4, 2.0, 1e-4, 0.75)), {make_noncontiguous(x)}, 5);
}

TEST(LocalResponseNormalizationErrors, ShapesDtypesValues) {
  Variable x(randn({2, 3, 4}));
  expect_error<ShapeError>([] { F::local_response_normalization(Variable(randn({5}))); },
                           {"local_response_normalization", "(5,)"});
  expect_error<DtypeError>(
      [] { F::local_response_normalization(Variable(Array::zeros({2, 3}, Dtype::int32))); },
      {"local_response_normalization", "int32", "(2, 3)"});
  expect_error<ValueError>([&] { F::local_response_normalization(x, 0); },
                           {"local_response_normalization", "n", "0", "(2, 3, 4)"});
  expect_error<ValueError>([&] { F::local_response_normalization(x, 5, 0.0); },
                           {"local_response_normalization", "k", "0"});
  expect_error<ValueError>([&] { F::local_response_normalization(x, 5, 2.0, -1.0); },
                           {"local_response_normalization", "alpha", "-1"});
  expect_error<ValueError>([&] { F::local_response_normalization(x, 5, 2.0, 1e-4, -0.5); },
                           {"local_response_normalization", "beta", "-0.5"});
  expect_error<ValueError>([&] { F::local_response_normalization(x, 5, 2.0, 1e-4, std::nan("")); },
                           {"local_response_normalization", "beta", "nan"});
}

// ---- pad ----------------------------------------------------------------------------------------

TEST(Pad, KnownValues) {
  Variable x(Array::from_vector<double>({1, 2, 3, 4}, {2, 2}));
  auto y = F::pad(x, {{1, 0}, {0, 2}}, -1.0);
  ASSERT_EQ(y.shape(), (Shape{3, 4}));
  EXPECT_EQ(y.array().to_vector<double>(), (std::vector<double>{-1, -1, -1, -1, 1, 2, -1, -1, 3, 4, -1, -1}));
  auto z = F::pad(x, {{1, 1}});
  EXPECT_EQ(z.shape(), (Shape{4, 4}));
  EXPECT_EQ(F::sum(z).array().to_vector<double>()[0], 10.0);
  // Integer arrays pad too (no gradient).
  auto i = F::pad(Variable(Array::from_vector<int32_t>({7})), {{2, 1}});
  EXPECT_EQ(i.array().to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 7, 0}));
}

TEST(Pad, Gradients) {
  TestFunction f = [](const std::vector<Variable>& v) {
    return std::vector<Variable>{F::pad(v[0], {{0, 0}, {1, 2}, {2, 1}}, 0.5)};
  };
  Array x = randn({2, 3, 4}, Dtype::float64, 40);
  check_backward(f, {x});
  check_backward(f, {make_noncontiguous(x)});
  check_double_backward(f, {x}, {randn({2, 6, 7}, Dtype::float64, 41)});
  check_backward(f, {Array::zeros({0, 3, 4}, Dtype::float64)});
  Array big = randn({4, 3, 60, 60}, Dtype::float32, 42);  // padded size above the OpenMP threshold
  TestFunction g = [](const std::vector<Variable>& v) {
    return std::vector<Variable>{F::pad(v[0], {{0, 0}, {0, 0}, {4, 4}, {4, 4}})};
  };
  expect_cpu_matches_reference(with_grads(g), {big});
  expect_cpu_matches_reference(with_grads(g), {make_noncontiguous(big)});
}

TEST(Pad, Errors) {
  Variable x(randn({2, 3}));
  expect_error<ShapeError>([&] { F::pad(x, {{1, 1}, {1, 1}, {1, 1}}); }, {"pad", "(2, 3)", "3 pairs"});
  expect_error<ValueError>([&] { F::pad(x, {{1, -1}}); }, {"pad", "negative", "(2, 3)"});
}

// ---- batch renormalization, group normalization, normalize (values from Chainer 7.8.1) ----------

namespace {

const std::vector<double> kX{1.0, 2.0, 0.5, -1.0, 3.0, 0.0, 1.0, 1.0, -1.0, 0.5, 2.0, 2.5, 0.0, -2.0, 1.5, 0.5};
Variable v1(const std::vector<double>& v) { return Variable(Array::from_vector(v)); }

void expect_vec(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-9) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

}  // namespace

TEST(ChainerNormalizations, KnownValues) {
  const Variable x(Array::from_vector(kX, {2, 4, 2}));
  const Variable g = v1({1.0, 2.0, 0.5, 1.5}), b = v1({0.0, 0.1, -0.2, 0.3});
  expect_vec(F::group_normalization(x, 2, g, b).array().to_vector<double>(),
             {0.3464086835065456, 1.2701651728573338, -0.13093912233769706, -2.9022085903900616, 0.6029516877048724,
              -0.7735369197891946, -0.04412215187351676, -0.04412215187351676, -1.460589591780058,
              -0.3651473979450145, 1.560589591780058, 2.290884387670087, -0.2, -0.9844621268268285,
              2.065039785360364, 0.8883465951201213});
  const Variable x2 = F::reshape(F::get_item(x, {Slice(), Slice(), int64_t{0}}), {2, 4});
  expect_vec(F::normalize(x2).array().to_vector<double>(),
             {0.2981415081137332, 0.1490707540568666, 0.8944245243411996, 0.2981415081137332, -0.3713892970488815,
              0.742778594097763, 0.0, 0.5570839455733223});
  Array rm = Array::from_vector<double>({0.5, 0.0, 1.0, -0.5}), rv = Array::from_vector<double>({2.0, 0.5, 1.0, 4.0});
  const Array rm_alias = rm;
  expect_vec(F::batch_renormalization(x, g, b, 1.5, 0.5, &rm, &rv, 0.9, true).array().to_vector<double>(),
             {0.3535516228395789, 1.0606548685187367, 0.004560727316875873, -3.2817570907324964, 0.7052274450858282,
              -0.5550206768259844, 1.05, 1.05, -1.0606548685187367, 0.0, 3.2908785453662484, 4.386317818049372,
              -0.5550206768259844, -1.3951860914338594, 2.4641004388627454, -0.3641004388627456});
  expect_vec(rm_alias.to_vector<double>(), {0.5125, 0.1, 0.925, -0.35});  // updated in place
  expect_vec(rv.to_vector<double>(), {1.95625, 0.7, 1.325, 3.6166666666666667});
}

TEST(ChainerNormalizations, NormalizeOfZeroSliceHasChainersFiniteGradient) {
  Variable x(Array::from_vector<double>({0, 0, 0, 1, 2, 2}, {2, 3}), true);
  Variable y = F::normalize(x);
  EXPECT_EQ(y.array().to_vector<double>()[0], 0.0);
  F::sum(F::mul(y, Variable(Array::from_vector<double>({1, 2, 3, 0.5, -1, 1}, {2, 3})))).backward();
  expect_vec(x.grad().array().to_vector<double>(),
             {99999.99999999999, 199999.99999999997, 300000.0, 0.14814771605061727, -0.3703690123506173,
              0.29629543210123455},
             1e-6);
  // Second order stays finite at the zero slice.
  const TestFunction f = [](const std::vector<Variable>& v) { return std::vector<Variable>{F::normalize(v[0])}; };
  Variable xz(Array::zeros({1, 3}, Dtype::float64), true);
  Variable gx = rensa::grad({F::sum(F::square(F::normalize(xz)))}, {xz}, {}, {.enable_double_backprop = true})[0];
  F::sum(gx).backward();
  for (double e : xz.grad().array().to_vector<double>()) EXPECT_TRUE(std::isfinite(e));
}

TEST(ChainerNormalizations, Conforms) {
  using rensa::test::FunctionCase;
  using Vars = std::vector<Variable>;
  rensa::test::expect_conforms({.name = "group_normalization",
                                .f = [](const Vars& v) { return Vars{F::group_normalization(v[0], 2, v[1], v[2])}; },
                                .shapes = {{3, 4, 2}, {4}, {4}}});
  rensa::test::expect_conforms({.name = "normalize", .f = rensa::test::unary_fn([](const Variable& x) {
                                  return F::normalize(x);
                                }),
                                .shapes = {{3, 4}}});
  rensa::test::expect_conforms({.name = "normalize_axes", .f = rensa::test::unary_fn([](const Variable& x) {
                                  return F::normalize(x, 1e-3, {0, 2});
                                }),
                                .shapes = {{3, 4, 2}}, .size_zero = false});
  rensa::test::expect_conforms({.name = "batch_renormalization",
                                .f = [](const Vars& v) {
                                  // Running statistics far from the batch's: r and d sit at their clip
                                  // bounds, constants as the backward takes them.
                                  Array rm = Array::full({4}, 100.0, v[0].dtype(), v[0].device());
                                  Array rv = Array::full({4}, 0.01, v[0].dtype(), v[0].device());
                                  return Vars{F::batch_renormalization(v[0], v[1], v[2], 1.2, 0.3, &rm, &rv)};
                                },
                                .shapes = {{5, 4}, {4}, {4}},
                                .size_zero = false,
                                .broadcast = false});
}

TEST(ChainerNormalizations, Errors) {
  const Variable x(randn({2, 6, 3})), g(randn({6})), b(randn({6}));
  expect_error<ShapeError>([&] { F::group_normalization(x, 4, g, b); },
                           {"group_normalization", "groups 4", "6 channels", "(2, 6, 3)"});
  expect_error<ValueError>([&] { F::group_normalization(x, 0, g, b); }, {"group_normalization", "groups", "0"});
  expect_error<ShapeError>([&] { F::group_normalization(x, 2, Variable(randn({3})), b); },
                           {"group_normalization", "gamma (3,)"});
  expect_error<ShapeError>([&] { F::group_normalization(Variable(randn({6})), 2, g, b); },
                           {"group_normalization", "at least 2"});
  expect_error<ValueError>([&] { F::normalize(x, 0.0); }, {"normalize", "eps", "0"});
  expect_error<IndexError>([&] { F::normalize(x, 1e-5, {3}); }, {"normalize", "axis 3"});
  expect_error<ValueError>([&] { F::batch_renormalization(x, g, b, 0.5, 0.1); },
                           {"batch_renormalization", "rmax >= 1", "0.5"});
  Array bad = Array::zeros({5}, Dtype::float64);
  expect_error<ShapeError>([&] { F::batch_renormalization(x, g, b, 2.0, 0.1, &bad); },
                           {"batch_renormalization", "running_mean (5,)", "(6,)"});
}
