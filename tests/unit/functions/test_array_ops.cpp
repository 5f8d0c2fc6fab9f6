// Tests of the shape-manipulation functions: forward values, views, gradients (first and second
// order, contiguous and strided inputs, size 0), cpu against reference, and error messages.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "rensa/rensa.h"
#include "rensa/testing/gradient_check.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::expect_cpu_matches_reference;
using rensa::test::expect_error;
using rensa::test::randn;
using rensa::testing::check_backward;
using rensa::testing::check_double_backward;
using rensa::testing::CheckOptions;
using rensa::testing::make_noncontiguous;
using rensa::testing::TestFunction;
using Vars = std::vector<Variable>;

namespace {

// A test function of one output.
template <class Fn>
TestFunction one(Fn fn) {
  return [fn](const Vars& xs) { return Vars{fn(xs)}; };
}

// The inputs with every floating array of positive size and rank made strided.
std::vector<Array> strided(const std::vector<Array>& xs) {
  std::vector<Array> out;
  for (const auto& a : xs) {
    out.push_back(is_floating(a.dtype()) && a.ndim() > 0 && a.size() > 0 ? make_noncontiguous(a) : a);
  }
  return out;
}

// check_backward on the inputs as given and on strided copies of them.
void expect_gradients(const TestFunction& f, const std::vector<Array>& xs, const CheckOptions& o = {}) {
  try {
    check_backward(f, xs, {}, o);
  } catch (const Error& e) {
    ADD_FAILURE() << "contiguous: " << e.what();
  }
  try {
    const auto nc = strided(xs);
    for (std::size_t i = 0; i < nc.size(); ++i) {
      if (nc[i].ndim() > 0 && nc[i].size() > 0 && nc[i].shape().back() > 1 && is_floating(nc[i].dtype())) {
        EXPECT_FALSE(nc[i].is_contiguous());
      }
    }
    check_backward(f, nc, {}, o);
  } catch (const Error& e) {
    ADD_FAILURE() << "strided: " << e.what();
  }
}

// check_double_backward with random output gradients (and random second-order seeds).
void expect_second_order(const TestFunction& f, const std::vector<Array>& xs, const CheckOptions& o = {}) {
  Vars vs(xs.begin(), xs.end());
  Vars ys;
  {
    auto guard = no_backprop_mode();
    ys = f(vs);
  }
  std::vector<Array> gys;
  for (std::size_t j = 0; j < ys.size(); ++j) gys.push_back(randn(ys[j].shape(), ys[j].dtype(), 100 + j));
  try {
    check_double_backward(f, xs, gys, {}, o);
  } catch (const Error& e) {
    ADD_FAILURE() << "double backward: " << e.what();
  }
}

// Gradients of sum(f(xs) * gy) with respect to every input, for comparing backends.
TestFunction with_grads(const TestFunction& f) {
  return [f](const Vars& in) {
    Vars xs;
    for (const auto& v : in) xs.emplace_back(v.array(), is_floating(v.dtype()));
    Vars out = f(xs);
    Vars ys, gys;  // the outputs with a graph behind them, and their seeds
    for (std::size_t j = 0; j < out.size(); ++j) {
      if (!out[j].creator()) continue;
      ys.push_back(out[j]);
      gys.emplace_back(randn(out[j].shape(), out[j].dtype(), 7 + j).to(out[j].device()));
    }
    Vars targets;
    for (const auto& x : xs) {
      if (is_floating(x.dtype())) targets.push_back(x);
    }
    Vars gs = grad(ys, targets, gys);
    out.insert(out.end(), gs.begin(), gs.end());
    return out;
  };
}

Array arange_f64(int64_t n, const Shape& shape) {
  return Array::arange(n, Dtype::float64).reshape(shape);
}

std::vector<double> values(const Variable& v) {
  return v.array().to_vector<double>();
}

Array bool_array(const std::vector<bool>& v, const Shape& shape) {
  return Array::from_vector(v, shape);
}

// A pseudo-random bool pattern of `shape`.
Array random_cond(const Shape& shape, uint64_t seed) {
  const auto u = rensa::test::randu(shape, 0.0, 1.0, Dtype::float64, seed).to_vector<double>();
  std::vector<bool> b(u.size());
  for (std::size_t i = 0; i < u.size(); ++i) b[i] = u[i] > 0.5;
  return bool_array(b, shape);
}

}  // namespace

