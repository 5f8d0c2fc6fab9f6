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

// matmul as a TestFunction with fixed transpose flags.
TestFunction matmul_fn(bool ta = false, bool tb = false) {
  return [ta, tb](const std::vector<Variable>& v) { return std::vector<Variable>{F::matmul(v[0], v[1], ta, tb)}; };
}

TestFunction linear_fn() {
  return [](const std::vector<Variable>& v) {
    return std::vector<Variable>{F::linear(v[0], v[1], v.size() > 2 ? v[2] : Variable())};
  };
}

// Naive product of row-major (m, k) and (k, n) matrices given as vectors.
std::vector<double> naive_mm(const std::vector<double>& a, const std::vector<double>& b, int64_t m, int64_t k,
                             int64_t n) {
  std::vector<double> c(static_cast<std::size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0.0;
      for (int64_t p = 0; p < k; ++p)
        s += a[static_cast<std::size_t>(i * k + p)] * b[static_cast<std::size_t>(p * n + j)];
      c[static_cast<std::size_t>(i * n + j)] = s;
    }
  }
  return c;
}

void expect_near_vec(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-12) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

}  // namespace

// ---- matmul: forward ----------------------------------------------------------------------------

TEST(Matmul, KnownValues) {
  Variable a(Array::from_vector<double>({1, 2, 3, 4}, {2, 2}));
  Variable b(Array::from_vector<double>({5, 6, 7, 8}, {2, 2}));
  Variable y = F::matmul(a, b);
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(y.array().to_vector<double>(), (std::vector<double>{19, 22, 43, 50}));
  // a^T b, a b^T, a^T b^T without copies of the operands.
  EXPECT_EQ(F::matmul(a, b, true, false).array().to_vector<double>(), (std::vector<double>{26, 30, 38, 44}));
  EXPECT_EQ(F::matmul(a, b, false, true).array().to_vector<double>(), (std::vector<double>{17, 23, 39, 53}));
  EXPECT_EQ(F::matmul(a, b, true, true).array().to_vector<double>(), (std::vector<double>{23, 31, 34, 46}));
}

TEST(Matmul, IntegerOperands) {
  Variable a(Array::from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3}));
  Variable b(Array::from_vector<int32_t>({1, 0, 0, 1, 1, 1}, {3, 2}));
  Variable y = F::matmul(a, b);
  EXPECT_EQ(y.dtype(), Dtype::int32);
  EXPECT_EQ(y.array().to_vector<int32_t>(), (std::vector<int32_t>{4, 5, 10, 11}));
}

TEST(Matmul, OneDimensionalOperands) {
  const auto av = std::vector<double>{1, 2, 3};
  Variable v(Array::from_vector<double>(av));
  Variable m(Array::arange(0.0, 6.0, 1.0, Dtype::float64).reshape({3, 2}));
  Variable mt(Array::arange(0.0, 6.0, 1.0, Dtype::float64).reshape({2, 3}));
  // vector . vector -> 0-d
  Variable d = F::matmul(v, v);
  EXPECT_EQ(d.shape(), Shape{});
  EXPECT_EQ(d.array().item<double>(), 14.0);
  // vector @ matrix -> (2,): the added leading axis is removed
  Variable vm = F::matmul(v, m);
  EXPECT_EQ(vm.shape(), (Shape{2}));
  EXPECT_EQ(vm.array().to_vector<double>(), (std::vector<double>{16, 22}));
  // matrix @ vector -> (2,)
  Variable mv = F::matmul(mt, v);
  EXPECT_EQ(mv.shape(), (Shape{2}));
  EXPECT_EQ(mv.array().to_vector<double>(), (std::vector<double>{8, 26}));
  // transposes of a 1-d operand are ignored (as NumPy's .T of a vector)
  EXPECT_EQ(F::matmul(v, m, true, false).array().to_vector<double>(), (std::vector<double>{16, 22}));
  EXPECT_EQ(F::matmul(m, v, true, true).array().to_vector<double>(), (std::vector<double>{16, 22}));
  // batched matrix @ vector and vector @ batched matrix
  Variable bm(Array::arange(0.0, 24.0, 1.0, Dtype::float64).reshape({4, 2, 3}));
  Variable bmv = F::matmul(bm, v);
  EXPECT_EQ(bmv.shape(), (Shape{4, 2}));
  Variable vbm = F::matmul(Variable(Array::from_vector<double>({1, 2})), bm);
  EXPECT_EQ(vbm.shape(), (Shape{4, 3}));
  const auto bv = bm.array().to_vector<double>();
  const auto bmvv = bmv.array().to_vector<double>(), vbmv = vbm.array().to_vector<double>();
  for (int64_t i = 0; i < 4; ++i) {
    std::vector<double> mat(bv.begin() + i * 6, bv.begin() + (i + 1) * 6);
    expect_near_vec(std::vector<double>(bmvv.begin() + i * 2, bmvv.begin() + (i + 1) * 2), naive_mm(mat, av, 2, 3, 1));
    expect_near_vec(std::vector<double>(vbmv.begin() + i * 3, vbmv.begin() + (i + 1) * 3),
                    naive_mm({1, 2}, mat, 1, 2, 3));
  }
}

