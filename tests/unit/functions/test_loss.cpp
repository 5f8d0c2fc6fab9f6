#include <cmath>
#include <vector>

#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::expect_cpu_matches_reference;
using rensa::test::expect_error;
using rensa::test::randn;
using rensa::testing::check_backward;
using rensa::testing::check_double_backward;
using rensa::testing::make_noncontiguous;

namespace {

// Deterministic labels in [0, classes) of `shape`; every `ignore_every`-th one (if > 0) is -1.
Array labels(const Shape& shape, int64_t classes, int64_t ignore_every = 0, Dtype dtype = Dtype::int64) {
  std::vector<int64_t> v(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<int64_t>((i * 7 + 3) % static_cast<std::size_t>(classes));
    if (ignore_every > 0 && i % static_cast<std::size_t>(ignore_every) == 1) v[i] = -1;
  }
  return Array::from_vector(v, shape).astype(dtype);
}

// Per-label softmax cross entropy of x (N, C, d...) computed naively in double.
std::vector<double> naive_sce(const Array& x, const Array& t) {
  const Shape& s = x.shape();
  const int64_t n = s[0], c = s[1], d = s.numel() / (n * c);
  const auto xv = x.to_vector<double>();
  const auto tv = t.to_vector<int64_t>();
  std::vector<double> out(static_cast<std::size_t>(n * d));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < d; ++k) {
      const int64_t label = tv[static_cast<std::size_t>(i * d + k)];
      if (label == -1) continue;
      double z = 0.0;
      for (int64_t j = 0; j < c; ++j) z += std::exp(xv[static_cast<std::size_t>((i * c + j) * d + k)]);
      out[static_cast<std::size_t>(i * d + k)] = std::log(z) - xv[static_cast<std::size_t>((i * c + label) * d + k)];
    }
  }
  return out;
}

}  // namespace

// ---- softmax_cross_entropy -----------------------------------------------------------------------

TEST(SoftmaxCrossEntropy, UniformLogitsGiveLogC) {
  Variable x(Array::zeros({4, 5}, Dtype::float64));
  Variable y = F::softmax_cross_entropy(x, labels({4}, 5));
  EXPECT_EQ(y.shape(), Shape{});
  EXPECT_NEAR(y.array().item<double>(), std::log(5.0), 1e-12);
}

TEST(SoftmaxCrossEntropy, KnownValuesAndGradient) {
  // Row 0: log(e + e^2 + e^3) - 3; row 1: log(3 e^0) - 0.
  Variable x(Array::from_vector<double>({1, 2, 3, 0, 0, 0}, {2, 3}), true);
  Array t = Array::from_vector<int64_t>({2, 1});
  const double l0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3.0;
  const double l1 = std::log(3.0);
  Variable per = F::softmax_cross_entropy(x, t, -1, "no");
  ASSERT_EQ(per.shape(), (Shape{2}));
  auto pv = per.array().to_vector<double>();
  EXPECT_NEAR(pv[0], l0, 1e-12);
  EXPECT_NEAR(pv[1], l1, 1e-12);
  Variable y = F::softmax_cross_entropy(x, t);
  EXPECT_NEAR(y.array().item<double>(), (l0 + l1) / 2, 1e-12);
  y.backward();
  // (softmax(x) - onehot(t)) / N.
  auto g = x.grad().array().to_vector<double>();
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  const std::vector<double> want{
      std::exp(1.0) / z / 2, std::exp(2.0) / z / 2, (std::exp(3.0) / z - 1) / 2, 1.0 / 6, (1.0 / 3 - 1) / 2, 1.0 / 6};
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(g[i], want[i], 1e-12) << i;
}

TEST(SoftmaxCrossEntropy, MatchesNaiveOnSpatialInputs) {
  Array x = randn({3, 4, 2, 5});
  Array t = labels({3, 2, 5}, 4, 3);
  auto want = naive_sce(x, t);
  auto got = F::softmax_cross_entropy(Variable(x), t, -1, "no").array();
  ASSERT_EQ(got.shape(), (Shape{3, 2, 5}));
  auto gv = got.to_vector<double>();
  double sum = 0.0;
  int64_t count = 0;
  auto tv = t.to_vector<int64_t>();
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(gv[i], want[i], 1e-12) << i;
    if (tv[i] != -1) {
      sum += want[i];
      ++count;
    }
  }
  EXPECT_NEAR(F::softmax_cross_entropy(Variable(x), t).array().item<double>(), sum / static_cast<double>(count), 1e-12);
}