// ---- transpose / swapaxes / expand_dims / flatten ---------------------------------------------

TEST(Transpose, ForwardIsAView) {
  Variable x(arange_f64(6, {2, 3}));
  Variable y = F::transpose(x);
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(values(y), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_TRUE(y.array().shares_storage(x.array()));
  Variable z = F::transpose(Variable(arange_f64(24, {2, 3, 4})), {1, -1, 0});
  EXPECT_EQ(z.shape(), (Shape{3, 4, 2}));
  EXPECT_EQ(z.array().at<double>({2, 1, 1}), 12 + 8 + 1);
}

TEST(Transpose, Gradients) {
  expect_gradients(one([](const Vars& v) { return F::transpose(v[0]); }), {randn({3, 4})});
  auto perm = one([](const Vars& v) { return F::transpose(v[0], {1, 2, 0}); });
  expect_gradients(perm, {randn({2, 3, 4})});
  expect_gradients(perm, {randn({2, 0, 4})});
  expect_second_order(perm, {randn({2, 3, 4})});
}

TEST(Transpose, Errors) {
  Variable x(randn({2, 3, 4}));
  expect_error<ShapeError>([&] { F::transpose(x, {0, 1}); }, {"transpose", "(0, 1)", "(2, 3, 4)"});
  expect_error<IndexError>([&] { F::transpose(x, {0, 1, 3}); }, {"transpose", "axis 3", "(2, 3, 4)"});
  expect_error<ShapeError>([&] { F::transpose(x, {0, 1, -3}); }, {"transpose", "repeated", "(2, 3, 4)"});
}

TEST(Swapaxes, ForwardAndGradients) {
  Variable x(arange_f64(24, {2, 3, 4}));
  Variable y = F::swapaxes(x, 0, -1);
  EXPECT_EQ(y.shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(y.array().at<double>({3, 1, 1}), 12 + 4 + 3);
  EXPECT_TRUE(y.array().shares_storage(x.array()));
  auto f = one([](const Vars& v) { return F::swapaxes(v[0], 2, 0); });
  expect_gradients(f, {randn({2, 3, 4})});
  expect_second_order(f, {randn({2, 3, 4})});
  expect_error<IndexError>([&] { F::swapaxes(x, 0, 3); }, {"swapaxes", "axis 3", "(2, 3, 4)"});
}

TEST(ExpandDims, ForwardAndGradients) {
  Variable x(arange_f64(6, {2, 3}));
  EXPECT_EQ(F::expand_dims(x, 0).shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(F::expand_dims(x, 2).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(F::expand_dims(x, -2).shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(values(F::expand_dims(x, 1)), values(x));
  EXPECT_TRUE(F::expand_dims(x, 1).array().shares_storage(x.array()));
  auto f = one([](const Vars& v) { return F::expand_dims(v[0], -1); });
  expect_gradients(f, {randn({2, 3})});
  expect_gradients(f, {randn({0, 3})});
  expect_second_order(f, {randn({2, 3})});
  expect_error<IndexError>([&] { F::expand_dims(x, 3); }, {"expand_dims", "axis 3", "(2, 3)"});
  expect_error<IndexError>([&] { F::expand_dims(x, -4); }, {"expand_dims", "axis -4", "(2, 3)"});
}

TEST(Flatten, ForwardAndGradients) {
  Variable x(arange_f64(24, {2, 3, 4}));
  Variable y = F::flatten(x);
  EXPECT_EQ(y.shape(), (Shape{24}));
  EXPECT_EQ(values(y), values(x));
  EXPECT_EQ(F::flatten(Variable(Array::scalar(2.0))).shape(), (Shape{1}));
  auto f = one([](const Vars& v) { return F::flatten(v[0]); });
  expect_gradients(f, {randn({2, 3, 4})});
  expect_gradients(f, {randn({2, 0})});
  expect_second_order(f, {randn({3, 2})});
}

// ---- concat / stack ---------------------------------------------------------------------------

TEST(Concat, Forward) {
  Variable a(Array::from_vector<double>({1, 2, 3, 4}, {2, 2})), b(Array::from_vector<double>({5, 6}, {2, 1}));
  Variable y = F::concat({a, b}, 1);
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(values(y), (std::vector<double>{1, 2, 5, 3, 4, 6}));
  EXPECT_FALSE(y.array().shares_storage(a.array()));
  Variable z = F::concat({a, Variable(Array::zeros({1, 2}, Dtype::float64)), a}, 0);
  EXPECT_EQ(values(z), (std::vector<double>{1, 2, 3, 4, 0, 0, 1, 2, 3, 4}));
  // A size-0 input contributes nothing.
  EXPECT_EQ(values(F::concat({a, Variable(Array::zeros({2, 0}, Dtype::float64))}, -1)), values(a));
}

TEST(Concat, Gradients) {
  auto axis1 = [](const Vars& v) { return Vars{F::concat(v, 1)}; };
  expect_gradients(axis1, {randn({2, 3, 2}, Dtype::float64, 1), randn({2, 1, 2}, Dtype::float64, 2),
                           randn({2, 4, 2}, Dtype::float64, 3)});
  expect_gradients(axis1, {randn({2, 3}, Dtype::float64, 1), randn({2, 0}, Dtype::float64, 2)});
  auto last = [](const Vars& v) { return Vars{F::concat(v, -1)}; };
  expect_gradients(last, {randn({3, 2}, Dtype::float64, 1), randn({3, 5}, Dtype::float64, 2)});
  expect_gradients([](const Vars& v) { return Vars{F::concat(v, 0)}; }, {randn({4})});
  expect_second_order(axis1, {randn({2, 3}, Dtype::float64, 1), randn({2, 2}, Dtype::float64, 2)});
  // Only some inputs require a gradient.
  Variable a(randn({2, 2}), true), b(randn({2, 3}));
  F::sum(F::concat({a, b}, 1)).backward();
  EXPECT_EQ(values(a.grad()), std::vector<double>(4, 1.0));
  EXPECT_TRUE(b.grad().is_null());
}

TEST(Concat, Errors) {
  Variable a(randn({2, 3})), b(randn({3, 3})), c(randn({2, 4}));
  expect_error<ShapeError>([&] { F::concat({a, b, c}, 1); }, {"concat", "(2, 3)", "(3, 3)", "(2, 4)", "axis 1"});
  expect_error<ShapeError>([&] { F::concat({a, Variable(randn({2, 3, 1}))}, 0); }, {"concat", "(2, 3, 1)"});
  expect_error<IndexError>([&] { F::concat({a, c}, 2); }, {"concat", "axis 2", "(2, 3)", "(2, 4)"});
  expect_error<DtypeError>(
      [&] {
        F::concat({a, Variable(randn({2, 3}, Dtype::float32))}, 0);
      },
      {"concat", "float64", "float32", "(2, 3)"});
  expect_error<ValueError>([&] { F::concat({}, 0); }, {"concat", "empty"});
  expect_error<ShapeError>(
      [&] {
        F::concat({Variable(Array::scalar(1.0)), Variable(Array::scalar(2.0))}, 0);
      },
      {"concat", "zero-dimensional", "()"});
}

TEST(Stack, Forward) {
  Variable a(Array::from_vector<double>({1, 2})), b(Array::from_vector<double>({3, 4}));
  Variable y0 = F::stack({a, b});
  EXPECT_EQ(y0.shape(), (Shape{2, 2}));
  EXPECT_EQ(values(y0), (std::vector<double>{1, 2, 3, 4}));
  Variable y1 = F::stack({a, b}, 1);
  EXPECT_EQ(values(y1), (std::vector<double>{1, 3, 2, 4}));
  EXPECT_EQ(F::stack({a, b, a}, -1).shape(), (Shape{2, 3}));
  EXPECT_EQ(F::stack({Variable(Array::scalar(1.0)), Variable(Array::scalar(2.0))}).shape(), (Shape{2}));
}

TEST(Stack, Gradients) {
  auto mid = [](const Vars& v) { return Vars{F::stack(v, 1)}; };
  expect_gradients(
      mid, {randn({2, 3}, Dtype::float64, 1), randn({2, 3}, Dtype::float64, 2), randn({2, 3}, Dtype::float64, 3)});
  expect_gradients(mid, {randn({0, 3}, Dtype::float64, 1), randn({0, 3}, Dtype::float64, 2)});
  auto last = [](const Vars& v) { return Vars{F::stack(v, -1)}; };
  expect_gradients(last, {randn({3, 2}, Dtype::float64, 1), randn({3, 2}, Dtype::float64, 2)});
  expect_second_order(mid, {randn({2, 3}, Dtype::float64, 1), randn({2, 3}, Dtype::float64, 2)});
}

TEST(Stack, Errors) {
  Variable a(randn({2, 3})), b(randn({3, 2}));
  expect_error<ShapeError>([&] { F::stack({a, a, b}); }, {"stack", "(2, 3), (2, 3) and (3, 2)"});
  expect_error<IndexError>([&] { F::stack({a, a}, 3); }, {"stack", "axis 3", "(2, 3)"});
  expect_error<DtypeError>(
      [&] {
        F::stack({a, Variable(randn({2, 3}, Dtype::float32))});
      },
      {"stack", "float64", "float32"});
  expect_error<ValueError>([&] { F::stack({}); }, {"stack", "empty"});
}

// ---- split_axis -------------------------------------------------------------------------------

TEST(SplitAxis, Forward) {
  Variable x(arange_f64(12, {2, 6}));
  auto ys = F::split_axis(x, 3, 1);
  ASSERT_EQ(ys.size(), 3u);
  EXPECT_EQ(values(ys[0]), (std::vector<double>{0, 1, 6, 7}));
  EXPECT_EQ(values(ys[2]), (std::vector<double>{4, 5, 10, 11}));
  EXPECT_TRUE(ys[1].array().shares_storage(x.array()));
  auto zs = F::split_axis(x, std::vector<int64_t>{2, 5}, -1);
  ASSERT_EQ(zs.size(), 3u);
  EXPECT_EQ(zs[1].shape(), (Shape{2, 3}));
  EXPECT_EQ(values(zs[1]), (std::vector<double>{2, 3, 4, 8, 9, 10}));
  EXPECT_EQ(values(zs[2]), (std::vector<double>{5, 11}));
  // NumPy's rules: negative indices count from the end, ends are clamped, pieces may be empty;
  // only the last index must lie within the axis, as Chainer checks.
  auto ws = F::split_axis(Variable(arange_f64(6, {6})), std::vector<int64_t>{10, -2}, 0);
  ASSERT_EQ(ws.size(), 3u);
  EXPECT_EQ(values(ws[0]), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(ws[1].shape(), (Shape{0}));
  EXPECT_EQ(values(ws[2]), (std::vector<double>{4, 5}));
  auto one_piece = F::split_axis(x, std::vector<int64_t>{}, 0);
  ASSERT_EQ(one_piece.size(), 1u);
  EXPECT_EQ(one_piece[0].shape(), (Shape{2, 6}));
}

TEST(SplitAxis, Gradients) {
  expect_gradients([](const Vars& v) { return F::split_axis(v[0], 3, 1); }, {randn({2, 6, 2})});
  expect_gradients(
      [](const Vars& v) {
        return F::split_axis(v[0], std::vector<int64_t>{1, 1, 3}, 0);
      },
      {randn({4, 3})});
  expect_gradients([](const Vars& v) { return F::split_axis(v[0], 2, 0); }, {randn({0, 3})});
  // Only one output used: the engine hands zeros for the others.
  expect_gradients([](const Vars& v) { return Vars{F::split_axis(v[0], 3, -1)[1]}; }, {randn({2, 6})});
  // Indices out of order make overlapping pieces; their gradients add up.
  expect_gradients([](const Vars& v) { return F::split_axis(v[0], std::vector<int64_t>{4, 1}, 0); }, {randn({6, 2})});
  expect_second_order([](const Vars& v) { return F::split_axis(v[0], 2, 1); }, {randn({3, 4})});
  expect_second_order(
      [](const Vars& v) {
        return F::split_axis(v[0], std::vector<int64_t>{3, 1}, 0);
      },
      {randn({4, 2})});
}

TEST(SplitAxis, OverlappingPiecesAccumulate) {
  Variable x(Array::zeros({5}, Dtype::float64), true);
  auto ys = F::split_axis(x, std::vector<int64_t>{3, 1}, 0);  // [0, 3), empty, [1, 5)
  F::sum(F::concat(ys, 0)).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 2, 2, 1, 1}));
}

TEST(SplitAxis, Errors) {
  Variable x(randn({2, 5}));
  expect_error<ValueError>([&] { F::split_axis(x, 2, 1); }, {"split_axis", "2 sections", "axis 1", "(2, 5)"});
  expect_error<ValueError>([&] { F::split_axis(x, 0, 1); }, {"split_axis", "positive"});
  // Chainer rejects a last index past the end of the axis (it accepts it equal to the size).
  expect_error<ShapeError>([&] { F::split_axis(x, std::vector<int64_t>{1, 6}, 1); },
                           {"split_axis", "last index 6", "axis 1", "size 5", "(2, 5)"});
  EXPECT_EQ(F::split_axis(x, std::vector<int64_t>{1, 5}, 1)[2].shape(), (Shape{2, 0}));
  expect_error<IndexError>([&] { F::split_axis(x, 1, 2); }, {"split_axis", "axis 2", "(2, 5)"});
  expect_error<IndexError>([&] { F::split_axis(x, std::vector<int64_t>{1}, -3); }, {"split_axis", "(2, 5)"});
}

// ---- get_item ---------------------------------------------------------------------------------

TEST(GetItem, Forward) {
  Variable x(arange_f64(24, {2, 3, 4}));
  Variable a = F::get_item(x, {int64_t{1}, Slice{std::nullopt, std::nullopt, -1}, NewAxis{}, int64_t{2}});
  EXPECT_EQ(a.shape(), (Shape{3, 1}));
  EXPECT_EQ(values(a), (std::vector<double>{22, 18, 14}));
  EXPECT_TRUE(a.array().shares_storage(x.array()));
  Variable b = F::get_item(x, {Ellipsis{}, int64_t{1}});
  EXPECT_EQ(b.shape(), (Shape{2, 3}));
  EXPECT_EQ(values(b), (std::vector<double>{1, 5, 9, 13, 17, 21}));
  Variable c = F::get_item(x, {int64_t{-1}, Ellipsis{}, Slice{3, 0, -2}});
  EXPECT_EQ(c.shape(), (Shape{3, 2}));
  EXPECT_EQ(values(c), (std::vector<double>{15, 13, 19, 17, 23, 21}));
  Variable d = F::get_item(x, {NewAxis{}, Slice{1, std::nullopt, 1}, Ellipsis{}, NewAxis{}});
  EXPECT_EQ(d.shape(), (Shape{1, 1, 3, 4, 1}));
  EXPECT_EQ(F::get_item(x, {int64_t{0}, int64_t{2}, int64_t{-1}}).array().item<double>(), 11.0);
  EXPECT_EQ(F::get_item(x, {Slice{5, 9, 1}}).shape(), (Shape{0, 3, 4}));
}

TEST(GetItem, Gradients) {
  const std::vector<std::vector<Index>> cases = {
      {int64_t{1}, Slice{std::nullopt, std::nullopt, -1}, NewAxis{}, int64_t{2}},
      {Ellipsis{}, int64_t{-2}},
      {int64_t{-1}, Ellipsis{}, Slice{3, 0, -2}},
      {NewAxis{}, Slice{0, 2, 1}, Ellipsis{}, NewAxis{}},
      {Slice{std::nullopt, std::nullopt, 2}, Slice{1, 3, 1}},
      {int64_t{0}, int64_t{1}, int64_t{3}},
  };
  for (const auto& idx : cases) {
    auto f = one([idx](const Vars& v) { return F::get_item(v[0], idx); });
    expect_gradients(f, {randn({2, 3, 4})});
    expect_second_order(f, {randn({2, 3, 4})});
  }
  // Size 0: an empty slice of a non-empty array, and any slice of an empty array.
  expect_gradients(one([](const Vars& v) { return F::get_item(v[0], {Slice{2, 2, 1}}); }), {randn({3, 2})});
  expect_gradients(one([](const Vars& v) { return F::get_item(v[0], {Ellipsis{}, int64_t{0}}); }), {randn({0, 2})});
}

TEST(GetItem, GradientScattersIntoZeros) {
  Variable x(arange_f64(6, {2, 3}), true);
  F::sum(F::get_item(x, {Slice{}, Slice{std::nullopt, std::nullopt, -2}})).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1, 0, 1, 1, 0, 1}));
}

