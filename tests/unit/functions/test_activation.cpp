#include <cmath>
#include <functional>
#include <limits>
#include <string>
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

using Unary = std::function<Variable(const Variable&)>;

struct Case {
  std::string name;
  std::string label;  // the function's name, as error messages start
  Unary f;
  bool has_kink;  // not differentiable at 0: test inputs stay away from it
};

std::vector<Case> elementwise_cases() {
  return {
      {"relu", "relu", [](const Variable& x) { return F::relu(x); }, true},
      {"leaky_relu", "leaky_relu", [](const Variable& x) { return F::leaky_relu(x, 0.3); }, true},
      {"leaky_relu_negative_slope", "leaky_relu", [](const Variable& x) { return F::leaky_relu(x, -0.5); }, true},
      {"elu", "elu", [](const Variable& x) { return F::elu(x, 1.5); }, true},
      {"sigmoid", "sigmoid", [](const Variable& x) { return F::sigmoid(x); }, false},
      {"tanh", "tanh", [](const Variable& x) { return F::tanh(x); }, false},
      {"softplus", "softplus", [](const Variable& x) { return F::softplus(x); }, false},
      {"softplus_beta", "softplus", [](const Variable& x) { return F::softplus(x, 2.5); }, false},
      {"softplus_negative_beta", "softplus", [](const Variable& x) { return F::softplus(x, -0.5); }, false},
  };
}

std::vector<Case> axis_cases() {
  return {
      {"softmax", "softmax", [](const Variable& x) { return F::softmax(x); }, false},
      {"softmax_axis0", "softmax", [](const Variable& x) { return F::softmax(x, 0); }, false},
      {"softmax_axis_last", "softmax", [](const Variable& x) { return F::softmax(x, -1); }, false},
      {"log_softmax", "log_softmax", [](const Variable& x) { return F::log_softmax(x); }, false},
      {"log_softmax_axis0", "log_softmax", [](const Variable& x) { return F::log_softmax(x, 0); }, false},
      {"log_softmax_axis_last", "log_softmax", [](const Variable& x) { return F::log_softmax(x, -1); }, false},
  };
}

TestFunction wrap(const Unary& f) {
  return [f](const std::vector<Variable>& v) { return std::vector<Variable>{f(v[0])}; };
}

// Random values in (-2, -0.2] u [0.2, 2): at least 0.2 from the kinks at 0.
Array away_from_zero(const Shape& shape, Dtype dtype = Dtype::float64, uint64_t seed = 1) {
  auto v = randu(shape, -1.8, 1.8, Dtype::float64, seed).to_vector<double>();
  for (double& e : v) e += e < 0 ? -0.2 : 0.2;
  return Array::from_vector(v, shape).astype(dtype);
}

std::vector<double> values(const Variable& v) {
  return v.array().to_vector<double>();
}

void expect_near_vec(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-12) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

Variable vec(const std::vector<double>& v) {
  return Variable(Array::from_vector(v));
}

}  // namespace

// ---- known values -------------------------------------------------------------------------------

TEST(Activation, KnownValuesElementwise) {
  const std::vector<double> x{-2.0, -0.5, 0.0, 0.5, 3.0};
  expect_near_vec(values(F::relu(vec(x))), {0, 0, 0, 0.5, 3});
  expect_near_vec(values(F::leaky_relu(vec(x))), {-0.4, -0.1, 0, 0.5, 3});
  expect_near_vec(values(F::leaky_relu(vec(x), 0.5)), {-1, -0.25, 0, 0.5, 3});
  std::vector<double> elu, sig, th, sp, sp2;
  for (double e : x) {
    elu.push_back(e >= 0 ? e : 2.0 * std::expm1(e));
    sig.push_back(1.0 / (1.0 + std::exp(-e)));
    th.push_back(std::tanh(e));
    sp.push_back(std::log1p(std::exp(e)));
    sp2.push_back(std::log1p(std::exp(3.0 * e)) / 3.0);
  }
  expect_near_vec(values(F::elu(vec(x), 2.0)), elu);
  expect_near_vec(values(F::sigmoid(vec(x))), sig);
  expect_near_vec(values(F::tanh(vec(x))), th);
  expect_near_vec(values(F::softplus(vec(x))), sp);
  expect_near_vec(values(F::softplus(vec(x), 3.0)), sp2);
  EXPECT_NEAR(F::sigmoid(vec({0.0})).array().item<double>(), 0.5, 1e-15);
  EXPECT_NEAR(F::softplus(vec({0.0})).array().item<double>(), std::log(2.0), 1e-15);
}