TEST(SoftmaxCrossEntropy, IgnoredLabels) {
  Variable x(randn({4, 3}), true);
  Array t = Array::from_vector<int32_t>({0, -1, 2, -1});
  auto full = naive_sce(x.array(), t.astype(Dtype::int64));
  Variable y = F::softmax_cross_entropy(x, t);
  EXPECT_NEAR(y.array().item<double>(), (full[0] + full[2]) / 2, 1e-12);
  auto per = F::softmax_cross_entropy(x, t, -1, "no").array().to_vector<double>();
  EXPECT_EQ(per[1], 0.0);
  EXPECT_EQ(per[3], 0.0);
  y.backward();
  auto g = x.grad().array();
  for (int64_t j = 0; j < 3; ++j) {
    EXPECT_EQ(g.at<double>({1, j}), 0.0);
    EXPECT_EQ(g.at<double>({3, j}), 0.0);
  }
  // A custom ignore label.
  Array t2 = Array::from_vector<int64_t>({0, 7, 2, 7});
  EXPECT_NEAR(F::softmax_cross_entropy(x, t2, 7).array().item<double>(), (full[0] + full[2]) / 2, 1e-12);
}

TEST(SoftmaxCrossEntropy, AllIgnoredGivesZero) {
  Variable x(randn({3, 4}), true);
  Array t = Array::full({3}, -1.0, Dtype::int64);
  Variable y = F::softmax_cross_entropy(x, t);
  EXPECT_EQ(y.array().item<double>(), 0.0);
  y.backward();
  for (double g : x.grad().array().to_vector<double>()) EXPECT_EQ(g, 0.0);
}

TEST(SoftmaxCrossEntropy, IgnoredRowWithExtremeLogitsStaysFinite) {
  // Class 0 has probability 0 in row 1; the ignored label there must not turn into inf * 0.
  Variable x(Array::from_vector<double>({0, 0, -1e308, 1e308}, {2, 2}));
  Array t = Array::from_vector<int64_t>({1, -1});
  auto per = F::softmax_cross_entropy(x, t, -1, "no").array().to_vector<double>();
  EXPECT_TRUE(std::isfinite(per[0]));
  EXPECT_EQ(per[1], 0.0);
}

TEST(SoftmaxCrossEntropy, Backward) {
  auto f = [](const Array& t, std::string_view reduce) {
    return [t, reduce](const Variable& x) { return F::softmax_cross_entropy(x, t, -1, reduce); };
  };
  Array x = randn({5, 4});
  Array t = labels({5}, 4);
  check_backward(f(t, "mean"), x);
  check_backward(f(t, "mean"), make_noncontiguous(x));
  check_backward(f(t, "no"), x, randn({5}, Dtype::float64, 2));
  check_backward(f(t, "no"), make_noncontiguous(x), randn({5}, Dtype::float64, 2));
  // Ignored labels, int32 labels.
  Array ti = labels({5}, 4, 2, Dtype::int32);
  check_backward(f(ti, "mean"), x);
  check_backward(f(ti, "no"), make_noncontiguous(x), randn({5}, Dtype::float64, 3));
  // Spatial (N, C, d1, d2) inputs, and non-contiguous labels.
  Array xs = randn({2, 3, 4, 2}, Dtype::float64, 4);
  Array ts = labels({2, 4, 2}, 3, 3);
  check_backward(f(ts, "mean"), xs);
  check_backward(f(ts, "mean"), make_noncontiguous(xs));
  check_backward(f(make_noncontiguous(ts), "no"), make_noncontiguous(xs), randn({2, 4, 2}, Dtype::float64, 5));
  // Size 0.
  check_backward(f(labels({0}, 4), "mean"), Array::zeros({0, 4}, Dtype::float64));
  check_backward(f(labels({0, 3}, 4), "no"), Array::zeros({0, 4, 3}, Dtype::float64),
                 Array::zeros({0, 3}, Dtype::float64));
}