TEST(GetItem, Errors) {
  Variable x(randn({2, 3}));
  expect_error<IndexError>([&] { F::get_item(x, {int64_t{0}, int64_t{3}}); }, {"get_item", "3", "axis 1", "(2, 3)"});
  expect_error<IndexError>([&] { F::get_item(x, {int64_t{-3}}); }, {"get_item", "-3", "(2, 3)"});
  expect_error<IndexError>(
      [&] {
        F::get_item(x, {int64_t{0}, int64_t{0}, int64_t{0}});
      },
      {"get_item", "too many indices", "(2, 3)"});
  expect_error<IndexError>([&] { F::get_item(x, {Ellipsis{}, Ellipsis{}}); }, {"get_item", "ellipsis", "(2, 3)"});
  expect_error<ValueError>([&] { F::get_item(x, {Slice{0, 2, 0}}); }, {"get_item", "step", "(2, 3)"});
}

// ---- cast -------------------------------------------------------------------------------------

TEST(Cast, Forward) {
  Variable x(Array::from_vector<double>({1.75, -1.25, 3.0}));
  Variable y = F::cast(x, Dtype::float32);
  EXPECT_EQ(y.dtype(), Dtype::float32);
  EXPECT_EQ(values(y), (std::vector<double>{1.75, -1.25, 3.0}));
  Variable i = F::cast(x, Dtype::int32);
  EXPECT_EQ(i.dtype(), Dtype::int32);
  EXPECT_EQ(i.array().to_vector<int64_t>(), (std::vector<int64_t>{1, -1, 3}));
  EXPECT_TRUE(F::cast(x, Dtype::float64).is(x));  // same dtype: the variable itself
}