TEST(Activation, StableAtExtremes) {
  // softplus(x) ~ x for large x, ~ exp(x) for very negative x; sigmoid saturates without NaN.
  expect_near_vec(values(F::softplus(vec({1000.0, -1000.0}))), {1000.0, 0.0});
  expect_near_vec(values(F::softplus(vec({500.0}), 2.0)), {500.0});
  expect_near_vec(values(F::sigmoid(vec({1000.0, -1000.0}))), {1.0, 0.0});
  expect_near_vec(values(F::tanh(vec({1000.0, -1000.0}))), {1.0, -1.0});
}

TEST(Activation, KnownValuesSoftmax) {
  const double ln2 = std::log(2.0);
  Variable x(Array::from_vector<double>({0.0, ln2}, {1, 2}));
  expect_near_vec(values(F::softmax(x)), {1.0 / 3, 2.0 / 3});
  expect_near_vec(values(F::log_softmax(x)), {std::log(1.0 / 3), std::log(2.0 / 3)});
  // Shift invariance: huge logits do not overflow.
  Variable big(Array::from_vector<double>({1000.0, 1000.0 + ln2, -1000.0, -1000.0 + ln2}, {2, 2}));
  expect_near_vec(values(F::softmax(big)), {1.0 / 3, 2.0 / 3, 1.0 / 3, 2.0 / 3});
  expect_near_vec(values(F::log_softmax(big)),
                  {std::log(1.0 / 3), std::log(2.0 / 3), std::log(1.0 / 3), std::log(2.0 / 3)});
  // -inf logits get probability 0 (log-probability -inf) without NaN.
  const double inf = std::numeric_limits<double>::infinity();
  Variable masked(Array::from_vector<double>({0.0, -inf, ln2}, {1, 3}));
  expect_near_vec(values(F::softmax(masked)), {1.0 / 3, 0.0, 2.0 / 3});
  auto ls = values(F::log_softmax(masked));
  EXPECT_NEAR(ls[0], std::log(1.0 / 3), 1e-12);
  EXPECT_EQ(ls[1], -inf);
  // Along axis 0 of a 3-d array every slice sums to 1.
  Variable x3(randn({3, 4, 5}));
  Variable s0 = F::sum(F::softmax(x3, 0), {0});
  expect_near_vec(values(s0), std::vector<double>(20, 1.0));
  Variable s2 = F::sum(F::exp(F::log_softmax(x3, -1)), {2});
  expect_near_vec(values(s2), std::vector<double>(12, 1.0));
}

TEST(Activation, SoftmaxFloat32) {
  Variable x(Array::from_vector<float>({0.0f, std::log(2.0f)}, {1, 2}));
  Variable y = F::softmax(x);
  EXPECT_EQ(y.dtype(), Dtype::float32);
  auto v = y.array().to_vector<float>();
  EXPECT_NEAR(v[0], 1.0f / 3, 1e-6);
  EXPECT_NEAR(v[1], 2.0f / 3, 1e-6);
}

TEST(Activation, SoftmaxIsOneRecordedFunction) {
  Variable x(randn({2, 3}), true);
  EXPECT_STREQ(F::softmax(x).creator()->label(), "softmax");
  EXPECT_STREQ(F::log_softmax(x).creator()->label(), "log_softmax");
}

// ---- gradients ----------------------------------------------------------------------------------

