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

// convolution_2d as a TestFunction; inputs x, W and optionally b.
TestFunction conv_fn(F::Conv2dOptions o = {}) {
  return [o](const std::vector<Variable>& v) {
    return std::vector<Variable>{F::convolution_2d(v[0], v[1], v.size() > 2 ? v[2] : Variable(), o)};
  };
}

TestFunction deconv_fn(F::Deconv2dOptions o = {}) {
  return [o](const std::vector<Variable>& v) {
    return std::vector<Variable>{F::deconvolution_2d(v[0], v[1], v.size() > 2 ? v[2] : Variable(), o)};
  };
}

// The forward values and the gradients of every input, for comparing backends.
TestFunction with_grads(const TestFunction& f) {
  return [f](const std::vector<Variable>& v) {
    std::vector<Variable> in;
    for (const auto& x : v) in.emplace_back(x.array(), true);
    std::vector<Variable> y = f(in);
    // A fixed, non-uniform output gradient: y's values themselves.
    std::vector<Variable> out = y;
    std::vector<Variable> g = grad(y, in, {Variable(y[0].array().copy())});
    out.insert(out.end(), g.begin(), g.end());
    return out;
  };
}

std::vector<double> vec(const Variable& v) {
  return v.array().to_vector<double>();
}

double dot(const Array& a, const Array& b) {
  const auto av = a.to_vector<double>(), bv = b.to_vector<double>();
  double s = 0.0;
  for (std::size_t i = 0; i < av.size(); ++i) s += av[i] * bv[i];
  return s;
}

const Device kDevices[] = {Device::cpu(), Device::reference()};

}  // namespace

// ---- forward values -----------------------------------------------------------------------------

TEST(Convolution2D, KnownValues) {
  for (Device dev : kDevices) {
    for (Dtype dt : {Dtype::float32, Dtype::float64}) {
      SCOPED_TRACE(to_string(dev) + " " + std::string(dtype_name(dt)));
      Variable x(Array::arange(1.0, 10.0, 1.0, dt, dev).reshape({1, 1, 3, 3}));
      Variable W(Array::from_vector<double>({1, 0, 0, -1}, {1, 1, 2, 2}).astype(dt).to(dev));
      Variable b(Array::from_vector<double>({0.5}).astype(dt).to(dev));
      // y[i, j] = x[i, j] - x[i + 1, j + 1] = -4.
      Variable y = F::convolution_2d(x, W);
      ASSERT_EQ(y.shape(), (Shape{1, 1, 2, 2}));
      EXPECT_EQ(vec(y), (std::vector<double>{-4, -4, -4, -4}));
      EXPECT_EQ(vec(F::convolution_2d(x, W, b)), (std::vector<double>{-3.5, -3.5, -3.5, -3.5}));
      // pad 1, stride 2: windows at rows/cols -1 and 1 of the input.
      Variable yp = F::convolution_2d(x, W, Variable(), {.stride = 2, .pad = 1});
      ASSERT_EQ(yp.shape(), (Shape{1, 1, 2, 2}));
      EXPECT_EQ(vec(yp), (std::vector<double>{-1, -3, -7, -4}));
      // dilate 2: the taps x[i, j] and x[i + 2, j + 2]: 1 - 9.
      Variable yd = F::convolution_2d(x, W, Variable(), {.dilate = 2});
      ASSERT_EQ(yd.shape(), (Shape{1, 1, 1, 1}));
      EXPECT_EQ(vec(yd), (std::vector<double>{-8}));
      // cover_all with stride 2: one more window past the bottom/right edge.
      Variable yc = F::convolution_2d(x, W, Variable(), {.stride = 2, .cover_all = true});
      ASSERT_EQ(yc.shape(), (Shape{1, 1, 2, 2}));
      EXPECT_EQ(vec(yc), (std::vector<double>{1 - 5, 3, 7, 9}));
    }
  }
}