TEST(Cast, Gradients) {
  CheckOptions loose{.eps = 1e-2, .atol = 1e-4, .rtol = 1e-3};  // float32 rounding in the forward
  auto f = one([](const Vars& v) { return F::cast(v[0], Dtype::float32); });
  expect_gradients(f, {randn({3, 4})}, loose);
  expect_gradients(f, {randn({0, 4})}, loose);
  expect_second_order(f, {randn({3, 2})}, loose);
  // float32 -> float64 -> float32 round trips exactly.
  Variable x(randn({3}, Dtype::float32), true);
  Variable y = F::cast(x, Dtype::float64);
  F::sum(F::mul(y, y)).backward();
  EXPECT_EQ(x.grad().dtype(), Dtype::float32);
  EXPECT_TRUE(allclose(x.grad().array(), F::mul(x, 2.0).array()));
}

TEST(Cast, IntegerResultsGetNoGradient) {
  Variable x(randn({3}), true);
  Variable i = F::cast(x, Dtype::int64);
  EXPECT_EQ(i.creator(), nullptr);
  EXPECT_FALSE(i.requires_grad());
  Variable b = F::cast(x, Dtype::bool_);
  EXPECT_EQ(b.creator(), nullptr);
  // Integer inputs give a float result without a graph behind it.
  Variable f = F::cast(Variable(Array::arange(3)), Dtype::float32);
  EXPECT_EQ(f.creator(), nullptr);
  // Values away from integers, so the perturbation does not change the truncated part.
  check_backward(one([](const Vars& v) { return F::add(v[0], F::cast(F::cast(v[0], Dtype::int32), Dtype::float64)); }),
                 {Array::from_vector<double>({0.3, 1.4, -2.6, 3.2})});
}

