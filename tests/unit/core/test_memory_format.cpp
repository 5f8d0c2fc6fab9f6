// Channels-last arrays: creation, detection and conversion, and the rule that elementwise ops,
// reductions, convolutions and pooling keep (or produce) the layout with unchanged values.
#include <vector>

#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::expect_error;
using rensa::test::randn;

namespace {

Array channels_last(const Array& a) {
  return a.to_memory_format(MemoryFormat::channels_last);
}

bool is_cl_only(const Array& a) {
  return a.suggest_memory_format() == MemoryFormat::channels_last;
}

}  // namespace

TEST(MemoryFormat, EmptyChannelsLastHasNhwcStrides) {
  Array a = Array::empty({2, 3, 4, 5}, Dtype::float32, Device::cpu(), MemoryFormat::channels_last);
  EXPECT_EQ(a.shape(), (Shape{2, 3, 4, 5}));
  EXPECT_EQ(a.strides(), (Shape{60, 1, 15, 3}));
  EXPECT_TRUE(a.is_channels_last());
  EXPECT_FALSE(a.is_contiguous());
  EXPECT_TRUE(is_cl_only(a));
  Array c = Array::empty({2, 3, 4, 5}, Dtype::float32, Device::cpu(), MemoryFormat::contiguous);
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_FALSE(c.is_channels_last());
  EXPECT_EQ(c.suggest_memory_format(), MemoryFormat::contiguous);
}

TEST(MemoryFormat, OneChannelIsBothAndSuggestsContiguous) {
  Array a = Array::zeros({2, 1, 4, 5});
  EXPECT_TRUE(a.is_contiguous());
  EXPECT_TRUE(a.is_channels_last());
  EXPECT_EQ(a.suggest_memory_format(), MemoryFormat::contiguous);
  // A transposed (N, H, W, C) view that is not dense is neither.
  Array t = randn({2, 4, 6, 3}).slice(2, 0, 6, 2).transpose({0, 3, 1, 2});
  EXPECT_FALSE(t.is_channels_last());
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_FALSE(Array::zeros({2, 3}).is_channels_last());
}

TEST(MemoryFormat, ConversionKeepsValues) {
  const Array x = randn({2, 3, 4, 5});
  const Array cl = channels_last(x);
  EXPECT_TRUE(is_cl_only(cl));
  EXPECT_TRUE(array_equal(cl, x));
  EXPECT_TRUE(cl.to_memory_format(MemoryFormat::channels_last).shares_storage(cl));  // already there
  const Array back = cl.to_memory_format(MemoryFormat::contiguous);
  EXPECT_TRUE(back.is_contiguous());
  EXPECT_TRUE(array_equal(back, x));
  // Views of a channels-last array read the right elements.
  EXPECT_EQ(cl.at<double>({1, 2, 3, 4}), x.at<double>({1, 2, 3, 4}));
  EXPECT_TRUE(array_equal(cl.reshape({2, 60}), x.reshape({2, 60})));
  EXPECT_EQ(cl.to_vector<double>(), x.to_vector<double>());
}

TEST(MemoryFormat, Errors) {
  expect_error<ShapeError>(
      [] {
        Array::empty({2, 3}, Dtype::float32, Device::cpu(), MemoryFormat::channels_last);
      },
      {"Array::empty", "channels_last", "(2, 3)"});
  expect_error<ShapeError>(
      [] {
        Array::zeros({2, 3, 4}).to_memory_format(MemoryFormat::channels_last);
      },
      {"Array::to_memory_format", "channels_last", "(2, 3, 4)"});
}