TEST(Activation, Backward) {
  for (const auto& c : elementwise_cases()) {
    SCOPED_TRACE(c.name);
    Array x = c.has_kink ? away_from_zero({3, 4}) : randn({3, 4}, Dtype::float64, 2);
    check_backward(c.f, x);
    check_backward(c.f, make_noncontiguous(x));
    check_backward(c.f, away_from_zero({}, Dtype::float64, 3));
  }
  for (const auto& c : axis_cases()) {
    SCOPED_TRACE(c.name);
    Array x = randn({3, 4}, Dtype::float64, 2);
    check_backward(c.f, x);
    check_backward(c.f, make_noncontiguous(x));
    check_backward(c.f, randn({2, 3, 4}, Dtype::float64, 4));
    check_backward(c.f, make_noncontiguous(randn({2, 3, 4}, Dtype::float64, 4)));
  }
}

// Every elementwise activation through the shared checks (tests/unit/functions/conformance.h).
TEST(Activation, Conforms) {
  for (const auto& c : elementwise_cases()) {
    rensa::test::FunctionCase fc{.name = c.name, .f = wrap(c.f), .shapes = {{3, 4}}};
    if (c.has_kink) fc.kinks = {0.0};
    rensa::test::expect_conforms(fc);
  }
}

TEST(Activation, BackwardKnownValues) {
  // relu's gradient is the mask of x > 0; sigmoid's is y (1 - y).
  Variable x(Array::from_vector<double>({-1.0, 2.0, 0.5}), true);
  F::sum(F::relu(x)).backward();
  EXPECT_EQ(x.grad().array().to_vector<double>(), (std::vector<double>{0, 1, 1}));
  x.cleargrad();
  F::sum(F::leaky_relu(x, 0.1)).backward();
  expect_near_vec(x.grad().array().to_vector<double>(), {0.1, 1, 1});
  x.cleargrad();
  F::sum(F::sigmoid(x)).backward();
  for (std::size_t i = 0; i < 3; ++i) {
    const double s = 1.0 / (1.0 + std::exp(-x.array().to_vector<double>()[i]));
    EXPECT_NEAR(x.grad().array().to_vector<double>()[i], s * (1 - s), 1e-12);
  }
  // softmax's gradient along a sum is zero (the outputs sum to a constant).
  Variable z(randn({2, 5}), true);
  F::sum(F::softmax(z)).backward();
  expect_near_vec(z.grad().array().to_vector<double>(), std::vector<double>(10, 0.0));
}

// At exactly x = 0 the gradients are Chainer's (and PyTorch's): slope for leaky_relu, alpha for elu.
TEST(Activation, GradientAtZeroIsChainers) {
  Variable x(Array::from_vector<double>({0.0, -0.0}), true);
  F::sum(F::leaky_relu(x, 0.2)).backward();
  expect_near_vec(x.grad().array().to_vector<double>(), {0.2, 0.2});
  x.cleargrad();
  F::sum(F::leaky_relu(x, -0.5)).backward();
  expect_near_vec(x.grad().array().to_vector<double>(), {-0.5, -0.5});
  x.cleargrad();
  F::sum(F::elu(x, 0.5)).backward();
  expect_near_vec(x.grad().array().to_vector<double>(), {0.5, 0.5});
}

TEST(Activation, BackwardSizeZero) {
  for (const auto& c : elementwise_cases()) {
    SCOPED_TRACE(c.name);
    check_backward(c.f, randn({0, 4}));
    Variable x(randn({0, 4}), true);
    F::sum(c.f(x)).backward();
    EXPECT_EQ(x.grad().shape(), (Shape{0, 4}));
  }
  for (const auto& c : axis_cases()) {
    SCOPED_TRACE(c.name);
    check_backward(c.f, randn({0, 4}));
    check_backward(c.f, randn({4, 0}));
    EXPECT_EQ(c.f(Variable(randn({0, 4}))).shape(), (Shape{0, 4}));
  }
}