// ---- where ------------------------------------------------------------------------------------

TEST(Where, Forward) {
  Array cond = bool_array({true, false, true}, {3});
  Variable a(Array::from_vector<double>({1, 2, 3})), b(Array::scalar(0.0, Dtype::float64));
  EXPECT_EQ(values(F::where(cond, a, b)), (std::vector<double>{1, 0, 3}));
  // cond (2, 1) broadcast against a (3,) and b (2, 3).
  Variable c(arange_f64(6, {2, 3}));
  Variable y = F::where(bool_array({false, true}, {2, 1}), a, c);
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(values(y), (std::vector<double>{0, 1, 2, 1, 2, 3}));
  Variable ints = F::where(cond, Variable(Array::arange(3, Dtype::int32)), Variable(Array::full({3}, 9, Dtype::int32)));
  EXPECT_EQ(ints.array().to_vector<int64_t>(), (std::vector<int64_t>{0, 9, 2}));
}

TEST(Where, Gradients) {
  Array cond = random_cond({2, 3, 4}, 5);
  auto f = [cond](const Vars& v) { return Vars{F::where(cond, v[0], v[1])}; };
  expect_gradients(f, {randn({2, 3, 4}, Dtype::float64, 1), randn({2, 3, 4}, Dtype::float64, 2)});
  expect_second_order(f, {randn({2, 3, 4}, Dtype::float64, 1), randn({2, 3, 4}, Dtype::float64, 2)});
  // Broadcasting in all three operands.
  Array c2 = random_cond({2, 1, 4}, 6);
  auto g = [c2](const Vars& v) { return Vars{F::where(c2, v[0], v[1])}; };
  expect_gradients(g, {randn({3, 4}, Dtype::float64, 1), randn({2, 3, 1}, Dtype::float64, 2)});
  expect_second_order(g, {randn({3, 1}, Dtype::float64, 1), randn({2, 1, 4}, Dtype::float64, 2)});
  // Size 0.
  Array c0 = Array::zeros({0, 3}, Dtype::bool_);
  expect_gradients([c0](const Vars& v) { return Vars{F::where(c0, v[0], v[1])}; },
                   {randn({0, 3}, Dtype::float64, 1), randn({3}, Dtype::float64, 2)});
}

