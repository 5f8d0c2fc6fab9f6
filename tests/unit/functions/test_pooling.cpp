#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
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
using rensa::testing::TestFunction;

namespace {

TestFunction max_fn(F::Int2 k, std::optional<F::Int2> s = std::nullopt, F::Int2 p = 0, bool cover_all = true) {
  return [=](const std::vector<Variable>& v) {
    return std::vector<Variable>{F::max_pooling_2d(v[0], k, s, p, cover_all)};
  };
}

TestFunction avg_fn(F::Int2 k, std::optional<F::Int2> s = std::nullopt, F::Int2 p = 0, bool cover_all = false) {
  return [=](const std::vector<Variable>& v) {
    return std::vector<Variable>{F::average_pooling_2d(v[0], k, s, p, cover_all)};
  };
}

// Forward values and the gradient of x, for comparing backends.
TestFunction with_grad(const TestFunction& f) {
  return [f](const std::vector<Variable>& v) {
    Variable x(v[0].array(), true);
    Variable y = f({x})[0];
    auto g = grad({y}, {x}, {Variable(y.array().copy())});
    return std::vector<Variable>{y, g[0]};
  };
}

// Distinct values (a shuffled 0.1-spaced ramp) so no central difference moves a maximum.
Array distinct(const Shape& shape, Dtype dt = Dtype::float64, uint64_t seed = 1) {
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  std::iota(v.begin(), v.end(), 0.0);
  std::mt19937_64 rng(seed);
  std::shuffle(v.begin(), v.end(), rng);
  for (auto& e : v) e = e * 0.1 - 3.0;
  return Array::from_vector<double>(v, shape).astype(dt);
}

std::vector<double> vec(const Variable& v) {
  return v.array().to_vector<double>();
}

void expect_near_vec(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

const Device kDevices[] = {Device::cpu(), Device::reference()};

}  // namespace

// ---- max pooling --------------------------------------------------------------------------------

TEST(MaxPooling2D, KnownValues) {
  for (Device dev : kDevices) {
    for (Dtype dt : {Dtype::float32, Dtype::float64}) {
      SCOPED_TRACE(to_string(dev) + " " + std::string(dtype_name(dt)));
      Variable x(Array::arange(0.0, 16.0, 1.0, dt, dev).reshape({1, 1, 4, 4}));
      EXPECT_EQ(vec(F::max_pooling_2d(x, 2)), (std::vector<double>{5, 7, 13, 15}));
      // ksize 3, stride 2: one window without cover_all, two (the second clipped) with it.
      EXPECT_EQ(vec(F::max_pooling_2d(x, 3, 2, 0, false)), (std::vector<double>{10}));
      Variable yc = F::max_pooling_2d(x, 3, 2);
      ASSERT_EQ(yc.shape(), (Shape{1, 1, 2, 2}));
      EXPECT_EQ(vec(yc), (std::vector<double>{10, 11, 14, 15}));
      // pad 1: windows start at -1, 1, 3; padding never wins, even over negative values.
      Variable xn(Array::arange(-16.0, 0.0, 1.0, dt, dev).reshape({1, 1, 4, 4}));
      Variable yp = F::max_pooling_2d(xn, 2, 2, 1, false);
      ASSERT_EQ(yp.shape(), (Shape{1, 1, 3, 3}));
      EXPECT_EQ(vec(yp), (std::vector<double>{-16, -14, -13, -8, -6, -5, -4, -2, -1}));
      // Rectangular windows and strides.
      Variable yr = F::max_pooling_2d(x, F::Int2{1, 4}, F::Int2{2, 1}, 0, false);
      ASSERT_EQ(yr.shape(), (Shape{1, 1, 2, 1}));
      EXPECT_EQ(vec(yr), (std::vector<double>{3, 11}));
    }
  }
}

TEST(MaxPooling2D, GradientGoesToTheFirstMaximum) {
  for (Device dev : kDevices) {
    Variable x(Array::from_vector<double>({1, 3, 3, 0, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 5}, {1, 1, 4, 4}).to(dev),
               true);
    Variable y = F::max_pooling_2d(x, 2);
    EXPECT_EQ(vec(y), (std::vector<double>{3, 3, 0, 5}));
    F::sum(y).backward();
    EXPECT_EQ(x.grad().array().to_vector<double>(),
              (std::vector<double>{0, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1}));
  }
}

TEST(MaxPooling2D, NanWins) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (Device dev : kDevices) {
    for (Dtype dt : {Dtype::float32, Dtype::float64}) {
      SCOPED_TRACE(to_string(dev) + " " + std::string(dtype_name(dt)));
      const Array xa =
          Array::from_vector<double>({1, 2, 3, 4, nan, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, {1, 1, 4, 4});
      // The 2x2 tiling (the cpu's fast path) and overlapping 3x3 windows (the general loop).
      Variable x(xa.astype(dt).to(dev), true);
      Variable y = F::max_pooling_2d(x, 2);
      auto v = vec(y);
      EXPECT_TRUE(std::isnan(v[0]));
      EXPECT_EQ(std::vector<double>(v.begin() + 1, v.end()), (std::vector<double>{8, 14, 16}));
      F::sum(y).backward();
      EXPECT_EQ(x.grad().array().to_vector<double>(),
                (std::vector<double>{0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1}));
      v = vec(F::max_pooling_2d(x, 3, 1, 0, false));
      EXPECT_TRUE(std::isnan(v[0]) && std::isnan(v[2]));
      EXPECT_EQ(v[1], 12.0);
      EXPECT_EQ(v[3], 16.0);
    }
  }
}

TEST(MaxPooling2D, Backward) {
  check_backward(max_fn(2), {distinct({2, 3, 4, 6})});
  check_backward(max_fn(3, 2), {distinct({2, 2, 7, 6}, Dtype::float64, 2)});
  check_backward(max_fn(3, 2, 1), {distinct({1, 3, 6, 7}, Dtype::float64, 3)});
  check_backward(max_fn(F::Int2{2, 3}, F::Int2{1, 2}, F::Int2{1, 0}, false),
                 {distinct({2, 2, 5, 7}, Dtype::float64, 4)});
  check_backward(max_fn(3, 1, 1), {distinct({1, 2, 5, 5}, Dtype::float64, 5)});  // overlapping windows
  check_backward(max_fn(3, 2, 1), {make_noncontiguous(distinct({2, 3, 6, 7}, Dtype::float64, 6))});
  check_backward(max_fn(2), {distinct({2, 3, 4, 6}, Dtype::float64, 7).to(Device::reference())});
}

// Chainer rejects max pooling of an empty x (batch or channels 0); average pooling accepts it.
TEST(Pooling, MaxPoolingOfEmptyInputThrows) {
  expect_error<ShapeError>([] { F::max_pooling_2d(Variable(randn({0, 3, 4, 4})), 2); },
                           {"max_pooling_2d", "(0, 3, 4, 4)", "empty"});
  expect_error<ShapeError>([] { F::max_pooling_2d(Variable(randn({2, 0, 4, 4})), 2); }, {"max_pooling_2d"});
  EXPECT_EQ(F::average_pooling_2d(Variable(randn({0, 3, 4, 4})), 2).shape(), (Shape{0, 3, 2, 2}));
}

TEST(MaxPooling2D, DoubleBackward) {
  // The gradient is linear in gy: its own gradient gathers ggx at the maxima.
  Array x = distinct({2, 3, 6, 7});
  check_double_backward(max_fn(3, 2, 1), {x}, {randn({2, 3, 4, 4}, Dtype::float64, 2)});
  check_double_backward(max_fn(3, 2, 1), {make_noncontiguous(x)},
                        {make_noncontiguous(randn({2, 3, 4, 4}, Dtype::float64, 2))});
  // The gather (the gradient's gradient) is recorded too: its backward is the scatter again.
  const Array gy0 = randn({2, 3, 4, 4}, Dtype::float64, 3);
  const TestFunction gather = [&](const std::vector<Variable>& v) {
    auto backprop = force_backprop_mode();  // the checker evaluates f without backprop too
    Variable xv(x, true), gy(gy0, true);
    Variable y = F::max_pooling_2d(xv, 3, 2, 1);
    auto gx = grad({y}, {xv}, {gy}, {.enable_double_backprop = true});
    return grad({gx[0]}, {gy}, {v[0]}, {.enable_double_backprop = true});
  };
  check_backward(gather, {randn({2, 3, 6, 7}, Dtype::float64, 4)});
  check_double_backward(gather, {randn({2, 3, 6, 7}, Dtype::float64, 4)}, {randn({2, 3, 4, 4}, Dtype::float64, 5)});
}

TEST(MaxPooling2D, CpuMatchesReference) {
  // 16 x 32 x 24 x 24 = 294912 inputs: the threaded loops. The maximum is exact, and so is x's
  // gradient where the windows do not overlap (2 x 2 at stride 2: a copy of gy); 3 x 3 windows at
  // stride 2 add the gradients of up to 2 x 2 windows that pick the same element.
  expect_cpu_matches_reference(with_grad(max_fn(2)), {randn({16, 32, 24, 24}, Dtype::float32, 1)});
  expect_cpu_matches_reference(with_grad(max_fn(3, 2, 1)), {randn({8, 16, 25, 23}, Dtype::float32, 2)}, 2 * 2);
  expect_cpu_matches_reference(with_grad(max_fn(3, 2, 1, false)),
                               {make_noncontiguous(randn({4, 8, 13, 14}, Dtype::float32, 3))}, 2 * 2);
  expect_cpu_matches_reference(with_grad(max_fn(2)), {randn({2, 3, 5, 6}, Dtype::float64, 4)}, 0.0, 0.0);
  expect_cpu_matches_reference(max_fn(2), {randn({2, 3, 5, 6}, Dtype::float32, 5).astype(Dtype::float16)}, 0.0, 0.0);
}

// ---- average pooling ----------------------------------------------------------------------------

TEST(AveragePooling2D, KnownValues) {
  for (Device dev : kDevices) {
    for (Dtype dt : {Dtype::float32, Dtype::float64}) {
      SCOPED_TRACE(to_string(dev) + " " + std::string(dtype_name(dt)));
      Variable x(Array::arange(0.0, 16.0, 1.0, dt, dev).reshape({1, 1, 4, 4}));
      EXPECT_EQ(vec(F::average_pooling_2d(x, 2)), (std::vector<double>{2.5, 4.5, 10.5, 12.5}));
      // Padding counts as zeros in the divisor (Chainer's pad_value = 0).
      Variable yp = F::average_pooling_2d(x, 2, 2, 1);
      ASSERT_EQ(yp.shape(), (Shape{1, 1, 3, 3}));
      EXPECT_EQ(vec(yp), (std::vector<double>{0, 0.75, 0.75, 3, 7.5, 4.5, 3, 6.75, 3.75}));
      // cover_all: the clipped last window still divides by 9.
      Variable yc = F::average_pooling_2d(x, 3, 2, 0, true);
      ASSERT_EQ(yc.shape(), (Shape{1, 1, 2, 2}));
      expect_near_vec(
          vec(yc), {5, (2 + 3 + 6 + 7 + 10 + 11) / 9.0, (8 + 9 + 10 + 12 + 13 + 14) / 9.0, (10 + 11 + 14 + 15) / 9.0});
      EXPECT_EQ(F::average_pooling_2d(x, 3, 2).shape(), (Shape{1, 1, 1, 1}));
    }
  }
}

TEST(AveragePooling2D, Backward) {
  check_backward(avg_fn(2), {randn({2, 3, 4, 6})});
  check_backward(avg_fn(3, 2, 1), {randn({1, 3, 6, 7}, Dtype::float64, 2)});
  check_backward(avg_fn(3, 2, 1, true), {randn({2, 2, 6, 7}, Dtype::float64, 3)});
  check_backward(avg_fn(F::Int2{2, 3}, F::Int2{1, 2}, F::Int2{1, 0}), {randn({2, 2, 5, 7}, Dtype::float64, 4)});
  check_backward(avg_fn(3, 2, 1), {make_noncontiguous(randn({2, 3, 6, 7}, Dtype::float64, 5))});
  check_backward(avg_fn(2, 1, 1), {randn({2, 3, 4, 4}, Dtype::float64, 6).to(Device::reference())});
  check_backward(avg_fn(2), {randn({0, 3, 4, 4})});
}

TEST(AveragePooling2D, DoubleBackward) {
  check_double_backward(avg_fn(3, 2, 1), {randn({2, 3, 6, 7})}, {randn({2, 3, 3, 4}, Dtype::float64, 2)});
  check_double_backward(avg_fn(3, 2, 1, true), {make_noncontiguous(randn({1, 2, 6, 7}))},
                        {make_noncontiguous(randn({1, 2, 4, 4}, Dtype::float64, 2))});
}

TEST(AveragePooling2D, CpuMatchesReference) {
  // A window's kh * kw terms; x's gradient adds those of the windows that cover it, no more.
  expect_cpu_matches_reference(with_grad(avg_fn(2)), {randn({16, 32, 24, 24}, Dtype::float32, 1)}, 2 * 2);
  expect_cpu_matches_reference(with_grad(avg_fn(3, 2, 1, true)), {randn({8, 16, 25, 23}, Dtype::float32, 2)}, 3 * 3);
  expect_cpu_matches_reference(with_grad(avg_fn(3, 1, 1)),
                               {make_noncontiguous(randn({4, 8, 13, 14}, Dtype::float32, 3))}, 3 * 3);
  expect_cpu_matches_reference(with_grad(avg_fn(2, 2, 1)), {randn({2, 3, 5, 6}, Dtype::float64, 4)}, 2 * 2);
  // bfloat16: computed in float32, rounded once.
  expect_cpu_matches_reference(avg_fn(2), {randn({2, 3, 5, 6}, Dtype::float32, 5).astype(Dtype::bfloat16)},
                               rensa::test::rounded_once_tolerance(Dtype::bfloat16, 2 * 2));
}

// ---- global average pooling ---------------------------------------------------------------------

TEST(GlobalAveragePooling2D, ValuesAndGradients) {
  Variable x(Array::arange(0.0, 12.0, 1.0, Dtype::float64).reshape({1, 3, 2, 2}));
  Variable y = F::global_average_pooling_2d(x);
  ASSERT_EQ(y.shape(), (Shape{1, 3}));
  EXPECT_EQ(vec(y), (std::vector<double>{1.5, 5.5, 9.5}));
  EXPECT_EQ(F::global_average_pooling_2d(x, true).shape(), (Shape{1, 3, 1, 1}));
  const TestFunction f = [](const std::vector<Variable>& v) {
    return std::vector<Variable>{F::global_average_pooling_2d(v[0])};
  };
  check_backward(f, {randn({2, 3, 4, 5})});
  check_backward(f, {make_noncontiguous(randn({2, 3, 4, 5}))});
  check_double_backward(f, {randn({2, 3, 4, 5})}, {randn({2, 3}, Dtype::float64, 2)});
  check_backward(f, {randn({0, 3, 4, 5})});
  expect_cpu_matches_reference(with_grad(f), {randn({16, 64, 8, 8}, Dtype::float32, 3)}, 8 * 8);
}

// ---- errors -------------------------------------------------------------------------------------

// Chainer's cover_all rounds with floor division: a window larger than the input by less than a
// stride still fits once (GoogLeNet's 3x3, stride-2 pools on a 2x2 map), one larger by more does not.
TEST(MaxPooling2D, WindowLargerThanTheInputWithCoverAll) {
  Variable x(Array::from_vector<double>({1, 4, 3, 2}, {1, 1, 2, 2}), true);
  Variable y = F::max_pooling_2d(x, 3, 2);
  EXPECT_EQ(y.shape(), (Shape{1, 1, 1, 1}));
  EXPECT_EQ(y.array().item<double>(), 4.0);
  rensa::testing::check_backward([](const Variable& v) { return F::max_pooling_2d(v, 3, 2); },
                                 randn({2, 3, 2, 2}).astype(Dtype::float64));
  expect_error<ShapeError>([&] { F::max_pooling_2d(x, 3, 2, 0, false); }, {"max_pooling_2d", "larger than"});
  expect_error<ShapeError>([&] { F::max_pooling_2d(Variable(randn({1, 1, 1, 1})), 3, 1); },
                           {"max_pooling_2d", "larger than"});
}

TEST(Pooling2D, Errors) {
  Variable x(randn({2, 3, 5, 5}));
  for (const char* name : {"max_pooling_2d", "average_pooling_2d"}) {
    const bool is_max = std::string(name) == "max_pooling_2d";
    auto pool = [&](const Variable& v, F::Int2 k, std::optional<F::Int2> s, F::Int2 p, bool cover_all) {
      return is_max ? F::max_pooling_2d(v, k, s, p, cover_all) : F::average_pooling_2d(v, k, s, p, cover_all);
    };
    expect_error<ShapeError>(
        [&] {
          pool(Variable(randn({3, 5, 5})), 2, std::nullopt, 0, false);
        },
        {name, "(3, 5, 5)", "4 axes"});
    expect_error<ShapeError>([&] { pool(x, 6, std::nullopt, 0, false); },
                             {name, "window (6, 6)", "(2, 3, 5, 5)", "larger than the padded input (5, 5)"});
    expect_error<ValueError>([&] { pool(x, 2, std::nullopt, 2, false); }, {name, "pad (2, 2)", "ksize (2, 2)"});
    expect_error<ValueError>([&] { pool(x, 2, 0, 0, false); }, {name, "stride (0, 0)"});
    expect_error<ValueError>([&] { pool(x, F::Int2{0, 2}, std::nullopt, 0, false); }, {name, "ksize (0, 2)"});
    // 4 rows, ksize 2, stride 3, pad 1, cover_all: windows at rows -1, 2 and 5, the last past the input.
    expect_error<ValueError>(
        [&] {
          pool(Variable(randn({1, 1, 4, 4})), 2, 3, 1, true);
        },
        {name, "padding only", "(1, 1, 4, 4)"});
    expect_error<DtypeError>(
        [&] {
          pool(Variable(Array::zeros({2, 3, 5, 5}, Dtype::int32)), 2, std::nullopt, 0, false);
        },
        {name, "int32"});
  }
  expect_error<ShapeError>(
      [&] {
        F::global_average_pooling_2d(Variable(randn({2, 3})));
      },
      {"global_average_pooling_2d", "(2, 3)", "4 axes"});
  expect_error<DtypeError>(
      [&] {
        F::global_average_pooling_2d(Variable(Array::zeros({2, 3, 2, 2}, Dtype::int64)));
      },
      {"global_average_pooling_2d", "int64"});
}

// ---- channels-last inputs (the layout convolutions hand pooling on the cpu) -----------------------

TEST(Pooling2D, ChannelsLastKeepsLayoutAndMatchesReference) {
  auto cl = [](const Array& a) { return a.to_memory_format(MemoryFormat::channels_last); };
  for (bool is_max : {true, false}) {
    SCOPED_TRACE(is_max ? "max" : "average");
    auto f = [&](F::Int2 k, std::optional<F::Int2> s, F::Int2 p, bool cover) {
      return is_max ? max_fn(k, s, p, cover) : avg_fn(k, s, p, cover);
    };
    // Threaded sizes, windows with padding and overlap, cover_all, float64, bfloat16 (computed in
    // float32, rounded once). The accumulation: a window's kh * kw terms (an average's sum; x's
    // gradients add fewer: 1, 2 x 2, 2 x 2 windows).
    expect_cpu_matches_reference(with_grad(f(2, std::nullopt, 0, false)),
                                 {cl(randn({16, 32, 24, 24}, Dtype::float32, 1))}, 2 * 2);
    expect_cpu_matches_reference(with_grad(f(3, 2, 1, true)), {cl(randn({4, 16, 13, 11}, Dtype::float32, 2))}, 3 * 3);
    expect_cpu_matches_reference(with_grad(f({2, 3}, F::Int2{1, 2}, {1, 0}, false)),
                                 {cl(randn({2, 5, 7, 9}, Dtype::float64, 3))}, 2 * 3);
    expect_cpu_matches_reference(f(2, std::nullopt, 0, false),
                                 {cl(randn({2, 6, 6, 6}, Dtype::float32, 4)).astype(Dtype::bfloat16)},
                                 rensa::test::rounded_once_tolerance(Dtype::bfloat16, 2 * 2));
    // Outputs and x's gradient keep the layout, whatever layout gy comes in.
    Variable x(cl(randn({2, 8, 6, 6}, Dtype::float32, 5)), true);
    Variable y = f(2, std::nullopt, 0, false)({x})[0];
    EXPECT_EQ(y.array().suggest_memory_format(), MemoryFormat::channels_last);
    auto g = grad({y}, {x}, {Variable(Array::ones(y.shape()))});
    EXPECT_EQ(g[0].array().suggest_memory_format(), MemoryFormat::channels_last);
    // Gradients in float64, through the channels-last kernels.
    Array x64 = cl(distinct({2, 4, 6, 7}));
    check_backward(f(3, 2, 1, true), {x64});
    check_double_backward(f(3, 2, 1, true), {x64}, {cl(randn({2, 4, 4, 4}, Dtype::float64, 6))});
  }
}

TEST(MaxPooling2D, ChannelsLastTiesAndNans) {
  // The first maximum of each window wins, and a NaN wins over numbers, as in NCHW. (Two channels
  // and two windows, so the output is channels-last only and the NHWC kernels run.)
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Array x = Array::from_vector<double>({1, 1, 1, 1, 1, 1, 1, 1, 2, nan, 5, 5, 2, 0, 5, 5}, {1, 2, 2, 4})
                .to_memory_format(MemoryFormat::channels_last);
  for (Dtype dt : {Dtype::float64, Dtype::float32}) {
    Variable xv(x.astype(dt).to_memory_format(MemoryFormat::channels_last), true);
    Variable y = F::max_pooling_2d(xv, 2);
    ASSERT_EQ(y.array().suggest_memory_format(), MemoryFormat::channels_last);
    const auto yv = vec(y);
    EXPECT_EQ(yv[0], 1.0);
    EXPECT_EQ(yv[1], 1.0);
    EXPECT_TRUE(std::isnan(yv[2]));
    EXPECT_EQ(yv[3], 5.0);
    auto g = grad({y}, {xv}, {Variable(Array::ones(y.shape(), dt))});
    EXPECT_EQ(vec(g[0]), (std::vector<double>{1, 0, 1, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0}));
  }
}

TEST(Pooling2D, KernelRefusesAnOutputInNeitherLayout) {
  const Array x = randn({1, 2, 4, 4}, Dtype::float32, 1);
  const Array y = Array::empty({1, 2, 4, 2}, Dtype::float32).transpose({0, 1, 3, 2});  // (1, 2, 2, 4) transposed
  const Pool2dParams p{2, 2, 2, 2, 0, 0};
  const auto kernel = RENSA_KERNEL(Device::cpu(), avg_pool2d_forward, "test");
  expect_error<ValueError>([&] { kernel(x, y, p); }, {"avg_pool2d_forward", "(1, 2, 2, 4)", "not contiguous"});
}
