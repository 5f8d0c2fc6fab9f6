// Square-matrix functions, Fourier transforms and tensor contractions: NumPy's values on the same
// inputs, the shared conformance checks, and errors.
#include <cmath>
#include <vector>

#include "tests/unit/functions/conformance.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::expect_conforms;
using rensa::test::expect_error;
using rensa::test::FunctionCase;
using rensa::test::randn;
using Vars = std::vector<Variable>;

namespace {

Variable m(const std::vector<double>& v, const Shape& shape) {
  return Variable(Array::from_vector(v, shape));
}

void expect_vec(const Variable& v, const std::vector<double>& want, double tol = 1e-10) {
  const auto got = v.array().to_vector<double>();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

const Variable spd = m({4.0, 1.0, 0.5, 1.0, 3.0, 0.2, 0.5, 0.2, 2.0}, {3, 3});

// Well-conditioned (diagonally dominant) matrices: random entries plus 3n + 1 on the diagonal,
// symmetrized for cholesky (then positive definite).
Array square_input(const Shape& shape, Dtype dtype, uint64_t seed, bool spd_input) {
  Array a = randn(shape, Dtype::float64, seed);
  auto v = a.to_vector<double>();
  const int64_t n = shape.back();
  const int64_t batch = n > 0 ? static_cast<int64_t>(v.size()) / (n * n) : 0;
  for (int64_t b = 0; b < batch; ++b) {
    double* mat = v.data() + b * n * n;
    for (int64_t i = 0; i < n; ++i) {
      if (spd_input) {
        for (int64_t j = 0; j < i; ++j) mat[j * n + i] = mat[i * n + j];
      }
      mat[i * n + i] += 3.0 * static_cast<double>(n) + 1.0;
    }
  }
  return Array::from_vector(v, shape).astype(dtype);
}

}  // namespace

TEST(Matrix, KnownValuesFromNumpy) {
  expect_vec(F::inv(spd),
             {0.2799436355096289, -0.08924377642085486, -0.06106153123532174, -0.08924377642085486, 0.36402066697980273,
              -0.014091122592766557, -0.06106153123532174, -0.014091122592766559, 0.516674495068107});
  expect_vec(F::det(spd), {21.290000000000006});
  expect_vec(F::cholesky(spd),
             {2.0, 0.0, 0.0, 0.5, 1.6583123951777, 0.0, 0.25, 0.04522670168666455, 1.391206147720224});
  const Variable b = m({1.0, 2.0, 3.0, 4.0, 0.0, 1.0, -1.0, 0.5}, {2, 2, 2});
  expect_vec(F::batch_det(b), {-2.0, 1.0});
  expect_vec(F::batch_inv(b), {-2.0, 1.0, 1.5, -0.5, 0.5, -1.0, 1.0, 0.0});
  EXPECT_EQ(F::det(Variable(Array::zeros({0, 0}, Dtype::float64))).array().item<double>(), 1.0);
}

// The inputs are diagonally dominant 3 x 3 matrices (condition numbers near 1): the tolerance of a
// 3-term sum.
constexpr int64_t kMatrixAccumulation = 3;

TEST(Matrix, Conforms) {
  auto square = [](bool spd_input) {
    return [spd_input](std::size_t, const Shape& s, Dtype d, uint64_t seed) {
      return square_input(s, d, seed, spd_input);
    };
  };
  std::vector<FunctionCase> cases{
      {.name = "inv", .f = rensa::test::unary_fn([](const Variable& a) { return F::inv(a); }), .shapes = {{3, 3}}},
      {.name = "det", .f = rensa::test::unary_fn([](const Variable& a) { return F::det(a); }), .shapes = {{3, 3}}},
      {.name = "batch_inv",
       .f = rensa::test::unary_fn([](const Variable& a) { return F::batch_inv(a); }),
       .shapes = {{2, 3, 3}}},
      {.name = "batch_det",
       .f = rensa::test::unary_fn([](const Variable& a) { return F::batch_det(a); }),
       .shapes = {{2, 3, 3}}},
  };
  for (auto& c : cases) {
    c.make_input = square(false);
    c.size_zero = c.name.rfind("batch_", 0) == 0;
    c.broadcast = false;
    c.big_leading = c.name.rfind("batch_", 0) == 0 ? 4 : 3;
    c.accumulation = kMatrixAccumulation;
    expect_conforms(c);
  }
  // cholesky reads the lower triangle: check it on symmetric perturbations of an SPD matrix.
  expect_conforms({.name = "cholesky",
                   .f = rensa::test::unary_fn(
                       [](const Variable& a) { return F::cholesky(F::mul(F::add(a, F::transpose(a)), 0.5)); }),
                   .shapes = {{3, 3}},
                   .make_input = square(true),
                   .size_zero = false,
                   .broadcast = false,
                   .big_leading = 3,
                   .accumulation = kMatrixAccumulation});
}

TEST(Matrix, Errors) {
  expect_error<ValueError>([] { F::inv(m({1, 2, 2, 4}, {2, 2})); }, {"inv", "matrix 0", "singular"});
  expect_error<ValueError>(
      [] {
        F::batch_inv(m({1, 0, 0, 1, 1, 1, 1, 1}, {2, 2, 2}));
      },
      {"batch_inv", "matrix 1", "(2, 2, 2)", "singular"});
  expect_error<ShapeError>([] { F::inv(Variable(randn({2, 3}))); }, {"inv", "(n, n)", "(2, 3)"});
  expect_error<ShapeError>([] { F::batch_det(Variable(randn({3, 3}))); }, {"batch_det", "(B, n, n)", "(3, 3)"});
  expect_error<DtypeError>([] { F::det(Variable(Array::zeros({2, 2}, Dtype::int32))); }, {"det", "int32"});
  expect_error<ValueError>([] { F::cholesky(m({1, 2, 2, 1}, {2, 2})); }, {"cholesky", "not positive definite"});
}

TEST(Fourier, KnownValuesAndRoundTrip) {
  const Variable re = m({1.0, 2.0, 0.0, -1.0, 0.5, 0.0, 1.0, 2.0}, {2, 4});
  const Variable im = m({0.0, 1.0, 0.0, 0.5, 1.0, 0.0, -1.0, 0.0}, {2, 4});
  auto [fr, fi] = F::fft(re, im);
  expect_vec(fr, {2.0, 1.5, 0.0, 0.5, 3.5, -0.5, -0.5, -0.5});
  expect_vec(fi, {1.5, -3.0, -1.5, 3.0, 0.0, 4.0, 0.0, 0.0});
  auto [br, bi] = F::ifft(fr, fi);
  expect_vec(br, re.array().to_vector<double>());
  expect_vec(bi, im.array().to_vector<double>());
  expect_conforms({.name = "fft",
                   .f =
                       [](const Vars& v) {
                         auto [a, b] = F::fft(v[0], v[1]);
                         return Vars{a, b};
                       },
                   .shapes = {{3, 5}, {3, 5}}});
  expect_conforms({.name = "ifft",
                   .f =
                       [](const Vars& v) {
                         auto [a, b] = F::ifft(v[0], v[1]);
                         return Vars{a, b};
                       },
                   .shapes = {{3, 4}, {3, 4}}});
  expect_error<ShapeError>([&] { F::fft(re, Variable(randn({2, 3}))); }, {"fft", "real (2, 4)", "imag (2, 3)"});
}

TEST(Contraction, KnownValuesFromNumpy) {
  std::vector<double> av(24), bv(12);
  for (std::size_t i = 0; i < av.size(); ++i) av[i] = static_cast<double>(i);
  for (std::size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<double>(i) - 5;
  const Variable A = m(av, {2, 3, 4}), B = m(bv, {4, 3});
  expect_vec(F::tensordot(A, B, {1, 2}, {1, 0}), {110.0, 182.0});
  expect_vec(F::tensordot(A, F::transpose(B), 2), {110.0, 182.0});
  const Variable sub3 = F::get_item(A, {Slice(), Slice(), Slice{0, 3}});
  const Variable w = m({0, 1, 0, 1, 0, 1}, {3, 2});
  expect_vec(F::einsum("bij,jk->bik", {sub3, w}), {0, 3, 0, 15, 0, 27, 0, 39, 0, 51, 0, 63});
  expect_vec(F::einsum("ii", {spd}), {9.0});
  expect_vec(F::einsum("ii->i", {spd}), {4.0, 3.0, 2.0});
  expect_vec(F::einsum("i,j", {m({1, 2}, {2}), m({3, 4, 5}, {3})}), {3, 4, 5, 6, 8, 10});
  expect_vec(F::einsum("ij->ji", {m({1, 2, 3, 4, 5, 6}, {2, 3})}), {1, 4, 2, 5, 3, 6});
  EXPECT_EQ(F::einsum("i...,i...->...", {Variable(randn({3, 1, 2})), Variable(randn({3, 4, 2}))}).shape(),
            (Shape{4, 2}));
  EXPECT_EQ(F::einsum("...ij", {Variable(randn({2, 3, 4}))}).shape(), (Shape{2, 3, 4}));
  // Three operands: a chain of matrix products.
  const Variable x(randn({2, 3})), y(randn({3, 4}, Dtype::float64, 2)), z(randn({4, 2}, Dtype::float64, 3));
  expect_vec(F::einsum("ab,bc,cd->ad", {x, y, z}), F::matmul(F::matmul(x, y), z).array().to_vector<double>(), 1e-12);
  expect_vec(F::batch_matmul(Variable(randn({2, 3})), Variable(randn({2, 3}, Dtype::float64, 2)), true),
             F::sum(F::mul(Variable(randn({2, 3})), Variable(randn({2, 3}, Dtype::float64, 2))), {1})
                 .array()
                 .to_vector<double>(),
             1e-12);
}

TEST(Contraction, Conforms) {
  expect_conforms({.name = "tensordot",
                   .f = rensa::test::binary_fn([](const Variable& a, const Variable& b) {
                     return F::tensordot(a, b, {1, 2}, {1, 0});
                   }),
                   .shapes = {{2, 3, 4}, {4, 3}},
                   .accumulation = 4 * 3});
  expect_conforms({.name = "einsum_batched_matmul",
                   .f = rensa::test::binary_fn([](const Variable& a, const Variable& b) {
                     return F::einsum("bij,bjk->bik", {a, b});
                   }),
                   .shapes = {{2, 3, 4}, {2, 4, 2}},
                   .accumulation = 4});
  expect_conforms({.name = "einsum_trace_and_outer",
                   .f = rensa::test::binary_fn([](const Variable& a, const Variable& b) {
                     return F::einsum("ii,j->j", {a, b});
                   }),
                   .shapes = {{3, 3}, {4}},
                   .size_zero = false,
                   .big_leading = 3,
                   .accumulation = 3});
  expect_conforms({.name = "batch_matmul",
                   .f = rensa::test::binary_fn(
                       [](const Variable& a, const Variable& b) { return F::batch_matmul(a, b, false, true); }),
                   .shapes = {{2, 3, 4}, {2, 5, 4}},
                   .accumulation = 4});
}

TEST(Contraction, Errors) {
  const Variable a(randn({2, 3})), b(randn({4, 2}));
  expect_error<ShapeError>([&] { F::tensordot(a, b, 1); }, {"tensordot", "(2, 3)", "(4, 2)"});
  expect_error<ShapeError>([&] { F::tensordot(a, b, 3); }, {"tensordot", "axes 3"});
  expect_error<IndexError>([&] { F::tensordot(a, a, {0, 0}, {0, 1}); }, {"tensordot", "twice"});
  expect_error<ShapeError>([&] { F::einsum("ij,jk->ik", {a, b}); }, {"einsum", "label j has extents 3 and 4"});
  expect_error<ValueError>(
      [&] {
        F::einsum("ij,jk->iz", {a, Variable(randn({3, 2}))});
      },
      {"einsum", "output label 'z'", "no input term"});
  expect_error<ValueError>([&] { F::einsum("ij->ii", {a}); }, {"einsum", "'i'", "repeated"});
  expect_error<ValueError>([&] { F::einsum("ijk", {a}); }, {"einsum", "3 axes", "with 2"});
  expect_error<ValueError>([&] { F::einsum("ij,jk", {a}); }, {"einsum", "2 input terms for 1 operands"});
  expect_error<ValueError>([&] { F::einsum("i1", {a}); }, {"einsum", "'1'"});
  expect_error<ValueError>([&] { F::einsum("...j->j", {a}); }, {"einsum", "'...' in its inputs but not in its output"});
  expect_error<ShapeError>(
      [&] {
        F::batch_matmul(Variable(randn({2, 3, 4, 5})), a);
      },
      {"batch_matmul", "(2, 3, 4, 5)"});
}