TEST(Where, Errors) {
  Variable a(randn({2, 3})), b(randn({2, 3}));
  expect_error<DtypeError>(
      [&] {
        F::where(Array::zeros({2, 3}, Dtype::float32), a, b);
      },
      {"where", "bool", "float32", "(2, 3)"});
  const Variable b32(randn({2, 3}, Dtype::float32));
  expect_error<DtypeError>(
      [&] {
        F::where(Array::zeros({2, 3}, Dtype::bool_), a, b32);
      },
      {"where", "float64", "float32"});
  expect_error<ShapeError>(
      [&] {
        F::where(Array::zeros({4}, Dtype::bool_), a, Variable(randn({2, 1})));
      },
      {"where", "(4,)", "(2, 3)", "(2, 1)"});
}

// ---- select_item ------------------------------------------------------------------------------

TEST(SelectItem, Forward) {
  Variable x(Array::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3}));
  EXPECT_EQ(values(F::select_item(x, Array::from_vector<int64_t>({2, 0}))), (std::vector<double>{3, 4}));
  EXPECT_EQ(values(F::select_item(x, Array::from_vector<int32_t>({1, 1}))), (std::vector<double>{2, 5}));
  Variable g(arange_f64(6, {2, 3}), true);
  F::sum(F::select_item(g, Array::from_vector<int64_t>({1, 2}))).backward();
  EXPECT_EQ(values(g.grad()), (std::vector<double>{0, 1, 0, 0, 0, 1}));
}

