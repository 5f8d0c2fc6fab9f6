// unpooling_2d/nd/1d/3d and upsampling_2d: Chainer's values on the same inputs, conformance,
// their relations to pooling (transposes) and to each other, and errors.
#include <vector>

#include "tests/unit/functions/chainer_inputs.h"
#include "tests/unit/functions/conformance.h"
#include "tests/unit/test_util.h"

using namespace rensa;
using rensa::functions::IntN;
namespace F = rensa::functions;
using rensa::test::expect_conforms;
using rensa::test::expect_error;
using rensa::test::randn;
using rensa::test::unary_fn;

namespace {

// Chainer's values below were computed on seq's inputs (chainer_inputs.h).
using rensa::test::seq;

void expect_values(const Variable& y, const Shape& shape, const std::vector<double>& expected) {
  ASSERT_EQ(y.shape(), shape);
  EXPECT_TRUE(allclose(y.array().astype(Dtype::float64), Array::from_vector(expected, shape), 1e-7, 1e-8)) << y.array();
}

const std::vector<double> kUpsampling = {0,
                                         0,
                                         0,
                                         0,
                                         0,
                                         0,
                                         -0.5599603568,
                                         0,
                                         -0.4132804757,
                                         -0.3399405352,
                                         0,
                                         0,
                                         0,
                                         0,
                                         0,
                                         0,
                                         0.1734390486,
                                         0,
                                         0.3201189296,
                                         0.3934588702,
                                         0,
                                         0,
                                         0,
                                         0,
                                         0.7601585728,
                                         0,
                                         1.813676908,
                                         1.960356789,
                                         0,
                                         -0.8731417245,
                                         0,
                                         0,
                                         0,
                                         0,
                                         0,
                                         0,
                                         -0.3597621407,
                                         0,
                                         -0.2130822597,
                                         -0.1397423191,
                                         0,
                                         0,
                                         0,
                                         0,
                                         0,
                                         0,
                                         0.3736372646,
                                         0,
                                         0.5203171457,
                                         0.5936570862,
                                         0,
                                         0.7403369673,
                                         0,
                                         0.8870168484,
                                         0.9603567889,
                                         0,
                                         -0.89296333,
                                         0,
                                         -0.746283449,
                                         -0.6729435084};
const std::vector<double> kUnpool2d = {-1,
                                       -1.926660059,
                                       -0.9266600595,
                                       -1.779980178,
                                       -1.779980178,
                                       -3.413280476,
                                       -1.633300297,
                                       -3.119920714,
                                       -0.7799801784,
                                       -1.486620416,
                                       -0.7066402379,
                                       -1.339940535,
                                       -1.339940535,
                                       -2.533201189,
                                       -1.193260654,
                                       -2.239841427,
                                       -0.3399405352,
                                       -0.6065411298,
                                       -0.2666005946,
                                       -0.4598612488,
                                       -0.4598612488,
                                       -0.7730426165,
                                       -0.3131813677,
                                       -0.4796828543,
                                       -0.1199207136,
                                       -0.1665014866,
                                       -0.04658077304,
                                       -0.01982160555,
                                       -0.01982160555,
                                       0.10703667,
                                       0.1268582755,
                                       0.4003964321};
const std::vector<double> kUnpool2dOutsize = {-1,
                                              -1.926660059,
                                              -0.9266600595,
                                              -1.779980178,
                                              -0.8533201189,
                                              -0.8533201189,
                                              -1.779980178,
                                              -3.413280476,
                                              -1.633300297,
                                              -3.119920714,
                                              -1.486620416,
                                              -1.486620416,
                                              -0.7799801784,
                                              -1.486620416,
                                              -0.7066402379,
                                              -1.339940535,
                                              -0.6333002973,
                                              -0.6333002973,
                                              -1.339940535,
                                              -2.533201189,
                                              -1.193260654,
                                              -2.239841427,
                                              -1.046580773,
                                              -1.046580773,
                                              -0.5599603568,
                                              -1.046580773,
                                              -0.4866204163,
                                              -0.899900892,
                                              -0.4132804757,
                                              -0.4132804757,
                                              -0.5599603568,
                                              -1.046580773,
                                              -0.4866204163,
                                              -0.899900892,
                                              -0.4132804757,
                                              -0.4132804757,
                                              -0.3399405352,
                                              -0.6065411298,
                                              -0.2666005946,
                                              -0.4598612488,
                                              -0.1932606541,
                                              -0.1932606541,
                                              -0.4598612488,
                                              -0.7730426165,
                                              -0.3131813677,
                                              -0.4796828543,
                                              -0.1665014866,
                                              -0.1665014866,
                                              -0.1199207136,
                                              -0.1665014866,
                                              -0.04658077304,
                                              -0.01982160555,
                                              0.02675916749,
                                              0.02675916749,
                                              -0.01982160555,
                                              0.10703667,
                                              0.1268582755,
                                              0.4003964321,
                                              0.2735381566,
                                              0.2735381566,
                                              0.100099108,
                                              0.2735381566,
                                              0.1734390486,
                                              0.4202180377,
                                              0.2467789891,
                                              0.2467789891,
                                              0.100099108,
                                              0.2735381566,
                                              0.1734390486,
                                              0.4202180377,
                                              0.2467789891,
                                              0.2467789891};
const std::vector<double> kUnpool3d = {-1,
                                       -1.926660059,
                                       -0.9266600595,
                                       -1.853320119,
                                       -3.559960357,
                                       -1.706640238,
                                       -0.8533201189,
                                       -1.633300297,
                                       -0.7799801784,
                                       -1.559960357,
                                       -2.973240833,
                                       -1.413280476,
                                       -0.7066402379,
                                       -1.339940535,
                                       -0.6333002973,
                                       -1,
                                       -1.926660059,
                                       -0.9266600595,
                                       -1.853320119,
                                       -3.559960357,
                                       -1.706640238,
                                       -0.8533201189,
                                       -1.633300297,
                                       -0.7799801784,
                                       -1.559960357,
                                       -2.973240833,
                                       -1.413280476,
                                       -0.7066402379,
                                       -1.339940535,
                                       -0.6333002973,
                                       -0.5599603568,
                                       -1.046580773,
                                       -0.4866204163,
                                       -0.9732408325,
                                       -1.799801784,
                                       -0.8265609514,
                                       -0.4132804757,
                                       -0.7532210109,
                                       -0.3399405352,
                                       -0.6798810704,
                                       -1.21308226,
                                       -0.5332011893,
                                       -0.2666005946,
                                       -0.4598612488,
                                       -0.1932606541,
                                       -0.5599603568,
                                       -1.046580773,
                                       -0.4866204163,
                                       -0.9732408325,
                                       -1.799801784,
                                       -0.8265609514,
                                       -0.4132804757,
                                       -0.7532210109,
                                       -0.3399405352,
                                       -0.6798810704,
                                       -1.21308226,
                                       -0.5332011893,
                                       -0.2666005946,
                                       -0.4598612488,
                                       -0.1932606541,
                                       -0.1199207136,
                                       -0.1665014866,
                                       -0.04658077304,
                                       -0.09316154609,
                                       -0.0396432111,
                                       0.05351833499,
                                       0.02675916749,
                                       0.1268582755,
                                       0.100099108,
                                       0.2001982161,
                                       0.5470763132,
                                       0.3468780971,
                                       0.1734390486,
                                       0.4202180377,
                                       0.2467789891,
                                       -0.1199207136,
                                       -0.1665014866,
                                       -0.04658077304,
                                       -0.09316154609,
                                       -0.0396432111,
                                       0.05351833499,
                                       0.02675916749,
                                       0.1268582755,
                                       0.100099108,
                                       0.2001982161,
                                       0.5470763132,
                                       0.3468780971,
                                       0.1734390486,
                                       0.4202180377,
                                       0.2467789891,
                                       0.3201189296,
                                       0.7135777998,
                                       0.3934588702,
                                       0.7869177403,
                                       1.720515362,
                                       0.9335976214,
                                       0.4667988107,
                                       1.006937562,
                                       0.5401387512,
                                       1.080277502,
                                       2.307234886,
                                       1.226957384,
                                       0.6134786918,
                                       1.300297324,
                                       0.6868186323,
                                       0.3201189296,
                                       0.7135777998,
                                       0.3934588702,
                                       0.7869177403,
                                       1.720515362,
                                       0.9335976214,
                                       0.4667988107,
                                       1.006937562,
                                       0.5401387512,
                                       1.080277502,
                                       2.307234886,
                                       1.226957384,
                                       0.6134786918,
                                       1.300297324,
                                       0.6868186323};
const std::vector<double> kUnpool1d = {-1,
                                       -1.926660059,
                                       -0.9266600595,
                                       -1.779980178,
                                       -0.8533201189,
                                       -1.633300297,
                                       -0.7066402379,
                                       -1.339940535,
                                       -0.6333002973,
                                       -1.193260654,
                                       -0.5599603568,
                                       -1.046580773,
                                       -0.4132804757,
                                       -0.7532210109,
                                       -0.3399405352,
                                       -0.6065411298,
                                       -0.2666005946,
                                       -0.4598612488,
                                       -0.1199207136,
                                       -0.1665014866,
                                       -0.04658077304,
                                       -0.01982160555,
                                       0.02675916749,
                                       0.1268582755};

// Window offsets for x's shape that reach every tap, some of them (with padding) off the output.
Array offsets(const Shape& shape, int64_t taps) {
  std::vector<int32_t> v(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>((i * 7 + 3) % static_cast<std::size_t>(taps));
  return Array::from_vector(v, shape);
}

double dot(const Variable& a, const Variable& b) {
  return F::sum(a * b).array().item<double>();
}

}  // namespace

TEST(Unpooling, MatchesChainer) {
  expect_values(F::unpooling_2d(seq({1, 2, 3, 3}), 3, F::Int2(2), 1), {1, 2, 4, 4}, kUnpool2d);
  expect_values(F::unpooling_2d(seq({1, 2, 3, 3}), 3, F::Int2(2), 1, F::Int2(6), false), {1, 2, 6, 6},
                kUnpool2dOutsize);
  expect_values(F::unpooling_3d(seq({1, 2, 2, 3, 2}), {2, 3, 2}, IntN{2, 2, 1}, {0, 1, 0}, std::nullopt, false),
                {1, 2, 4, 5, 3}, kUnpool3d);
  expect_values(F::unpooling_1d(seq({2, 2, 4}), 3, IntN(2), 1), {2, 2, 6}, kUnpool1d);
  auto [y, indexes] = F::max_pooling_2d_with_indices(seq({1, 2, 6, 5}), 3, F::Int2(2), 1);
  expect_values(F::upsampling_2d(y, indexes, 3, F::Int2(2), 1, F::Int2(6, 5)), {1, 2, 6, 5}, kUpsampling);
}

TEST(Unpooling, Conforms) {
  expect_conforms({.name = "unpooling_2d",
                   .f = unary_fn([](const Variable& x) { return F::unpooling_2d(x, 3, F::Int2(2), 1); }),
                   .shapes = {{2, 3, 4, 3}}});
  expect_conforms({.name = "unpooling_2d (outsize, no cover_all)",
                   .f = unary_fn([](const Variable& x) {
                     return F::unpooling_2d(x, {2, 3}, F::Int2(2, 1), {1, 0}, F::Int2(7, 6), false);
                   }),
                   .shapes = {{2, 3, 4, 4}}});
  expect_conforms({.name = "unpooling_1d",
                   .f = unary_fn([](const Variable& x) { return F::unpooling_1d(x, 3, IntN(2), 1); }),
                   .shapes = {{2, 3, 5}}});
  expect_conforms({.name = "unpooling_3d",
                   .f = unary_fn([](const Variable& x) {
                     return F::unpooling_3d(x, {2, 3, 2}, IntN{2, 2, 1}, {0, 1, 0}, std::nullopt, false);
                   }),
                   .shapes = {{2, 2, 2, 3, 2}}});
  expect_conforms({.name = "unpooling_nd (4 spatial axes)",
                   .f = unary_fn([](const Variable& x) {
                     return F::unpooling_nd(x, 2, IntN{1, 2, 1, 2});
                   }),
                   .shapes = {{2, 1, 2, 3, 2, 2}}});
  expect_conforms(
      {.name = "upsampling_2d",
       .f = unary_fn([](const Variable& x) { return F::upsampling_2d(x, offsets(x.shape(), 9), 3, F::Int2(2), 1); }),
       .shapes = {{2, 3, 4, 3}}});
}

TEST(Unpooling, RelationsToPooling) {
  // Unpooling is the transpose of sum pooling: <unpool(x), z> = <x, KH KW avg_pool(z)>.
  const Array x = randn({2, 3, 4, 3}), z = randn({2, 3, 7, 5}, Dtype::float64, 2);
  const double lhs = dot(F::unpooling_2d(x, 3, F::Int2(2), 1, F::Int2(7, 5)), z);
  const double rhs = dot(x, F::average_pooling_2d(z, 3, F::Int2(2), 1, true) * 9.0);
  EXPECT_NEAR(lhs, rhs, 1e-10 * (1 + std::abs(lhs)));
  // The N-d forms agree with the 2-d one where they coincide.
  EXPECT_TRUE(allclose(F::unpooling_nd(x, {3, 2}, IntN{2, 1}, {1, 0}).array(),
                       F::unpooling_2d(x, {3, 2}, F::Int2(2, 1), {1, 0}).array(), 1e-14, 1e-14));
  const Array x1 = randn({2, 3, 5}, Dtype::float64, 3);
  EXPECT_TRUE(
      allclose(F::unpooling_1d(x1, 3, IntN(2), 1).array(),
               F::unpooling_2d(x1.reshape({2, 3, 1, 5}), {1, 3}, F::Int2(1, 2), {0, 1}).array().reshape({2, 3, 8}),
               1e-14, 1e-14));
  // Upsampling with max pooling's indexes is max pooling's backward.
  const Array xm = randn({2, 3, 7, 6}, Dtype::float64, 4), gy = randn({2, 3, 4, 4}, Dtype::float64, 5);
  Variable xv(xm, true);
  auto [y, indexes] = F::max_pooling_2d_with_indices(xv, 3, F::Int2(2), 1);
  ASSERT_EQ(y.shape(), gy.shape());
  const Variable gx = grad({y}, {xv}, {Variable(gy)})[0];
  EXPECT_TRUE(allclose(F::upsampling_2d(gy, indexes, 3, F::Int2(2), 1, F::Int2(7, 6)).array(), gx.array(), 0, 0));
}

TEST(Unpooling, Errors) {
  const Array x = Array::zeros({2, 3, 4, 4}, Dtype::float64);
  expect_error<ShapeError>(
      [] {
        F::unpooling_2d(Array::zeros({2, 3, 4}, Dtype::float64), 2);
      },
      {"unpooling_2d", "(2, 3, 4)", "4 axes"});
  expect_error<ShapeError>([&] { F::unpooling_2d(x, 2, std::nullopt, 0, F::Int2(9, 8)); },
                           {"unpooling_2d", "outsize (9, 8)", "(2, 3, 4, 4)"});
  expect_error<ValueError>([&] { F::unpooling_2d(x, 0); }, {"unpooling_2d", "ksize (0, 0)"});
  expect_error<ValueError>([&] { F::unpooling_2d(x, 2, std::nullopt, -1); }, {"unpooling_2d", "pad (-1, -1)"});
  expect_error<ShapeError>([&] { F::unpooling_3d(x, 2); }, {"unpooling_3d", "(2, 3, 4, 4)", "5 axes"});
  expect_error<ValueError>(
      [&] {
        F::unpooling_nd(x, {2, 2, 2});
      },
      {"unpooling_nd", "ksize (2, 2, 2)", "2 spatial axes"});
  expect_error<ShapeError>([&] { F::unpooling_nd(x, 3, IntN(1), 3, std::nullopt, false); },
                           {"unpooling_nd", "empty", "(2, 3, 4, 4)"});
  expect_error<DtypeError>(
      [] {
        F::unpooling_1d(Array::zeros({2, 3, 4}, Dtype::int64), 2);
      },
      {"unpooling_1d", "int64"});
  const Array idx = offsets(x.shape(), 4);
  expect_error<DtypeError>([&] { F::upsampling_2d(x, x, 2); }, {"upsampling_2d", "float64"});
  expect_error<ShapeError>([&] { F::upsampling_2d(x, idx, 2, std::nullopt, 0, F::Int2(5, 9)); },
                           {"upsampling_2d", "outsize (5, 9)"});
  expect_error<ShapeError>(
      [&] {
        F::upsampling_2d(x, offsets({2, 3, 4, 3}, 4), 2);
      },
      {"upsampling_2d", "(2, 3, 4, 3)", "(2, 3, 4, 4)"});
  expect_error<IndexError>([&] { F::upsampling_2d(x, offsets(x.shape(), 5), 2); },
                           {"upsampling_2d", "index 4", "[0, 4)"});
}
