// depth2space, space2depth and im2col: conformance, values checked against Chainer 7.8.1, errors.
#include <vector>

#include "tests/unit/functions/conformance.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::expect_conforms;
using rensa::test::expect_error;
using rensa::test::FunctionCase;
using rensa::test::unary_fn;

namespace {

Array iota(const Shape& shape) {
  return Array::arange(0.0, static_cast<double>(shape.numel()), 1.0, Dtype::float64).reshape(shape);
}

std::vector<double> values(const Variable& v) { return v.array().to_vector<double>(); }

TEST(ArraySpatial, Conformance) {
  const std::vector<FunctionCase> cases = {
      {"depth2space", unary_fn([](const Variable& x) { return F::depth2space(x, 2); }), {{2, 8, 2, 3}}},
      {"space2depth", unary_fn([](const Variable& x) { return F::space2depth(x, 2); }), {{2, 2, 4, 6}}},
      {"im2col", unary_fn([](const Variable& x) { return F::im2col(x, 3); }), {{2, 3, 5, 6}}},
      {"im2col_geometry", unary_fn([](const Variable& x) {
         return F::im2col(x, {2, 3}, {2, 1}, {1, 2}, true, {1, 2});
       }),
       {{2, 3, 5, 6}}},
  };
  for (const auto& c : cases) expect_conforms(c);
}

TEST(ArraySpatial, KnownValues) {
  const Variable d2s = F::depth2space(iota({2, 8, 2, 3}), 2);
  EXPECT_EQ(d2s.shape(), (Shape{2, 2, 4, 6}));
  EXPECT_EQ(values(F::get_item(d2s, {1, 1})),
            (std::vector<double>{54, 66, 55, 67, 56, 68, 78, 90, 79, 91, 80, 92,
                                 57, 69, 58, 70, 59, 71, 81, 93, 82, 94, 83, 95}));
  const Variable s2d = F::space2depth(iota({1, 2, 4, 4}), 2);
  EXPECT_EQ(s2d.shape(), (Shape{1, 8, 2, 2}));
  EXPECT_EQ(values(F::get_item(s2d, {0, Slice{}, 1, 0})), (std::vector<double>{8, 24, 9, 25, 12, 28, 13, 29}));
  EXPECT_TRUE(array_equal(F::depth2space(s2d, 2).array(), iota({1, 2, 4, 4})));

  const Variable c1 = F::im2col(iota({1, 2, 3, 4}), {2, 3}, {2, 1}, 1, true);
  EXPECT_EQ(c1.shape(), (Shape{1, 12, 3, 4}));
  EXPECT_EQ(values(F::get_item(c1, {0, 7})), (std::vector<double>{0, 0, 0, 0, 16, 17, 18, 19, 0, 0, 0, 0}));
  const Variable c2 = F::im2col(iota({1, 2, 3, 4}), 2, 1, 0, false, {1, 2});
  EXPECT_EQ(c2.shape(), (Shape{1, 8, 2, 2}));
  EXPECT_EQ(values(F::get_item(c2, {0, 5})), (std::vector<double>{14, 15, 18, 19}));
}

TEST(ArraySpatial, Im2colGradientCountsWindows) {
  // Each pixel's gradient is the number of 2x2 windows (stride 1) that contain it.
  Variable x(iota({1, 1, 3, 3}), true);
  F::sum(F::im2col(x, 2)).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 2, 1, 2, 4, 2, 1, 2, 1}));
}

TEST(ArraySpatial, Errors) {
  const Array x = Array::zeros({1, 4, 2, 2});
  expect_error<ShapeError>([&] { F::depth2space(Array::zeros({4, 2, 2}), 2); }, {"depth2space", "(4, 2, 2)"});
  expect_error<ShapeError>([&] { F::depth2space(Array::zeros({1, 6, 2, 2}), 2); }, {"depth2space", "(1, 6, 2, 2)"});
  expect_error<ValueError>([&] { F::depth2space(x, 0); }, {"depth2space", "0", "(1, 4, 2, 2)"});
  expect_error<ShapeError>([&] { F::space2depth(Array::zeros({1, 1, 3, 4}), 2); }, {"space2depth", "(1, 1, 3, 4)"});
  expect_error<ValueError>([&] { F::space2depth(x, -1); }, {"space2depth", "-1"});
  expect_error<ShapeError>([&] { F::im2col(x, 3); }, {"im2col", "(3, 3)", "(1, 4, 2, 2)"});
  expect_error<ValueError>([&] { F::im2col(x, 1, 0); }, {"im2col", "stride (0, 0)"});
  expect_error<ValueError>([&] { F::im2col(x, 1, 1, -1); }, {"im2col", "pad (-1, -1)"});
  expect_error<ShapeError>([&] { F::im2col(Array::zeros({2, 2}), 1); }, {"im2col", "(2, 2)"});
}

}  // namespace