TEST(SoftmaxCrossEntropy, DoubleBackward) {
  Array x = randn({4, 3});
  Array t = labels({4}, 3, 3);
  auto mean = [t](const std::vector<Variable>& v) { return std::vector<Variable>{F::softmax_cross_entropy(v[0], t)}; };
  auto no = [t](const std::vector<Variable>& v) {
    return std::vector<Variable>{F::softmax_cross_entropy(v[0], t, -1, "no")};
  };
  check_double_backward(mean, {x}, {Array::scalar(0.7, Dtype::float64)});
  check_double_backward(mean, {make_noncontiguous(x)}, {Array::scalar(-1.3, Dtype::float64)});
  check_double_backward(no, {x}, {randn({4}, Dtype::float64, 2)});
  Array xs = randn({2, 3, 2}, Dtype::float64, 3);
  Array ts = labels({2, 2}, 3, 3);
  auto spatial = [ts](const std::vector<Variable>& v) {
    return std::vector<Variable>{F::softmax_cross_entropy(v[0], ts, -1, "no")};
  };
  check_double_backward(spatial, {xs}, {randn({2, 2}, Dtype::float64, 4)});
}

TEST(SoftmaxCrossEntropy, CpuMatchesReference) {
  auto run = [](const Array& t, std::string_view reduce) {
    return [t, reduce](const std::vector<Variable>& v) {
      Variable x(v[0].array(), true);
      Variable y = F::softmax_cross_entropy(x, t.to(x.device()), -1, reduce);
      Variable loss = reduce == "no" ? F::sum(y) : y;
      loss.backward();
      return std::vector<Variable>{y, x.grad()};
    };
  };
  // Above 32768 elements so the parallel paths run.
  // Each loss sums over the classes (100, then 10); "mean" then sums the 400 (then 4 * 30 * 30) losses.
  Array x = randn({400, 100}, Dtype::float32, 7);
  Array t = labels({400}, 100, 5);
  expect_cpu_matches_reference(run(t, "mean"), {x}, 400);
  expect_cpu_matches_reference(run(t, "no"), {make_noncontiguous(x)}, 100);
  Array xs = randn({4, 10, 30, 30}, Dtype::float32, 8);
  Array ts = labels({4, 30, 30}, 10, 4, Dtype::int32);
  expect_cpu_matches_reference(run(ts, "mean"), {xs}, 4 * 30 * 30);
  expect_cpu_matches_reference(run(ts, "no"), {make_noncontiguous(xs)}, 10);
}

TEST(SoftmaxCrossEntropy, Errors) {
  Variable x(randn({3, 4}));
  expect_error<ShapeError>([&] { F::softmax_cross_entropy(x, labels({4}, 4)); },
                           {"softmax_cross_entropy", "(3, 4)", "(4,)"});
  expect_error<ShapeError>(
      [&] {
        F::softmax_cross_entropy(x, labels({3, 1}, 4));
      },
      {"softmax_cross_entropy", "(3, 4)", "(3, 1)"});
  expect_error<ShapeError>([&] { F::softmax_cross_entropy(Variable(randn({3})), labels({3}, 4)); },
                           {"softmax_cross_entropy", "(3,)"});
  expect_error<ShapeError>(
      [&] {
        F::softmax_cross_entropy(Variable(randn({2, 3, 4})), labels({2, 5}, 3));
      },
      {"softmax_cross_entropy", "(2, 3, 4)", "(2, 5)"});
  // A floating t is taken as soft targets.
  expect_error<ShapeError>([&] { F::softmax_cross_entropy(x, randn({3})); },
                           {"softmax_cross_entropy", "float64", "(3,)", "soft targets", "(3, 4)", "int32"});
  expect_error<DtypeError>(
      [&] {
        F::softmax_cross_entropy(Variable(labels({3, 4}, 2)), labels({3}, 4));
      },
      {"softmax_cross_entropy", "int64", "(3, 4)"});
  expect_error<ValueError>([&] { F::softmax_cross_entropy(x, labels({3}, 4), -1, "sum"); },
                           {"softmax_cross_entropy", "sum", "\"mean\"", "\"no\""});
  expect_error<IndexError>(
      [&] {
        F::softmax_cross_entropy(x, Array::from_vector<int64_t>({0, 4, 1}));
      },
      {"softmax_cross_entropy", "(3, 4)", "4", "[0, 4)"});
  expect_error<IndexError>(
      [&] {
        F::softmax_cross_entropy(x, Array::from_vector<int32_t>({0, -2, 1}));
      },
      {"softmax_cross_entropy", "-2"});
  expect_error<IndexError>(
      [&] {
        F::softmax_cross_entropy(Variable(randn({2, 3, 2})), Array::from_vector<int64_t>({0, 1, 2, 3}, {2, 2}));
      },
      {"softmax_cross_entropy", "(2, 3, 2)", "(2, 2)", "label 3", "[0, 3)"});
  expect_error<ShapeError>(
      [&] {
        F::softmax_cross_entropy(Variable(randn({2, 0})), labels({2}, 1));
      },
      {"softmax_cross_entropy", "(2, 0)", "no classes"});
}