TEST(Convolution2D, GroupsAreIndependent) {
  // Two groups of one channel each: output channel g sees only input channel g.
  Variable x(Array::from_vector<double>({1, 2, 3, 4, 10, 20, 30, 40}, {1, 2, 2, 2}));
  Variable W(Array::from_vector<double>({1, 1, 1, 1, 1, 0, 0, 1}, {2, 1, 2, 2}));
  Variable y = F::convolution_2d(x, W, Variable(), {.groups = 2});
  ASSERT_EQ(y.shape(), (Shape{1, 2, 1, 1}));
  EXPECT_EQ(vec(y), (std::vector<double>{10, 50}));
  // Rectangular kernel, separate strides and pads.
  Variable x2(randn({2, 3, 7, 6}));
  EXPECT_EQ(F::convolution_2d(x2, Variable(randn({4, 3, 3, 2})), Variable(), {.stride = {2, 1}, .pad = {1, 0}}).shape(),
            (Shape{2, 4, 4, 5}));
}

TEST(Deconvolution2D, KnownValues) {
  for (Device dev : kDevices) {
    SCOPED_TRACE(to_string(dev));
    Variable x(Array::from_vector<double>({1, 2, 3, 4}, {1, 1, 2, 2}).to(dev));
    Variable W(Array::ones({1, 1, 2, 2}, Dtype::float64, dev));
    Variable y = F::deconvolution_2d(x, W);
    ASSERT_EQ(y.shape(), (Shape{1, 1, 3, 3}));
    EXPECT_EQ(vec(y), (std::vector<double>{1, 3, 2, 4, 10, 6, 3, 7, 4}));
    Variable y2 = F::deconvolution_2d(x, W, Variable(Array::full({1}, 0.5, Dtype::float64, dev)), {.stride = 2});
    ASSERT_EQ(y2.shape(), (Shape{1, 1, 4, 4}));
    EXPECT_EQ(vec(y2),
              (std::vector<double>{1.5, 1.5, 2.5, 2.5, 1.5, 1.5, 2.5, 2.5, 3.5, 3.5, 4.5, 4.5, 3.5, 3.5, 4.5, 4.5}));
    // outsize one larger than the default: the extra row/column receives nothing (but the bias).
    Variable y3 = F::deconvolution_2d(x, W, Variable(), {.stride = 2, .outsize = F::Int2{5, 5}});
    ASSERT_EQ(y3.shape(), (Shape{1, 1, 5, 5}));
    const auto v3 = vec(y3);
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(v3[static_cast<std::size_t>(4 * 5 + i)], 0.0);
      EXPECT_EQ(v3[static_cast<std::size_t>(i * 5 + 4)], 0.0);
    }
    // pad crops the border of the full output.
    Variable y4 = F::deconvolution_2d(x, W, Variable(), {.pad = 1});
    ASSERT_EQ(y4.shape(), (Shape{1, 1, 1, 1}));
    EXPECT_EQ(vec(y4), (std::vector<double>{10}));
  }
}

TEST(Deconvolution2D, IsTheTransposeOfConvolution) {
  // <conv(x, W), g> == <x, deconv(g, W)> for every geometry, including sizes with leftover rows.
  struct Case {
    Shape x, w;
    F::Conv2dOptions o;
  };
  const std::vector<Case> cases = {
      {{2, 3, 7, 8}, {4, 3, 3, 3}, {}},
      {{2, 3, 8, 7}, {4, 3, 3, 2}, {.stride = 2, .pad = 1}},
      {{1, 4, 9, 9}, {6, 2, 3, 3}, {.stride = 3, .pad = {1, 2}, .groups = 2}},
      {{2, 2, 9, 8}, {2, 2, 2, 3}, {.stride = 2, .dilate = {2, 1}}},
      {{1, 2, 6, 7}, {3, 2, 3, 3}, {.stride = 2, .cover_all = true}},
  };
  for (Device dev : kDevices) {
    for (const auto& c : cases) {
      Array x = randn(c.x, Dtype::float64, 1, dev), W = randn(c.w, Dtype::float64, 2, dev);
      Variable y = F::convolution_2d(x, W, Variable(), c.o);
      Array g = randn(y.shape(), Dtype::float64, 3, dev);
      Variable xt = F::deconvolution_2d(g, W, Variable(),
                                        {.stride = c.o.stride,
                                         .pad = c.o.pad,
                                         .outsize = F::Int2{c.x[2], c.x[3]},
                                         .dilate = c.o.dilate,
                                         .groups = c.o.groups});
      ASSERT_EQ(xt.shape(), c.x);
      EXPECT_NEAR(dot(y.array(), g), dot(x, xt.array()), 1e-9) << "x " << c.x << " W " << c.w;
    }
  }
}