TEST(Matmul, BatchAxesBroadcast) {
  Array a = randn({2, 1, 3, 4}, Dtype::float64, 1);
  Array b = randn({5, 4, 2}, Dtype::float64, 2);
  Variable y = F::matmul(Variable(a), Variable(b));
  ASSERT_EQ(y.shape(), (Shape{2, 5, 3, 2}));
  const auto av = a.to_vector<double>(), bv = b.to_vector<double>(), yv = y.array().to_vector<double>();
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 5; ++j) {
      std::vector<double> am(av.begin() + i * 12, av.begin() + (i + 1) * 12);
      std::vector<double> bm(bv.begin() + j * 8, bv.begin() + (j + 1) * 8);
      std::vector<double> got(yv.begin() + (i * 5 + j) * 6, yv.begin() + (i * 5 + j + 1) * 6);
      expect_near_vec(got, naive_mm(am, bm, 3, 4, 2));
    }
  }
  // A matrix against a stack of matrices, and transposed flags with batch axes.
  EXPECT_EQ(F::matmul(Variable(randn({3, 4})), Variable(b)).shape(), (Shape{5, 3, 2}));
  EXPECT_EQ(F::matmul(Variable(randn({2, 1, 4, 3})), Variable(randn({5, 2, 4})), true, true).shape(),
            (Shape{2, 5, 3, 2}));
}

TEST(Matmul, SizeZero) {
  EXPECT_EQ(F::matmul(Variable(randn({0, 3})), Variable(randn({3, 2}))).shape(), (Shape{0, 2}));
  EXPECT_EQ(F::matmul(Variable(randn({0, 2, 3})), Variable(randn({3, 2}))).shape(), (Shape{0, 2, 2}));
  // K = 0: a sum of nothing is 0.
  Variable y = F::matmul(Variable(Array::zeros({2, 0})), Variable(Array::zeros({0, 3})));
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(y.array().to_vector<float>(), std::vector<float>(6, 0.0f));
}

// ---- matmul: gradients --------------------------------------------------------------------------

TEST(Matmul, Backward) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "transa " << ta << " transb " << tb);
      Array a = ta ? randn({4, 3}, Dtype::float64, 1) : randn({3, 4}, Dtype::float64, 1);
      Array b = tb ? randn({5, 4}, Dtype::float64, 2) : randn({4, 5}, Dtype::float64, 2);
      check_backward(matmul_fn(ta, tb), {a, b});
      check_backward(matmul_fn(ta, tb), {make_noncontiguous(a), make_noncontiguous(b)});
    }
  }
}

TEST(Matmul, BackwardBroadcastBatch) {
  check_backward(matmul_fn(), {randn({2, 1, 3, 4}, Dtype::float64, 1), randn({5, 4, 2}, Dtype::float64, 2)});
  check_backward(matmul_fn(), {make_noncontiguous(randn({2, 1, 3, 4}, Dtype::float64, 1)),
                               make_noncontiguous(randn({5, 4, 2}, Dtype::float64, 2))});
  check_backward(matmul_fn(true, true), {randn({2, 1, 4, 3}, Dtype::float64, 3), randn({5, 2, 4}, Dtype::float64, 4)});
  check_backward(matmul_fn(), {randn({3, 4}, Dtype::float64, 5), randn({2, 4, 5}, Dtype::float64, 6)});
  check_backward(matmul_fn(false, true), {randn({2, 3, 4}, Dtype::float64, 7), randn({5, 4}, Dtype::float64, 8)});
}