TEST(Activation, DoubleBackward) {
  for (const auto& c : elementwise_cases()) {
    SCOPED_TRACE(c.name);
    Array x = c.has_kink ? away_from_zero({3, 4}) : randn({3, 4}, Dtype::float64, 2);
    check_double_backward(wrap(c.f), {x}, {randn({3, 4}, Dtype::float64, 5)});
    check_double_backward(wrap(c.f), {make_noncontiguous(x)}, {randn({3, 4}, Dtype::float64, 5)});
  }
  for (const auto& c : axis_cases()) {
    SCOPED_TRACE(c.name);
    check_double_backward(wrap(c.f), {randn({3, 4}, Dtype::float64, 2)}, {randn({3, 4}, Dtype::float64, 5)});
    check_double_backward(wrap(c.f), {make_noncontiguous(randn({2, 3, 4}, Dtype::float64, 6))},
                          {randn({2, 3, 4}, Dtype::float64, 7)});
  }
}

// ---- cpu against reference ----------------------------------------------------------------------

TEST(Activation, CpuMatchesReference) {
  const std::size_t elementwise = elementwise_cases().size();
  std::vector<Case> all = elementwise_cases();
  for (const auto& c : axis_cases()) all.push_back(c);
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Case& c = all[i];
    SCOPED_TRACE(c.name);
    // Elementwise formulas; softmax and log_softmax sum along their axis: at most the longest one.
    const bool along_axis = i >= elementwise;
    // 200 x 200 = 40000 elements: the threaded path.
    expect_cpu_matches_reference(wrap(c.f), {randu({200, 200}, -6.0, 6.0, Dtype::float32, 1)}, along_axis ? 200 : 1);
    expect_cpu_matches_reference(wrap(c.f), {make_noncontiguous(randn({7, 9, 5}, Dtype::float32, 2))},
                                 along_axis ? 9 : 1);
    expect_cpu_matches_reference(wrap(c.f), {randn({4, 6}, Dtype::float32, 3).transpose()}, along_axis ? 6 : 1);
  }
}

// ---- errors -------------------------------------------------------------------------------------

TEST(Activation, Errors) {
  std::vector<Case> all = elementwise_cases();
  for (const auto& c : axis_cases()) all.push_back(c);
  for (const auto& c : all) {
    SCOPED_TRACE(c.name);
    expect_error<DtypeError>(
        [&] {
          c.f(Variable(Array::zeros({2, 3}, Dtype::int32)));
        },
        {c.label + ":", "int32", "(2, 3)"});
  }
  expect_error<DtypeError>([] { F::relu(Variable(Array::zeros({2, 3}, Dtype::int64))); }, {"relu", "int64", "(2, 3)"});
  expect_error<DtypeError>(
      [] {
        F::softmax(Variable(Array::zeros({2, 3}, Dtype::bool_)));
      },
      {"softmax", "bool", "(2, 3)"});
  expect_error<DtypeError>(
      [] {
        F::log_softmax(Variable(Array::zeros({2, 3}, Dtype::int32)));
      },
      {"log_softmax", "int32", "(2, 3)"});
  expect_error<IndexError>([] { F::softmax(Variable(randn({2, 3})), 2); }, {"softmax", "2"});
  expect_error<IndexError>([] { F::softmax(Variable(randn({2, 3})), -3); }, {"softmax", "-3"});
  expect_error<IndexError>([] { F::log_softmax(Variable(randn({4})), 1); }, {"log_softmax"});
  expect_error<IndexError>([] { F::softmax(Variable(randn({}))); }, {"softmax"});
  expect_error<ValueError>([] { F::softplus(Variable(randn({2})), 0.0); }, {"softplus", "beta"});
}

// ---- the rest of Chainer's activations ----------------------------------------------------------

namespace {

Variable grid2x4() {
  return Variable(Array::from_vector<double>({-3.0, -1.0, 0.0, 0.5, 2.0, 2.5, 7.0, -0.25}, {2, 4}));
}

Variable vec4(const std::vector<double>& v) {
  return Variable(Array::from_vector(v));
}

}  // namespace

