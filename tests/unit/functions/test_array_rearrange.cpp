// tile, repeat, flip(lr/ud), rollaxis, moveaxis, h/v/dstack, diagonal, copy, broadcast, separate:
// conformance, values checked against Chainer 7.8.1 / NumPy, errors.
#include <vector>

#include "tests/unit/functions/conformance.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::binary_fn;
using rensa::test::expect_conforms;
using rensa::test::expect_error;
using rensa::test::FunctionCase;
using rensa::test::unary_fn;

namespace {

Array iota(const Shape& shape) {
  return Array::arange(0.0, static_cast<double>(shape.numel()), 1.0, Dtype::float64).reshape(shape);
}

std::vector<double> values(const Variable& v) { return v.array().to_vector<double>(); }

std::vector<FunctionCase> cases() {
  FunctionCase broadcast{"broadcast", [](const std::vector<Variable>& v) { return F::broadcast({v[0], v[1]}); },
                         {{3, 1, 4}, {5, 1}}};
  broadcast.big_leading = 130;  // both leading axes grow: the result is (130, 130, 4)
  return {
      broadcast,
      {"tile", unary_fn([](const Variable& x) { return F::tile(x, Shape{2, 1, 2}); }), {{3, 4}}},
      {"tile_int", unary_fn([](const Variable& x) { return F::tile(x, 3); }), {{3, 4}}},
      {"repeat_uniform", unary_fn([](const Variable& x) { return F::repeat(x, 2, 1); }), {{3, 4}}},
      {"repeat_counts", unary_fn([](const Variable& x) { return F::repeat(x, {1, 0, 3, 2}, 1); }), {{3, 4}}},
      {"repeat_flat", unary_fn([](const Variable& x) { return F::repeat(x, 2); }), {{3, 4}}},
      {"flip", unary_fn([](const Variable& x) { return F::flip(x, -1); }), {{3, 4}}},
      // Negative strides through the cpu loops: the reversed view meets x in one elementwise op.
      {"flip_then_mul", unary_fn([](const Variable& x) { return F::mul(F::flip(x, 0), F::exp(F::flip(x, 1))); }),
       {{3, 4}}},
      {"fliplr", unary_fn([](const Variable& x) { return F::fliplr(x); }), {{3, 4, 2}}},
      {"flipud", unary_fn([](const Variable& x) { return F::flipud(x); }), {{3, 4}}},
      {"rollaxis", unary_fn([](const Variable& x) { return F::rollaxis(x, 2, 0); }), {{3, 4, 5}}},
      {"moveaxis", unary_fn([](const Variable& x) { return F::moveaxis(x, {0, 1}, {2, 0}); }), {{3, 4, 5}}},
      {"hstack", binary_fn([](const Variable& a, const Variable& b) { return F::hstack({a, b}); }), {{3, 2}, {3, 4}}},
      {"vstack", binary_fn([](const Variable& a, const Variable& b) { return F::vstack({a, b}); }), {{3, 4}, {2, 4}}},
      {"dstack", binary_fn([](const Variable& a, const Variable& b) { return F::dstack({a, b}); }), {{3, 4}, {3, 4}}},
      {"diagonal", unary_fn([](const Variable& x) { return F::diagonal(x, 1, 1, 2); }), {{3, 4, 5}}},
      {"diagonal_negative", unary_fn([](const Variable& x) { return F::diagonal(x, -1, 2, 0); }), {{3, 4, 5}}},
      {"copy", unary_fn([](const Variable& x) { return F::copy(x, Device::cpu()); }), {{3, 4}}},
      {"separate", [](const std::vector<Variable>& v) { return F::separate(v[0], 1); }, {{3, 4}}},
  };
}

TEST(ArrayRearrange, Conformance) {
  for (const auto& c : cases()) expect_conforms(c);
}

TEST(ArrayRearrange, CopyGradientComesBack) {
  Variable v(iota({2, 3}), true);
  Variable y = F::copy(v, Device::reference());
  y.set_grad(Variable(Array::ones({2, 3}, Dtype::float64, Device::reference())));
  y.backward();
  EXPECT_FALSE(y.array().shares_storage(v.array()));
  ASSERT_FALSE(v.grad().is_null());
  EXPECT_EQ(v.grad().device(), Device::cpu());
  EXPECT_EQ(values(v.grad()), std::vector<double>(6, 1.0));
  Variable same = F::copy(v, Device::cpu());
  EXPECT_FALSE(same.array().shares_storage(v.array()));  // always a new array, as Chainer's copy
}

TEST(ArrayRearrange, KnownValues) {
  const Array x = iota({2, 3});
  EXPECT_EQ(F::tile(x, Shape{2, 1, 2}).shape(), (Shape{2, 2, 6}));
  EXPECT_EQ(values(F::tile(x, Shape{2, 1, 2})),
            (std::vector<double>{0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5, 0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}));
  EXPECT_EQ(values(F::tile(x, 2)), (std::vector<double>{0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}));
  EXPECT_EQ(F::tile(Array::scalar(1.0), 3).shape(), (Shape{3}));
  EXPECT_EQ(values(F::repeat(x, {1, 0, 2}, 1)), (std::vector<double>{0, 2, 2, 3, 5, 5}));
  EXPECT_EQ(values(F::repeat(x, 2)), (std::vector<double>{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}));
  EXPECT_EQ(values(F::repeat(x, 2, 0)), (std::vector<double>{0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}));
  EXPECT_EQ(values(F::flip(x, 1)), (std::vector<double>{2, 1, 0, 5, 4, 3}));
  EXPECT_EQ(values(F::flipud(x)), (std::vector<double>{3, 4, 5, 0, 1, 2}));
  EXPECT_EQ(values(F::fliplr(x)), (std::vector<double>{2, 1, 0, 5, 4, 3}));
  const Array z = Array::zeros({2, 3, 4, 5}, Dtype::float64);
  EXPECT_EQ(F::rollaxis(z, 3, 1).shape(), (Shape{2, 5, 3, 4}));
  EXPECT_EQ(F::rollaxis(z, 1, 4).shape(), (Shape{2, 4, 5, 3}));
  EXPECT_EQ(F::rollaxis(z, -1, -4).shape(), (Shape{5, 2, 3, 4}));
  EXPECT_EQ(F::moveaxis(z, {0, 1}, {3, 0}).shape(), (Shape{3, 4, 5, 2}));
  EXPECT_EQ(F::moveaxis(z, -1, 0).shape(), (Shape{5, 2, 3, 4}));
  const Array v3 = Array::zeros({3}, Dtype::float64);
  EXPECT_EQ(F::dstack({v3, v3}).shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(F::vstack({v3, v3}).shape(), (Shape{2, 3}));
  EXPECT_EQ(F::hstack({v3, v3}).shape(), (Shape{6}));
  EXPECT_EQ(F::hstack({Array::scalar(1.0), Array::scalar(2.0)}).shape(), (Shape{2}));
  EXPECT_EQ(F::hstack({Array::zeros({2, 1}), Array::zeros({2, 3})}).shape(), (Shape{2, 4}));
  EXPECT_EQ(values(F::vstack({x, iota({1, 3})})), (std::vector<double>{0, 1, 2, 3, 4, 5, 0, 1, 2}));
  const Array y = iota({2, 3, 4});
  EXPECT_EQ(values(F::diagonal(y, 1, 1, 2)), (std::vector<double>{1, 6, 11, 13, 18, 23}));
  EXPECT_EQ(F::diagonal(y, -1, 2, 0).shape(), (Shape{3, 2}));
  EXPECT_EQ(values(F::diagonal(y, -1, 2, 0)), (std::vector<double>{1, 14, 5, 18, 9, 22}));
  EXPECT_EQ(F::diagonal(y, 7, 1, 2).shape(), (Shape{2, 0}));
  const auto b = F::broadcast({Array::zeros({3, 1}), Array::zeros({4})});
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].shape(), (Shape{3, 4}));
  EXPECT_EQ(b[1].shape(), (Shape{3, 4}));
  const auto parts = F::separate(x, 1);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(values(parts[2]), (std::vector<double>{2, 5}));
  EXPECT_TRUE(F::separate(Array::zeros({0, 2}), 0).empty());
}