TEST(Matmul, BackwardOneDimensional) {
  check_backward(matmul_fn(), {randn({4}, Dtype::float64, 1), randn({4}, Dtype::float64, 2)});
  check_backward(matmul_fn(), {randn({4}, Dtype::float64, 1), randn({4, 3}, Dtype::float64, 2)});
  check_backward(matmul_fn(false, true), {randn({4}, Dtype::float64, 1), randn({3, 4}, Dtype::float64, 2)});
  check_backward(matmul_fn(), {randn({3, 4}, Dtype::float64, 1), randn({4}, Dtype::float64, 2)});
  check_backward(matmul_fn(true, false), {randn({2, 4, 3}, Dtype::float64, 1), randn({4}, Dtype::float64, 2)});
  check_backward(matmul_fn(), {randn({4}, Dtype::float64, 1), randn({2, 4, 3}, Dtype::float64, 2)});
  check_backward(matmul_fn(), {make_noncontiguous(randn({4}, Dtype::float64, 1)),
                               make_noncontiguous(randn({2, 4, 3}, Dtype::float64, 2))});
}

TEST(Matmul, BackwardSizeZero) {
  check_backward(matmul_fn(), {randn({0, 3}), randn({3, 2})});
  check_backward(matmul_fn(), {randn({2, 0}), randn({0, 3})});
  check_backward(matmul_fn(), {randn({0, 2, 3}), randn({3, 2})});
  Variable a(randn({0, 3}), true), b(randn({3, 2}), true);
  F::sum(F::matmul(a, b)).backward();
  EXPECT_EQ(a.grad().shape(), (Shape{0, 3}));
  EXPECT_EQ(b.grad().array().to_vector<double>(), std::vector<double>(6, 0.0));
}

TEST(Matmul, DoubleBackward) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "transa " << ta << " transb " << tb);
      Array a = ta ? randn({4, 3}, Dtype::float64, 1) : randn({3, 4}, Dtype::float64, 1);
      Array b = tb ? randn({5, 4}, Dtype::float64, 2) : randn({4, 5}, Dtype::float64, 2);
      check_double_backward(matmul_fn(ta, tb), {a, b}, {randn({3, 5}, Dtype::float64, 3)});
    }
  }
  check_double_backward(matmul_fn(), {randn({2, 1, 3, 4}, Dtype::float64, 1), randn({5, 4, 2}, Dtype::float64, 2)},
                        {randn({2, 5, 3, 2}, Dtype::float64, 3)});
  check_double_backward(matmul_fn(), {randn({4}, Dtype::float64, 1), randn({2, 4, 3}, Dtype::float64, 2)},
                        {randn({2, 3}, Dtype::float64, 3)});
  check_double_backward(matmul_fn(), {randn({4}, Dtype::float64, 1), randn({4}, Dtype::float64, 2)},
                        {randn({}, Dtype::float64, 3)});
}

// ---- matmul: cpu against reference --------------------------------------------------------------

TEST(Matmul, CpuMatchesReference) {
  const auto f = matmul_fn();
  // Large enough for BLAS blocking and threads (out 256 x 200 = 51200 elements). Each check's
  // accumulation is the inner dimension.
  expect_cpu_matches_reference(f, {randn({256, 300}, Dtype::float32, 1), randn({300, 200}, Dtype::float32, 2)}, 300);
  // Transposed operands as views (column-major) and through the flags.
  Array at = randn({300, 256}, Dtype::float32, 3).transpose(), bt = randn({200, 300}, Dtype::float32, 4).transpose();
  ASSERT_FALSE(at.is_contiguous());
  expect_cpu_matches_reference(f, {at, bt}, 300);
  expect_cpu_matches_reference(
      matmul_fn(true, true), {randn({300, 256}, Dtype::float32, 3), randn({200, 300}, Dtype::float32, 4)}, 300);
  // Non-contiguous rows (strided, no BLAS layout), broadcast batches, 1-d operands, float64.
  expect_cpu_matches_reference(
      f, {make_noncontiguous(randn({2, 1, 30, 40}, Dtype::float32, 5)), randn({5, 40, 20}, Dtype::float32, 6)}, 40);
  expect_cpu_matches_reference(f, {randn({40}, Dtype::float32, 7), randn({3, 40, 20}, Dtype::float32, 8)}, 40);
  expect_cpu_matches_reference(
      f,
      {make_noncontiguous(randn({40}, Dtype::float32, 7)), make_noncontiguous(randn({3, 40, 20}, Dtype::float32, 8))},
      40);
  expect_cpu_matches_reference(
      f,
      {make_noncontiguous(randn({3, 20, 40}, Dtype::float32, 8)), make_noncontiguous(randn({40}, Dtype::float32, 7))},
      40);
  // 16-bit floats: computed in float32 and rounded once.
  expect_cpu_matches_reference(f,
                               {randn({8, 16}, Dtype::float32, 15).astype(Dtype::float16),
                                randn({16, 4}, Dtype::float32, 16).astype(Dtype::float16)},
                               rensa::test::rounded_once_tolerance(Dtype::float16, 16));
  expect_cpu_matches_reference(f, {randn({64, 70}, Dtype::float64, 9), randn({70, 50}, Dtype::float64, 10)}, 70);
  // A slice of a matrix: row stride larger than the row (a leading dimension > n).
  Array wide = randn({64, 100}, Dtype::float32, 11).slice(1, 10, 80);
  expect_cpu_matches_reference(f, {wide, randn({70, 30}, Dtype::float32, 12)}, 70);
  expect_cpu_matches_reference(f, {randn({2, 3, 4}, Dtype::float32, 13), randn({2, 4, 5}, Dtype::float32, 14)}, 4);
}