TEST(Convolution2D, SizeZeroBatch) {
  Variable y = F::convolution_2d(Variable(randn({0, 3, 5, 5})), Variable(randn({2, 3, 3, 3})), Variable(randn({2})));
  EXPECT_EQ(y.shape(), (Shape{0, 2, 3, 3}));
  EXPECT_EQ(F::deconvolution_2d(Variable(randn({0, 2, 3, 3})), Variable(randn({2, 3, 3, 3}))).shape(),
            (Shape{0, 3, 5, 5}));
}

// ---- gradients ----------------------------------------------------------------------------------

TEST(Convolution2D, Backward) {
  struct Case {
    Shape x, w;
    F::Conv2dOptions o;
  };
  const std::vector<Case> cases = {
      {{2, 3, 5, 6}, {4, 3, 3, 3}, {}},
      {{2, 3, 6, 5}, {2, 3, 3, 2}, {.stride = 2, .pad = 1}},
      {{1, 4, 7, 7}, {6, 2, 3, 3}, {.stride = {2, 1}, .pad = {1, 2}, .groups = 2}},
      {{2, 2, 7, 6}, {3, 2, 2, 2}, {.dilate = 2}},
      {{1, 2, 6, 7}, {3, 2, 3, 3}, {.stride = 2, .cover_all = true}},
      {{1, 3, 4, 4}, {3, 1, 3, 3}, {.pad = 1, .groups = 3}},  // depthwise
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(::testing::Message() << "x " << c.x << " W " << c.w);
    Array x = randn(c.x, Dtype::float64, 1), W = randn(c.w, Dtype::float64, 2), b = randn({c.w[0]}, Dtype::float64, 3);
    check_backward(conv_fn(c.o), {x, W, b});
    check_backward(conv_fn(c.o), {x, W});
    check_backward(conv_fn(c.o), {make_noncontiguous(x), make_noncontiguous(W), make_noncontiguous(b)});
  }
  // The reference backend's kernels, once.
  check_backward(conv_fn({.stride = 2, .pad = 1, .groups = 2}),
                 {randn({2, 4, 5, 5}, Dtype::float64, 4, Device::reference()),
                  randn({2, 2, 3, 3}, Dtype::float64, 5, Device::reference()),
                  randn({2}, Dtype::float64, 6, Device::reference())});
  // Empty batch.
  check_backward(conv_fn(), {randn({0, 2, 4, 4}), randn({3, 2, 3, 3}), randn({3})});
}