TEST(ArrayRearrange, GradientsSumCopies) {
  Variable x(iota({2, 3}), true);
  F::sum(F::repeat(x, {1, 0, 2}, 1)).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 0, 2, 1, 0, 2}));
  x.cleargrad();
  F::sum(F::tile(x, Shape{3, 2})).backward();
  EXPECT_EQ(values(x.grad()), std::vector<double>(6, 6.0));
  x.cleargrad();
  auto parts = F::separate(x, 0);
  F::sum(parts[1]).backward();  // the other part gets a zero gradient
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 0, 0, 1, 1, 1}));
}

TEST(ArrayRearrange, Errors) {
  const Array x = Array::zeros({2, 3});
  expect_error<ValueError>([&] { F::tile(x, Shape{2, -1}); }, {"tile", "non-negative", "(2, -1)", "(2, 3)"});
  expect_error<ValueError>([&] { F::repeat(x, -1, 0); }, {"repeat", "non-negative", "(2, 3)"});
  expect_error<ShapeError>([&] { F::repeat(x, {1, 2}, 1); }, {"repeat", "2 repetition counts", "extent 3", "(2, 3)"});
  expect_error<IndexError>([&] { F::repeat(x, 2, 2); }, {"repeat", "axis 2", "(2, 3)"});
  expect_error<ShapeError>([&] { F::flip(Array::scalar(1.0), 0); }, {"flip", "()"});
  expect_error<IndexError>([&] { F::flip(x, -3); }, {"flip", "axis -3", "(2, 3)"});
  expect_error<ShapeError>([&] { F::fliplr(Array::zeros({3})); }, {"fliplr", "(3,)"});
  expect_error<ShapeError>([&] { F::flipud(Array::scalar(1.0)); }, {"flipud", "()"});
  expect_error<IndexError>([&] { F::rollaxis(x, 0, 3); }, {"rollaxis", "start 3", "(2, 3)"});
  expect_error<IndexError>([&] { F::rollaxis(x, 2, 0); }, {"rollaxis", "axis 2", "(2, 3)"});
  expect_error<ValueError>([&] { F::moveaxis(x, {0, 1}, {1}); }, {"moveaxis", "(0, 1)", "(1,)", "lengths"});
  expect_error<ValueError>([&] { F::moveaxis(x, {0, -2}, {0, 1}); }, {"moveaxis", "repeated", "source", "(2, 3)"});
  expect_error<ValueError>([&] { F::moveaxis(x, {0, 1}, {1, 1}); }, {"moveaxis", "repeated", "destination"});
  expect_error<IndexError>([&] { F::moveaxis(x, 5, 0); }, {"moveaxis", "axis 5", "(2, 3)"});
  expect_error<ShapeError>([&] { F::hstack({x, Array::zeros({3, 3})}); }, {"hstack", "(2, 3) and (3, 3)", "axis 1"});
  expect_error<ShapeError>([&] { F::vstack({x, Array::zeros({2, 4})}); }, {"vstack", "(2, 3) and (2, 4)", "axis 0"});
  expect_error<ShapeError>([&] { F::dstack({x, Array::zeros({2})}); }, {"dstack", "(2, 3) and (2,)", "axis 2"});
  expect_error<ValueError>([&] { F::hstack({}); }, {"hstack", "empty"});
  expect_error<DtypeError>([&] { F::vstack({x, Array::zeros({2, 3}, Dtype::float64)}); }, {"vstack", "float64"});
  expect_error<ValueError>([&] { F::diagonal(x, 0, 1, -1); }, {"diagonal", "same axis", "(2, 3)"});
  expect_error<ShapeError>([&] { F::diagonal(Array::zeros({3}), 0, 0, 0); }, {"diagonal", "(3,)"});
  expect_error<ValueError>([&] { F::copy(Variable(), Device::cpu()); }, {"copy", "null"});
  expect_error<ShapeError>([&] { F::broadcast({x, Array::zeros({4})}); }, {"broadcast", "(2, 3) and (4,)"});
  expect_error<ShapeError>([&] { F::separate(Array::scalar(1.0)); }, {"separate", "()"});
  expect_error<IndexError>([&] { F::separate(x, 2); }, {"separate", "axis 2", "(2, 3)"});
}

}  // namespace