// Values from Chainer 7.8.1 on the same input.
TEST(Activation, KnownValuesChainerFamily) {
  const Variable x = grid2x4();
  expect_near_vec(values(F::clipped_relu(x, 2.0)), {0, 0, 0, 0.5, 2, 2, 2, 0});
  expect_near_vec(values(F::relu6(x)), {0, 0, 0, 0.5, 2, 2.5, 6, 0});
  expect_near_vec(values(F::crelu(x)), {0, 0, 0, 0.5, 3, 1, 0, 0, 2, 2.5, 7, 0, 0, 0, 0, 0.25});
  expect_near_vec(values(F::hard_sigmoid(x)), {0, 0.3, 0.5, 0.6, 0.9, 1, 1, 0.45});
  expect_near_vec(values(F::maxout(x, 2)), {-1, 0.5, 2.5, 7});
  expect_near_vec(values(F::prelu(x, vec4({0.1, 0.2, 0.3, 0.4}))), {-0.3, -0.2, 0, 0.5, 2, 2.5, 7, -0.1});
  expect_near_vec(values(F::selu(x)), {-1.6705687287671118, -1.1113307378125625, 0.0, 0.5253504936777402,
                                       2.101401974710961, 2.626752468388701, 7.354906911488364,
                                       -0.3888901974781189});
  expect_near_vec(values(F::swish(x, vec4({1.0, 2.0, 0.5, -1.0}))),
                  {-0.14227761953270024, -0.11920292202211757, 0.0, 0.1887703343990727, 1.7615941559557649,
                   2.483267872689288, 6.794814384740507, -0.14054412522144952});
  Array r = Array::full({2, 4}, 0.2, Dtype::float64);
  expect_near_vec(values(F::rrelu(x, 1.0 / 8, 1.0 / 3, &r)), {-0.6, -0.2, 0, 0.5, 2, 2.5, 7, -0.05});
  {
    auto guard = using_config("train", false);
    expect_near_vec(values(F::rrelu(x)), {-0.6875, -0.22916666666666666, 0, 0.5, 2, 2.5, 7, -0.057291666666666664});
  }
}

TEST(Activation, RreluDrawsAndReturnsItsSlopes) {
  const Variable x(randn({50, 40}), true);
  Array r;
  Generator g(3);
  Variable y = F::rrelu(x, 0.1, 0.3, &r, &g);
  ASSERT_EQ(r.shape(), x.shape());
  const auto rv = r.to_vector<double>(), xv = x.array().to_vector<double>(), yv = values(y);
  for (std::size_t i = 0; i < rv.size(); ++i) {
    ASSERT_GE(rv[i], 0.1);
    ASSERT_LT(rv[i], 0.3);
    EXPECT_DOUBLE_EQ(yv[i], xv[i] >= 0 ? xv[i] : rv[i] * xv[i]);
  }
  // The same r again gives the same output; the gradient is the slope used.
  EXPECT_EQ(values(F::rrelu(x, 0.1, 0.3, &r)), yv);
  F::sum(y).backward();
  const auto gx = x.grad().array().to_vector<double>();
  for (std::size_t i = 0; i < rv.size(); ++i) EXPECT_DOUBLE_EQ(gx[i], xv[i] >= 0 ? 1.0 : rv[i]);
}