// ---- matmul: errors -----------------------------------------------------------------------------

TEST(Matmul, Errors) {
  Variable a(randn({2, 3})), b(randn({4, 5}));
  expect_error<ShapeError>([&] { F::matmul(a, b); }, {"matmul", "(2, 3)", "(4, 5)", "3 vs 4"});
  expect_error<ShapeError>(
      [&] {
        F::matmul(a, Variable(randn({2, 3})), false, false);
      },
      {"matmul", "(2, 3)", "3 vs 2"});
  expect_error<ShapeError>([&] { F::matmul(a, b, true, true); },
                           {"matmul", "(2, 3)", "(4, 5)", "transposed", "2 vs 5"});
  expect_error<ShapeError>([&] { F::matmul(Variable(randn({3})), Variable(randn({4}))); }, {"matmul", "(3,)", "(4,)"});
  expect_error<ShapeError>([&] { F::matmul(Variable(randn({})), b); }, {"matmul", "()", "(4, 5)"});
  expect_error<ShapeError>(
      [&] {
        F::matmul(Variable(randn({2, 3, 4})), Variable(randn({5, 4, 2})));
      },
      {"matmul", "(2, 3, 4)", "(5, 4, 2)", "broadcast"});
  expect_error<DtypeError>(
      [&] {
        F::matmul(a, Variable(randn({3, 2}, Dtype::float32)));
      },
      {"matmul", "float64", "float32", "(2, 3)", "(3, 2)"});
}

// ---- linear -------------------------------------------------------------------------------------

TEST(Linear, KnownValues) {
  Variable x(Array::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3}));
  Variable W(Array::from_vector<double>({1, 0, 0, 0, 1, 1}, {2, 3}));
  Variable b(Array::from_vector<double>({10, 20}));
  Variable y = F::linear(x, W, b);
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(y.array().to_vector<double>(), (std::vector<double>{11, 25, 14, 31}));
  EXPECT_EQ(F::linear(x, W).array().to_vector<double>(), (std::vector<double>{1, 5, 4, 11}));
}

TEST(Linear, IsOneRecordedFunction) {
  Variable x(randn({4, 3}), true), W(randn({2, 3}), true), b(randn({2}), true);
  Variable y = F::linear(x, W, b);
  ASSERT_NE(y.creator(), nullptr);
  EXPECT_STREQ(y.creator()->label(), "linear");
  EXPECT_EQ(y.creator()->inputs().size(), 3u);
  // Same result as the composite matmul + add.
  Variable ref = F::matmul(x, W, false, true) + b;
  EXPECT_TRUE(allclose(y.array(), ref.array(), 1e-12, 1e-12));
  F::sum(y * y).backward();
  EXPECT_EQ(x.grad().shape(), x.shape());
  EXPECT_EQ(W.grad().shape(), W.shape());
  EXPECT_EQ(b.grad().shape(), b.shape());
}

TEST(Linear, FlattensTrailingAxes) {
  Array x = randn({2, 3, 4}, Dtype::float64, 1), W = randn({5, 12}, Dtype::float64, 2);
  Variable y = F::linear(Variable(x), Variable(W));
  ASSERT_EQ(y.shape(), (Shape{2, 5}));
  EXPECT_TRUE(allclose(y.array(), F::matmul(Variable(x.reshape({2, 12})), Variable(W), false, true).array()));
  check_backward(linear_fn(), {x, W, randn({5}, Dtype::float64, 3)});
  check_backward(linear_fn(), {make_noncontiguous(x), W});
}

TEST(Linear, Backward) {
  Array x = randn({6, 4}, Dtype::float64, 1), W = randn({3, 4}, Dtype::float64, 2), b = randn({3}, Dtype::float64, 3);
  check_backward(linear_fn(), {x, W, b});
  check_backward(linear_fn(), {x, W});
  check_backward(linear_fn(), {make_noncontiguous(x), make_noncontiguous(W), make_noncontiguous(b)});
  // Only some inputs needing a gradient.
  check_backward(linear_fn(), {x, W, b}, {}, {.no_grads = {true, false, false}});
  check_backward(linear_fn(), {x, W, b}, {}, {.no_grads = {false, true, true}});
}