// ---- sigmoid_cross_entropy -----------------------------------------------------------------------

TEST(SigmoidCrossEntropy, KnownValues) {
  Variable x(Array::from_vector<double>({0.0, 2.0, -3.0, 1.5}));
  Array t = Array::from_vector<int64_t>({1, 0, 1, -1});
  const std::vector<double> want{std::log(2.0), std::log1p(std::exp(2.0)), std::log1p(std::exp(-3.0)) + 3.0, 0.0};
  auto per = F::sigmoid_cross_entropy(x, t, "no").array().to_vector<double>();
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(per[i], want[i], 1e-12) << i;
  EXPECT_NEAR(F::sigmoid_cross_entropy(x, t).array().item<double>(), (want[0] + want[1] + want[2]) / 3, 1e-12);
}

TEST(SigmoidCrossEntropy, StableForLargeLogits) {
  Variable x(Array::from_vector<float>({1000.f, -1000.f, 1000.f, -1000.f}));
  Array t = Array::from_vector<int32_t>({1, 1, 0, 0});
  auto per = F::sigmoid_cross_entropy(x, t, "no").array().to_vector<double>();
  EXPECT_EQ(per[0], 0.0);
  EXPECT_EQ(per[1], 1000.0);
  EXPECT_EQ(per[2], 1000.0);
  EXPECT_EQ(per[3], 0.0);
}

TEST(SigmoidCrossEntropy, AllIgnoredGivesZero) {
  Variable x(randn({2, 3}), true);
  Variable y = F::sigmoid_cross_entropy(x, Array::full({2, 3}, -1.0, Dtype::int64));
  EXPECT_EQ(y.array().item<double>(), 0.0);
  y.backward();
  for (double g : x.grad().array().to_vector<double>()) EXPECT_EQ(g, 0.0);
}

TEST(SigmoidCrossEntropy, Backward) {
  auto f = [](const Array& t, std::string_view reduce) {
    return [t, reduce](const Variable& x) { return F::sigmoid_cross_entropy(x, t, reduce); };
  };
  Array x = randn({4, 5});
  Array t = labels({4, 5}, 2, 3);
  check_backward(f(t, "mean"), x);
  check_backward(f(t, "mean"), make_noncontiguous(x));
  check_backward(f(t, "no"), x, randn({4, 5}, Dtype::float64, 2));
  check_backward(f(make_noncontiguous(t), "no"), make_noncontiguous(x), randn({4, 5}, Dtype::float64, 2));
  check_backward(f(labels({0, 3}, 2), "mean"), Array::zeros({0, 3}, Dtype::float64));
  auto mean = [t](const std::vector<Variable>& v) { return std::vector<Variable>{F::sigmoid_cross_entropy(v[0], t)}; };
  auto no = [t](const std::vector<Variable>& v) {
    return std::vector<Variable>{F::sigmoid_cross_entropy(v[0], t, "no")};
  };
  check_double_backward(mean, {x}, {Array::scalar(0.9, Dtype::float64)});
  check_double_backward(no, {make_noncontiguous(x)}, {randn({4, 5}, Dtype::float64, 3)});
}

TEST(SigmoidCrossEntropy, CpuMatchesReference) {
  auto run = [](const Array& t, std::string_view reduce) {
    return [t, reduce](const std::vector<Variable>& v) {
      Variable x(v[0].array(), true);
      Variable y = F::sigmoid_cross_entropy(x, t.to(x.device()), reduce);
      (reduce == "no" ? F::sum(y) : y).backward();
      return std::vector<Variable>{y, x.grad()};
    };
  };
  Array x = randn({200, 200}, Dtype::float32, 9);
  Array t = labels({200, 200}, 2, 7);
  expect_cpu_matches_reference(run(t, "mean"), {x}, 200 * 200);  // normalized: the mean of every element
  expect_cpu_matches_reference(run(t, "no"), {make_noncontiguous(x)});
}