TEST(Deconvolution2D, Backward) {
  struct Case {
    Shape x, w;
    F::Deconv2dOptions o;
  };
  const std::vector<Case> cases = {
      {{2, 3, 3, 4}, {3, 2, 3, 3}, {}},
      {{2, 3, 3, 3}, {3, 2, 3, 2}, {.stride = 2, .pad = 1}},
      {{1, 4, 3, 3}, {4, 3, 3, 3}, {.stride = 2, .pad = {1, 0}, .outsize = F::Int2{6, 8}, .groups = 2}},
      {{1, 2, 3, 3}, {2, 2, 2, 2}, {.dilate = {1, 2}}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(::testing::Message() << "x " << c.x << " W " << c.w);
    Array x = randn(c.x, Dtype::float64, 1), W = randn(c.w, Dtype::float64, 2);
    Array b = randn({c.w[1] * c.o.groups}, Dtype::float64, 3);
    check_backward(deconv_fn(c.o), {x, W, b});
    check_backward(deconv_fn(c.o), {x, W});
    check_backward(deconv_fn(c.o), {make_noncontiguous(x), make_noncontiguous(W), make_noncontiguous(b)});
  }
  check_backward(deconv_fn({.stride = 2}), {randn({0, 2, 3, 3}), randn({2, 3, 2, 2}), randn({3})});
}

TEST(Convolution2D, DoubleBackward) {
  Array x = randn({2, 4, 5, 5}, Dtype::float64, 1), W = randn({4, 2, 3, 3}, Dtype::float64, 2);
  Array b = randn({4}, Dtype::float64, 3);
  const F::Conv2dOptions o{.stride = 2, .pad = 1, .groups = 2};
  Array gy = randn(F::convolution_2d(x, W, Variable(), o).shape(), Dtype::float64, 4);
  check_double_backward(conv_fn(o), {x, W, b}, {gy});
  check_double_backward(conv_fn({.dilate = 2}), {randn({1, 2, 6, 6}), randn({2, 2, 2, 2}, Dtype::float64, 5)},
                        {randn({1, 2, 4, 4}, Dtype::float64, 6)});
  check_double_backward(conv_fn(o), {make_noncontiguous(x), make_noncontiguous(W), b}, {make_noncontiguous(gy)});
  // Third order: the gradient of the gradient of the gradient in W (all three operations' backward).
  Variable xv(x, true), Wv(W, true);
  Variable y = F::convolution_2d(xv, Wv, Variable(), o);
  auto g1 = grad({y}, {xv}, {Variable(gy)}, {.enable_double_backprop = true});
  auto g2 = grad({g1[0]}, {Wv}, {Variable(x)}, {.enable_double_backprop = true});
  EXPECT_EQ(g2[0].shape(), W.shape());
}

TEST(Deconvolution2D, DoubleBackward) {
  Array x = randn({2, 2, 3, 3}, Dtype::float64, 1), W = randn({2, 3, 3, 3}, Dtype::float64, 2);
  Array b = randn({3}, Dtype::float64, 3);
  const F::Deconv2dOptions o{.stride = 2, .pad = 1};
  Array gy = randn(F::deconvolution_2d(x, W, Variable(), o).shape(), Dtype::float64, 4);
  check_double_backward(deconv_fn(o), {x, W, b}, {gy});
  check_double_backward(deconv_fn(o), {make_noncontiguous(x), make_noncontiguous(W)}, {gy});
}

// ---- cpu (oneDNN for float32) against the reference loops -----------------------------------------

// The accumulation of each check is its longest sum: the weight gradient's N * Ho * Wo, or the
// forward's C / groups * kh * kw where that is longer.
TEST(Convolution2D, CpuMatchesReference) {
  // 8 x 32 x 18 x 18 = 82944 outputs: oneDNN's threaded blocked kernels and the OpenMP loops.
  expect_cpu_matches_reference(with_grads(conv_fn()),
                               {randn({8, 16, 20, 20}, Dtype::float32, 1), randn({32, 16, 3, 3}, Dtype::float32, 2),
                                randn({32}, Dtype::float32, 3)},
                               2592);
  // Strides, pads, dilation, groups, cover_all and non-contiguous inputs.
  expect_cpu_matches_reference(
      with_grads(conv_fn({.stride = 2, .pad = 1, .dilate = {1, 2}, .groups = 2})),
      {make_noncontiguous(randn({4, 8, 23, 21}, Dtype::float32, 4)),
       make_noncontiguous(randn({12, 4, 3, 3}, Dtype::float32, 5)), randn({12}, Dtype::float32, 6)},
      480);
  expect_cpu_matches_reference(with_grads(conv_fn({.stride = 3, .pad = 2, .cover_all = true})),
                               {randn({3, 5, 17, 16}, Dtype::float32, 7), randn({7, 5, 4, 4}, Dtype::float32, 8)}, 147);
  // Few input channels: the weight gradient by per-image GEMMs (split among threads).
  expect_cpu_matches_reference(with_grads(conv_fn({.stride = {1, 2}, .pad = 1, .dilate = 2})),
                               {randn({3, 3, 20, 21}, Dtype::float32, 19), randn({6, 3, 3, 3}, Dtype::float32, 20)},
                               540);
  // Rows left over at the bottom/right (oneDNN gets a negative right padding).
  expect_cpu_matches_reference(with_grads(conv_fn({.stride = 3})),
                               {randn({2, 3, 11, 12}, Dtype::float32, 9), randn({4, 3, 3, 3}, Dtype::float32, 10)}, 27);
  // The network's shapes: one input channel, then 32 -> 64 (and again, from the primitive cache).
  for (int rep = 0; rep < 2; ++rep) {
    expect_cpu_matches_reference(with_grads(conv_fn()),
                                 {randn({4, 1, 28, 28}, Dtype::float32, 11), randn({32, 1, 3, 3}, Dtype::float32, 12),
                                  randn({32}, Dtype::float32, 13)},
                                 2704);
  }
  // float64 (im2col + dgemm) and float16 (computed in float32, rounded once).
  expect_cpu_matches_reference(with_grads(conv_fn({.stride = 2, .pad = 1, .groups = 3})),
                               {randn({2, 6, 9, 8}, Dtype::float64, 14), randn({6, 2, 3, 3}, Dtype::float64, 15),
                                randn({6}, Dtype::float64, 16)},
                               2 * 5 * 4);  // N * Ho * Wo per gW element (forward and gx: 2 * 3 * 3)
  expect_cpu_matches_reference(conv_fn({.pad = 1}),
                               {randn({2, 3, 6, 6}, Dtype::float32, 17).astype(Dtype::float16),
                                randn({4, 3, 3, 3}, Dtype::float32, 18).astype(Dtype::float16)},
                               rensa::test::rounded_once_tolerance(Dtype::float16, 3 * 3 * 3));  // C * kh * kw
}

TEST(Deconvolution2D, CpuMatchesReference) {
  expect_cpu_matches_reference(with_grads(deconv_fn({.stride = 2, .pad = 1})),
                               {randn({4, 16, 12, 12}, Dtype::float32, 1), randn({16, 8, 4, 4}, Dtype::float32, 2),
                                randn({8}, Dtype::float32, 3)},
                               4 * 12 * 12);
  expect_cpu_matches_reference(
      with_grads(deconv_fn({.stride = 2, .outsize = F::Int2{8, 9}, .groups = 2})),
      {make_noncontiguous(randn({2, 4, 4, 4}, Dtype::float32, 4)), randn({4, 3, 2, 3}, Dtype::float32, 5)}, 2 * 4 * 4);
  expect_cpu_matches_reference(with_grads(deconv_fn({.stride = 3, .pad = 1, .dilate = 2})),
                               {randn({2, 3, 5, 4}, Dtype::float64, 6), randn({3, 2, 3, 3}, Dtype::float64, 7)},
                               2 * 5 * 4);  // N * H * W per gW element (gx: 2 * 3 * 3)
}

// ---- errors -------------------------------------------------------------------------------------

TEST(Convolution2D, Errors) {
  Variable x(randn({2, 3, 5, 5})), W(randn({4, 3, 3, 3}));
  expect_error<ShapeError>(
      [&] {
        F::convolution_2d(x, Variable(randn({4, 2, 3, 3})));
      },
      {"convolution_2d", "(2, 3, 5, 5)", "(4, 2, 3, 3)", "3 channels"});
  expect_error<ShapeError>(
      [&] {
        F::convolution_2d(x, Variable(randn({4, 3, 6, 3})));
      },
      {"convolution_2d", "(2, 3, 5, 5)", "(4, 3, 6, 3)", "larger than the padded input"});
  expect_error<ShapeError>(
      [&] {
        F::convolution_2d(x, Variable(randn({4, 3, 3, 3})), Variable(), {.dilate = 3});
      },
      {"convolution_2d", "(2, 3, 5, 5)", "spans (7, 7)", "larger"});
  expect_error<ShapeError>(
      [&] {
        F::convolution_2d(x, Variable(randn({4, 1, 3, 3})), Variable(), {.groups = 2});
      },
      {"convolution_2d", "groups 2", "3 channels", "(2, 3, 5, 5)", "(4, 1, 3, 3)"});
  expect_error<ShapeError>(
      [&] {
        F::convolution_2d(Variable(randn({2, 4, 5, 5})), Variable(randn({3, 2, 3, 3})), Variable(), {.groups = 2});
      },
      {"convolution_2d", "groups 2", "3 output channels", "(3, 2, 3, 3)"});
  expect_error<ShapeError>([&] { F::convolution_2d(x, W, Variable(randn({3}))); },
                           {"convolution_2d", "b (3,)", "4 output channels", "(4, 3, 3, 3)"});
  expect_error<ShapeError>(
      [&] {
        F::convolution_2d(Variable(randn({3, 5, 5})), W);
      },
      {"convolution_2d", "(3, 5, 5)", "4 axes"});
  expect_error<ShapeError>(
      [&] {
        F::convolution_2d(x, Variable(randn({4, 3, 3})));
      },
      {"convolution_2d", "(4, 3, 3)", "4 axes"});
  expect_error<DtypeError>(
      [&] {
        F::convolution_2d(Variable(Array::zeros({2, 3, 5, 5}, Dtype::int32)), W);
      },
      {"convolution_2d", "int32"});
  expect_error<DtypeError>(
      [&] {
        F::convolution_2d(x, Variable(randn({4, 3, 3, 3}, Dtype::float32)));
      },
      {"convolution_2d", "float64", "float32"});
  expect_error<ValueError>([&] { F::convolution_2d(x, W, Variable(), {.stride = 0}); },
                           {"convolution_2d", "stride (0, 0)"});
  expect_error<ValueError>(
      [&] {
        F::convolution_2d(x, W, Variable(), {.pad = {0, -1}});
      },
      {"convolution_2d", "pad (0, -1)"});
  expect_error<ValueError>([&] { F::convolution_2d(x, W, Variable(), {.groups = 0}); }, {"convolution_2d", "groups 0"});
}

TEST(Deconvolution2D, Errors) {
  Variable x(randn({2, 3, 4, 4})), W(randn({3, 2, 3, 3}));
  expect_error<ShapeError>(
      [&] {
        F::deconvolution_2d(x, Variable(randn({4, 2, 3, 3})));
      },
      {"deconvolution_2d", "(2, 3, 4, 4)", "(4, 2, 3, 3)", "3 channels"});
  expect_error<ShapeError>([&] { F::deconvolution_2d(x, W, Variable(), {.groups = 2}); },
                           {"deconvolution_2d", "groups 2", "3 channels"});
  expect_error<ShapeError>([&] { F::deconvolution_2d(x, W, Variable(randn({3}))); },
                           {"deconvolution_2d", "b (3,)", "2 output channels"});
  expect_error<ShapeError>(
      [&] {
        F::deconvolution_2d(x, W, Variable(), {.stride = 2, .outsize = F::Int2{12, 9}});
      },
      {"deconvolution_2d", "outsize (12, 9)", "(2, 3, 4, 4)", "(3, 2, 3, 3)"});
  expect_error<ShapeError>([&] { F::deconvolution_2d(x, W, Variable(), {.pad = 3}); },
                           {"deconvolution_2d", "(2, 3, 4, 4)", "empty"});
  expect_error<DtypeError>(
      [&] {
        F::deconvolution_2d(Variable(Array::zeros({2, 3, 4, 4}, Dtype::int64)), W);
      },
      {"deconvolution_2d", "int64"});
}

// ---- channels-last ------------------------------------------------------------------------------

TEST(Convolution2D, ChannelsLastInputsMatchReference) {
  auto cl = [](const Array& a) { return a.to_memory_format(MemoryFormat::channels_last); };
  // Channels-last x (no reorder), gradients in either layout, the cache keyed by layout.
  for (int rep = 0; rep < 2; ++rep) {
    expect_cpu_matches_reference(with_grads(conv_fn({.pad = 1})),
                                 {cl(randn({4, 16, 12, 12}, Dtype::float32, 1)),
                                  randn({32, 16, 3, 3}, Dtype::float32, 2), randn({32}, Dtype::float32, 3)},
                                 576);
    expect_cpu_matches_reference(with_grads(conv_fn({.stride = 2, .groups = 2})),
                                 {randn({2, 8, 9, 10}, Dtype::float32, 4), randn({6, 4, 3, 3}, Dtype::float32, 5)}, 36);
  }
  expect_cpu_matches_reference(with_grads(deconv_fn({.stride = 2, .pad = 1})),
                               {cl(randn({2, 8, 6, 6}, Dtype::float32, 6)), randn({8, 4, 4, 4}, Dtype::float32, 7)},
                               72);
  // float64 channels-last input: gradients checked numerically.
  check_backward(conv_fn({.pad = 1}),
                 {cl(randn({2, 3, 5, 5}, Dtype::float64, 8)), randn({4, 3, 3, 3}, Dtype::float64, 9)});
  // Chained layers see channels-last inputs and gradients all along.
  auto two_layers = [](const std::vector<Variable>& v) {
    Variable h = F::relu(F::convolution_2d(v[0], v[1], Variable(), {.pad = 1}));
    return std::vector<Variable>{F::convolution_2d(h, v[2])};
  };
  // Nested sums add their lengths: y (9, then 16 * 3 * 3), fed back as gy, then h's gradient
  // (32 * 3 * 3) and the first weight's (N * 10 * 10).
  expect_cpu_matches_reference(with_grads(two_layers),
                               {randn({2, 1, 10, 10}, Dtype::float32, 10), randn({16, 1, 3, 3}, Dtype::float32, 11),
                                randn({32, 16, 3, 3}, Dtype::float32, 12)},
                               9 + 144 + 288 + 200);
}