TEST(SelectItem, Gradients) {
  Array t = Array::from_vector<int64_t>({3, 0, 2, 3, 1});
  auto f = one([t](const Vars& v) { return F::select_item(v[0], t); });
  expect_gradients(f, {randn({5, 4})});
  expect_second_order(f, {randn({5, 4})});
  Array t32 = Array::from_vector<int32_t>({0, 2});
  expect_gradients(one([t32](const Vars& v) { return F::select_item(v[0], t32); }), {randn({2, 3})});
  Array t0 = Array::zeros({0}, Dtype::int64);
  expect_gradients(one([t0](const Vars& v) { return F::select_item(v[0], t0); }), {randn({0, 3})});
  // Strided labels.
  Array tn = Array::from_vector<int64_t>({1, 9, 0, 9, 2, 9}).slice(0, 0, std::nullopt, 2);
  expect_gradients(one([tn](const Vars& v) { return F::select_item(v[0], tn); }), {randn({3, 3})});
}

TEST(SelectItem, Errors) {
  Variable x(randn({2, 3}));
  expect_error<DtypeError>([&] { F::select_item(x, Array::zeros({2}, Dtype::float32)); },
                           {"select_item", "int32 or int64", "float32"});
  expect_error<DtypeError>([&] { F::select_item(x, Array::zeros({2}, Dtype::uint8)); }, {"select_item", "uint8"});
  expect_error<ShapeError>([&] { F::select_item(x, Array::zeros({3}, Dtype::int64)); },
                           {"select_item", "(2, 3)", "(3,)"});
  expect_error<ShapeError>([&] { F::select_item(Variable(randn({6})), Array::zeros({6}, Dtype::int64)); },
                           {"select_item", "(6,)"});
  expect_error<IndexError>(
      [&] {
        F::select_item(x, Array::from_vector<int64_t>({0, 3}));
      },
      {"select_item", "label 3", "[0, 3)"});
  expect_error<IndexError>(
      [&] {
        F::select_item(x, Array::from_vector<int32_t>({-1, 0}));
      },
      {"select_item", "label -1"});
  const Variable xi(Array::zeros({2, 3}, Dtype::int32));
  expect_error<DtypeError>([&] { F::select_item(xi, Array::zeros({2}, Dtype::int64)); },
                           {"select_item", "floating", "int32"});
}