TEST(Linear, BackwardBatchZero) {
  check_backward(linear_fn(), {randn({0, 4}), randn({3, 4}), randn({3})});
  Variable x(randn({0, 4}), true), W(randn({3, 4}), true), b(randn({3}), true);
  Variable y = F::linear(x, W, b);
  EXPECT_EQ(y.shape(), (Shape{0, 3}));
  F::sum(y).backward();
  EXPECT_EQ(x.grad().shape(), (Shape{0, 4}));
  EXPECT_EQ(W.grad().array().to_vector<double>(), std::vector<double>(12, 0.0));
  EXPECT_EQ(b.grad().array().to_vector<double>(), std::vector<double>(3, 0.0));
}

TEST(Linear, DoubleBackward) {
  Array x = randn({5, 4}, Dtype::float64, 1), W = randn({3, 4}, Dtype::float64, 2), b = randn({3}, Dtype::float64, 3);
  check_double_backward(linear_fn(), {x, W, b}, {randn({5, 3}, Dtype::float64, 4)});
  check_double_backward(linear_fn(), {x, W}, {randn({5, 3}, Dtype::float64, 4)});
  check_double_backward(linear_fn(), {randn({2, 2, 3}, Dtype::float64, 5), randn({3, 6}, Dtype::float64, 6)},
                        {randn({2, 3}, Dtype::float64, 7)});
}

TEST(Linear, CpuMatchesReference) {
  const auto f = linear_fn();
  // 128 x 300 = 38400 outputs: threaded BLAS and the threaded bias add. Each check's accumulation
  // is the inner dimension, plus 1 for the bias.
  expect_cpu_matches_reference(
      f, {randn({128, 784}, Dtype::float32, 1), randn({300, 784}, Dtype::float32, 2), randn({300}, Dtype::float32, 3)},
      784 + 1);
  // W stored column-major (a transposed view): W^T is then a plain row-major matrix for the kernel.
  expect_cpu_matches_reference(f,
                               {randn({64, 50}, Dtype::float32, 9), randn({50, 40}, Dtype::float32, 10).transpose(),
                                randn({40}, Dtype::float32, 11)},
                               50 + 1);
  expect_cpu_matches_reference(
      f, {make_noncontiguous(randn({8, 3, 5}, Dtype::float32, 4)),
          make_noncontiguous(randn({7, 15}, Dtype::float32, 5)), make_noncontiguous(randn({7}, Dtype::float32, 6))},
      15 + 1);
  expect_cpu_matches_reference(f, {randn({10, 20}, Dtype::float64, 7), randn({30, 20}, Dtype::float64, 8)}, 20);
}

TEST(Linear, Errors) {
  expect_error<ShapeError>(
      [] {
        F::linear(Variable(Array::zeros({32, 784})), Variable(Array::zeros({1000, 785})));
      },
      {"linear: x (32, 784) and W (1000, 785) have mismatched inner dims 784 vs 785"});
  expect_error<ShapeError>(
      [] {
        F::linear(Variable(Array::zeros({32, 784})), Variable(Array::zeros({1000, 785})),
                  Variable(Array::zeros({1000})));
      },
      {"linear", "x (32, 784)", "W (1000, 785)", "b (1000,)", "784 vs 785"});
  expect_error<ShapeError>(
      [] {
        F::linear(Variable(Array::zeros({32, 784})), Variable(Array::zeros({1000, 784})),
                  Variable(Array::zeros({999})));
      },
      {"linear", "b (999,)", "W (1000, 784)", "x (32, 784)"});
  expect_error<ShapeError>(
      [] {
        F::linear(Variable(Array::zeros({784})), Variable(Array::zeros({10, 784})));
      },
      {"linear", "x (784,)", "W (10, 784)"});
  expect_error<ShapeError>(
      [] {
        F::linear(Variable(Array::zeros({2, 784})), Variable(Array::zeros({784})));
      },
      {"linear", "x (2, 784)", "W (784,)"});
  expect_error<DtypeError>(
      [] {
        F::linear(Variable(Array::zeros({2, 3})), Variable(Array::zeros({4, 3}, Dtype::float64)));
      },
      {"linear", "float32", "float64", "(2, 3)", "(4, 3)"});
  expect_error<DtypeError>(
      [] {
        F::linear(Variable(Array::zeros({2, 3}, Dtype::int32)), Variable(Array::zeros({4, 3}, Dtype::int32)));
      },
      {"linear", "int32", "(2, 3)"});
}