TEST(Activation, ChainerFamilyConforms) {
  using rensa::test::binary_fn;
  using rensa::test::FunctionCase;
  using rensa::test::unary_fn;
  const std::vector<FunctionCase> cases{
      {.name = "clipped_relu", .f = unary_fn([](const Variable& x) { return F::clipped_relu(x, 1.5); }),
       .shapes = {{3, 4}}, .kinks = {0.0, 1.5}},
      {.name = "relu6", .f = unary_fn([](const Variable& x) { return F::relu6(x); }), .shapes = {{3, 4}},
       .lo = -3, .hi = 8, .kinks = {0.0, 6.0}},
      {.name = "crelu", .f = unary_fn([](const Variable& x) { return F::crelu(x, 1); }), .shapes = {{3, 4}},
       .kinks = {0.0}},
      {.name = "crelu_axis0", .f = unary_fn([](const Variable& x) { return F::crelu(x, 0); }), .shapes = {{3, 4}},
       .kinks = {0.0}},
      {.name = "hard_sigmoid", .f = unary_fn([](const Variable& x) { return F::hard_sigmoid(x); }),
       .shapes = {{3, 4}}, .lo = -4, .hi = 4, .kinks = {-2.5, 2.5}},
      {.name = "selu", .f = unary_fn([](const Variable& x) { return F::selu(x); }), .shapes = {{3, 4}},
       .kinks = {0.0}},
      {.name = "prelu", .f = binary_fn([](const Variable& x, const Variable& w) { return F::prelu(x, w); }),
       .shapes = {{3, 4, 2}, {4}}, .kinks = {0.0}},
      {.name = "prelu_scalar_W", .f = binary_fn([](const Variable& x, const Variable& w) { return F::prelu(x, w); }),
       .shapes = {{3, 4}, {}}, .kinks = {0.0}},
      {.name = "swish", .f = binary_fn([](const Variable& x, const Variable& b) { return F::swish(x, b); }),
       .shapes = {{3, 4, 2}, {4, 2}}},
  };
  for (const auto& c : cases) rensa::test::expect_conforms(c);
  // maxout: distinct values (no ties) so the max is differentiable.
  FunctionCase maxout{.name = "maxout", .f = unary_fn([](const Variable& x) { return F::maxout(x, 3, 1); }),
                      .shapes = {{2, 6, 2}}};
  maxout.make_input = [](std::size_t, const Shape& shape, Dtype dtype, uint64_t seed) {
    Array a = randn(shape, Dtype::float64, seed);
    auto v = a.to_vector<double>();
    for (std::size_t i = 0; i < v.size(); ++i) v[i] += 0.01 * static_cast<double>(i);  // break ties
    return Array::from_vector(v, shape).astype(dtype);
  };
  rensa::test::expect_conforms(maxout);
  Array r = Array::full({3, 4}, 0.25, Dtype::float64);
  rensa::test::expect_conforms({.name = "rrelu_given_r",
                                .f = unary_fn([r](const Variable& x) {
                                  Array rr = r.astype(x.dtype());
                                  return F::rrelu(x, 0.1, 0.3, &rr);
                                }),
                                .shapes = {{3, 4}},
                                .kinks = {0.0},
                                .size_zero = false,
                                .broadcast = false,
                                .big_leading = 3,
                                .float32_keeps_dtype = false});
}

TEST(Activation, ChainerFamilyErrors) {
  const Variable x(randn({2, 6}));
  expect_error<ValueError>([&] { F::clipped_relu(x, 0.0); }, {"clipped_relu", "z must be positive", "0"});
  expect_error<DtypeError>([] { F::relu6(Variable(Array::zeros({2}, Dtype::int32))); }, {"relu6", "int32"});
  expect_error<IndexError>([&] { F::crelu(x, 2); }, {"crelu", "axis 2"});
  expect_error<ValueError>([&] { F::maxout(x, 0); }, {"maxout", "pool_size", "0"});
  expect_error<ShapeError>([&] { F::maxout(x, 4); }, {"maxout", "pool_size 4", "size 6", "(2, 6)"});
  expect_error<ShapeError>([&] { F::prelu(x, Variable(randn({5}))); }, {"prelu", "W (5,)", "(2, 6)"});
  expect_error<ShapeError>([&] { F::prelu(x, Variable(randn({2, 6}))); }, {"prelu", "W (2, 6)"});
  expect_error<DtypeError>([&] { F::prelu(x, Variable(randn({6}, Dtype::float32))); }, {"prelu", "float32"});
  expect_error<ShapeError>([&] { F::swish(x, Variable(randn({3}))); }, {"swish", "beta (3,)"});
  expect_error<ValueError>([&] { F::rrelu(x, 0.3, 0.3); }, {"rrelu", "0 <= l < u < 1", "0.3"});
  expect_error<ValueError>([&] { F::rrelu(x, 0.1, 1.0); }, {"rrelu", "u 1"});
  Array bad = Array::zeros({6}, Dtype::float64);
  expect_error<ShapeError>([&] { F::rrelu(x, 0.1, 0.3, &bad); }, {"rrelu", "r (6,)", "(2, 6)"});
}