// ---- cpu against reference --------------------------------------------------------------------

TEST(ArrayOpsBackends, CpuMatchesReference) {
  // Above 32768 elements the cpu loops run on several threads.
  const Shape big{64, 40, 16};
  const Array x1 = randn(big, Dtype::float32, 1), x2 = randn(big, Dtype::float32, 2);
  const Array cond = random_cond(big, 3);
  auto cat = [](const Vars& v) { return Vars{F::concat({v[0], v[1]}, 1)}; };
  auto stk = [](const Vars& v) { return Vars{F::stack({v[0], v[1]}, 2)}; };
  auto spl = [](const Vars& v) { return F::split_axis(v[0], std::vector<int64_t>{3, 20}, 1); };
  auto itm = [](const Vars& v) { return Vars{F::get_item(v[0], {Slice{std::nullopt, std::nullopt, -1}, int64_t{5}})}; };
  auto trn = [](const Vars& v) { return Vars{F::transpose(v[0], {2, 0, 1})}; };
  auto cst = [](const Vars& v) { return Vars{F::cast(v[0], Dtype::float64), F::cast(v[0], Dtype::int32)}; };
  auto whr = [](const Vars& v) { return Vars{F::where(v[2].array(), v[0], v[1])}; };
  for (bool nc : {false, true}) {
    SCOPED_TRACE(nc ? "strided" : "contiguous");
    const Array a = nc ? make_noncontiguous(x1) : x1;
    const Array b = nc ? make_noncontiguous(x2) : x2;
    const Array c = nc ? make_noncontiguous(cond) : cond;
    expect_cpu_matches_reference(with_grads(cat), {a, b});
    expect_cpu_matches_reference(with_grads(stk), {a, b});
    expect_cpu_matches_reference(with_grads(spl), {a});
    expect_cpu_matches_reference(with_grads(itm), {a});
    expect_cpu_matches_reference(with_grads(trn), {a});
    expect_cpu_matches_reference(with_grads(cst), {a});
    expect_cpu_matches_reference(with_grads(whr), {a, b, c});
  }
  // where with broadcast operands, and on integers.
  expect_cpu_matches_reference(with_grads(whr),
                               {randn({40, 1}, Dtype::float32, 4), randn({64, 1, 1}, Dtype::float32, 5), cond});
  const Array ints = Array::arange(big.numel(), Dtype::int32).reshape(big);
  expect_cpu_matches_reference(whr, {ints, Array::zeros(big, Dtype::int32), cond});
}

TEST(ArrayOpsBackends, SelectItemCpuMatchesReference) {
  const int64_t n = 4096, classes = 10;
  std::vector<int64_t> labels(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) labels[static_cast<std::size_t>(i)] = (i * 7) % classes;
  const Array t = Array::from_vector(labels);
  auto f = [](const Vars& v) { return Vars{F::select_item(v[0], v[1].array())}; };
  const Array x = randn({n, classes}, Dtype::float32, 9);
  expect_cpu_matches_reference(with_grads(f), {x, t});
  expect_cpu_matches_reference(with_grads(f), {make_noncontiguous(x), t});
}

TEST(ArrayOpsBackends, WhereKernelIsRegistered) {
  EXPECT_NE(get_backend(Device::cpu()).kernels().where, nullptr);
  EXPECT_NE(get_backend(Device::reference()).kernels().where, nullptr);
}