TEST(SigmoidCrossEntropy, Errors) {
  Variable x(randn({3, 4}));
  expect_error<ShapeError>([&] { F::sigmoid_cross_entropy(x, labels({3}, 2)); },
                           {"sigmoid_cross_entropy", "(3, 4)", "(3,)"});
  expect_error<DtypeError>(
      [&] {
        F::sigmoid_cross_entropy(x, randn({3, 4}));
      },
      {"sigmoid_cross_entropy", "float64", "(3, 4)"});
  expect_error<DtypeError>(
      [&] {
        F::sigmoid_cross_entropy(Variable(labels({3, 4}, 2)), labels({3, 4}, 2));
      },
      {"sigmoid_cross_entropy", "int64"});
  expect_error<ValueError>(
      [&] {
        F::sigmoid_cross_entropy(x, labels({3, 4}, 2), "none");
      },
      {"sigmoid_cross_entropy", "none", "\"mean\"", "\"no\""});
}

// ---- mean_squared_error --------------------------------------------------------------------------

TEST(MeanSquaredError, KnownValue) {
  Variable a(Array::from_vector<double>({1, 2, 3, 4}, {2, 2}));
  Variable b(Array::from_vector<double>({0, 2, 5, 1}, {2, 2}));
  EXPECT_NEAR(F::mean_squared_error(a, b).array().item<double>(), (1.0 + 0.0 + 4.0 + 9.0) / 4, 1e-12);
}

TEST(MeanSquaredError, Backward) {
  auto f = [](const std::vector<Variable>& v) { return std::vector<Variable>{F::mean_squared_error(v[0], v[1])}; };
  Array a = randn({3, 4}), b = randn({3, 4}, Dtype::float64, 2);
  rensa::testing::check_backward(f, {a, b});
  rensa::testing::check_backward(f, {make_noncontiguous(a), b});
  check_double_backward(f, {a, make_noncontiguous(b)}, {Array::scalar(1.1, Dtype::float64)});
}

TEST(MeanSquaredError, CpuMatchesReference) {
  auto f = [](const std::vector<Variable>& v) { return std::vector<Variable>{F::mean_squared_error(v[0], v[1])}; };
  // The mean of every squared difference: a sum of all of them.
  expect_cpu_matches_reference(f, {randn({300, 120}, Dtype::float32, 3), randn({300, 120}, Dtype::float32, 4)},
                               300 * 120);
  expect_cpu_matches_reference(
      f, {make_noncontiguous(randn({30, 12}, Dtype::float32, 3)), randn({30, 12}, Dtype::float32)}, 30 * 12);
}

TEST(MeanSquaredError, Errors) {
  expect_error<ShapeError>(
      [] {
        F::mean_squared_error(Variable(randn({2, 3})), Variable(randn({3, 2})));
      },
      {"mean_squared_error", "(2, 3)", "(3, 2)"});
  expect_error<DtypeError>(
      [] {
        F::mean_squared_error(Variable(randn({2, 3})), Variable(randn({2, 3}, Dtype::float32)));
      },
      {"mean_squared_error", "float64", "float32"});
  expect_error<DtypeError>(
      [] {
        F::mean_squared_error(Variable(labels({2, 3}, 2)), Variable(labels({2, 3}, 2)));
      },
      {"mean_squared_error", "int64"});
}

TEST(SoftmaxCrossEntropy, PlainAndDoubleBackpropGradientsAgree) {
  // The plain backward reuses the forward's exponentials; the double-backprop one goes through
  // softmax. Both must give the same gradient.
  for (std::string_view reduce : {"mean", "no"}) {
    Array x = randn({3, 4, 5});
    Array t = labels({3, 5}, 4, 4);
    Variable a(x, true), b(x, true);
    Variable ya = F::softmax_cross_entropy(a, t, -1, reduce);
    Variable yb = F::softmax_cross_entropy(b, t, -1, reduce);
    Array gy = reduce == "mean" ? Array::scalar(0.6, Dtype::float64) : randn({3, 5}, Dtype::float64, 2);
    auto ga = rensa::grad({ya}, {a}, {Variable(gy)});
    auto gb = rensa::grad({yb}, {b}, {Variable(gy)}, {.enable_double_backprop = true});
    EXPECT_TRUE(gb[0].creator() != nullptr);
    EXPECT_TRUE(allclose(ga[0].array(), gb[0].array(), 1e-12, 1e-14)) << reduce;
  }
}