TEST(MemoryFormat, ElementwiseOpsKeepChannelsLast) {
  for (Device dev : {Device::cpu(), Device::reference()}) {
    SCOPED_TRACE(to_string(dev));
    const Array x = randn({2, 8, 5, 6}, Dtype::float32, 1, dev), y = randn({2, 8, 5, 6}, Dtype::float32, 2, dev);
    const Array g = randn({1, 8, 1, 1}, Dtype::float32, 3, dev);
    const Variable xc(channels_last(x)), yc(channels_last(y)), gv(g);
    Variable r = F::relu(xc);
    EXPECT_TRUE(is_cl_only(r.array()));
    EXPECT_TRUE(array_equal(r.array(), F::relu(Variable(x)).array()));
    // With a broadcast per-channel operand, and with the channels-last operand second.
    Variable s = F::add(F::mul(xc, gv), yc);
    EXPECT_TRUE(is_cl_only(s.array()));
    EXPECT_TRUE(allclose(s.array(), F::add(F::mul(Variable(x), gv), Variable(y)).array()));
    Variable t = F::sub(Variable(x), yc);
    EXPECT_TRUE(is_cl_only(t.array()));
    EXPECT_TRUE(array_equal(t.array(), F::sub(Variable(x), Variable(y)).array()));
    // Contiguous operands stay contiguous.
    EXPECT_TRUE(F::relu(Variable(x)).array().is_contiguous());
  }
}

TEST(MemoryFormat, ReductionsOfChannelsLast) {
  // Every axis set, against the same reduction of the contiguous array (the per-channel sum over
  // (0, 2, 3) takes the row-sum path; the others must not).
  const Array x = randn({3, 16, 7, 9}, Dtype::float64, 4);
  const Array cl = channels_last(x);
  const std::vector<Shape> axes_sets = {{0, 2, 3}, {0}, {2, 3}, {1}, {0, 1}, {0, 3}, {1, 2, 3}, {0, 1, 2, 3}};
  for (const Shape& axes : axes_sets) {
    SCOPED_TRACE(::testing::PrintToString(axes));
    EXPECT_TRUE(
        allclose(F::sum(Variable(cl), axes, true).array(), F::sum(Variable(x), axes, true).array(), 1e-13, 1e-13));
    EXPECT_TRUE(array_equal(F::max(Variable(cl), axes, true).array(), F::max(Variable(x), axes, true).array()));
  }
  // float32 sums accumulate in double either way: equal to the last bit.
  const Array x32 = randn({8, 32, 12, 12}, Dtype::float32, 5);
  EXPECT_TRUE(
      array_equal(F::sum(Variable(channels_last(x32)), {0, 2, 3}).array(), F::sum(Variable(x32), {0, 2, 3}).array()));
}

TEST(MemoryFormat, ConvolutionOutputsAndGradientsAreChannelsLastOnCpu) {
  Variable x(randn({2, 3, 9, 8}, Dtype::float32, 6), true);
  Variable W(randn({4, 3, 3, 3}, Dtype::float32, 7), true), b(randn({4}, Dtype::float32, 8), true);
  Variable y = F::convolution_2d(x, W, b, {.pad = 1});
  EXPECT_TRUE(is_cl_only(y.array()));
  auto g = grad({y}, {x, W, b}, {Variable(Array::ones(y.shape()))});
  EXPECT_TRUE(is_cl_only(g[0].array()));  // the data gradient is a convolution output too
  EXPECT_TRUE(g[1].array().is_contiguous());
  // float64 (im2col) and the reference backend stay NCHW.
  Variable x64(randn({2, 3, 9, 8}, Dtype::float64, 6)), W64(randn({4, 3, 3, 3}, Dtype::float64, 7));
  EXPECT_TRUE(F::convolution_2d(x64, W64).array().is_contiguous());
  Variable xr(x.array().to(Device::reference())), Wr(W.array().to(Device::reference()));
  EXPECT_TRUE(F::convolution_2d(xr, Wr).array().is_contiguous());
  // A conv-relu-pool chain keeps the layout and equals the reference backend.
  auto chain = [](const Variable& in, const Variable& w) {
    return F::max_pooling_2d(F::relu(F::convolution_2d(in, w, Variable(), {.pad = 1})), 2);
  };
  Variable p = chain(x, W);
  EXPECT_TRUE(is_cl_only(p.array()));
  EXPECT_TRUE(test::close_within(p.array(), chain(xr, Wr).array().to(Device::cpu()),
                                 test::reference_tolerance(Dtype::float32, 3 * 3 * 3)));  // C * kh * kw
}
