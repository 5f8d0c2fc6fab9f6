// max/average_pooling_nd and their 1d/3d wrappers, spatial_pyramid_pooling_2d and the
// _with_indices forms (Chainer's return_indices): Chainer's values on the same inputs, conformance
// (inputs without ties for max), agreement with the 2-d functions, Chainer's gradient on ties, and
// errors.
#include <algorithm>
#include <numeric>
#include <vector>

#include "tests/unit/functions/chainer_inputs.h"
#include "tests/unit/functions/conformance.h"
#include "tests/unit/test_util.h"

using namespace rensa;
using rensa::functions::IntN;
namespace F = rensa::functions;
using rensa::test::expect_conforms;
using rensa::test::expect_error;
using rensa::test::FunctionCase;
using rensa::test::randn;
using rensa::test::unary_fn;

namespace {

// Chainer's values below were computed on seq's inputs (chainer_inputs.h).
using rensa::test::seq;

void expect_values(const Variable& y, const Shape& shape, const std::vector<double>& expected) {
  ASSERT_EQ(y.shape(), shape);
  EXPECT_TRUE(allclose(y.array().astype(Dtype::float64), Array::from_vector(expected, shape), 1e-7, 1e-8)) << y.array();
}

const std::vector<double> kMaxPool3d = {
    0.9068384539, 0.9801783944, 0.7601585728,  0.1734390486, 0.3201189296, 0.3934588702, 0.9068384539,  0.9801783944,
    0.7601585728, 0.7403369673, 0.8870168484,  0.9603567889, 0.9405351833, 0.9405351833, 0.06045589693, 0.5738354807,
    0.7205153617, 0.7938553023, 0.7740336967,  0.9207135778, 0.9940535183, 0.9742319128, 0.9742319128,  0.8275520317,
    0.8077304262, 0.9544103072, 0.9544103072,  0.9742319128, 0.9742319128, 0.8275520317, 0.8077304262,  0.9544103072,
    0.9544103072, 0.9345887017, 0.05450941526, 0.1278493558};
const std::vector<double> kMaxPool1d = {-0.9266600595, -0.7799801784, -0.6333002973,  -0.5599603568, -0.4132804757,
                                        -0.2666005946, -0.1199207136, -0.04658077304, 0.100099108,   0.2467789891,
                                        0.3934588702,  0.4667988107,  0.6134786918,   0.7601585728,  0.9068384539,
                                        0.9801783944,  -0.8731417245, -0.7264618434,  -0.5797819623, -0.5064420218,
                                        -0.3597621407, -0.2130822597, -0.06640237859, 0.006937561943};
const std::vector<double> kAvgPool3dIgnore = {
    -0.04658077304, -0.1032375289,  -0.3265609514, -0.1631978857,  -0.164299086,     -0.2765113974,
    0.153617443,    0.1525162427,   0.04030393129, 0.03700033036,  0.07293616709,    0.03479792974,
    -0.1461843409,  -0.3695077635,  -0.4261645193, -0.09613478692, 0.01387512389,    0.1238850347,
    0.2874132805,   0.3974231913,   0.5074331021,  0.1707961678,   0.0585838564,     0.0574826561,
    -0.1790551701,  -0.06904525933, -0.1257020152, 0.03766105055,  -0.0004771868003, 0.03545864993,
    0.1878097126,   0.2978196234,   0.1578295342,  -0.2621407334,  -0.3187974893,    -0.2087875785};
const std::vector<double> kAvgPool3dZero = {
    -0.01380171053, -0.04588334618, -0.09675880043, -0.07253239364, -0.109532724,     -0.1228939544,
    0.06827441912,  0.1016774951,   0.01791285835,  0.02466688691,  0.07293616709,    0.02319861983,
    -0.04331387879, -0.1642256726,  -0.1262709687,  -0.04272657196, 0.00925008259,    0.05506001542,
    0.08515949051,  0.1766325295,   0.1503505488,   0.07590940792,  0.03905590427,    0.02554784715,
    -0.07958007562, -0.04603017289, -0.05586756231, 0.02510736703,  -0.0004771868003, 0.02363909995,
    0.05564732225,  0.1323642771,   0.04676430643,  -0.1165069926,  -0.2125316595,    -0.09279447932};
const std::vector<double> kAvgPool1dIgnore = {
    -0.9633300297, -0.8533201189,  -0.7066402379, -0.5966303271, -0.449950446,  -0.3399405352,
    -0.1932606541, -0.08325074331, 0.06342913776, 0.1734390486,  0.3201189296,  0.4301288404,
    0.5768087215,  0.6868186323,   0.8334985134,  0.9435084242,  -0.9098116947, -0.7998017839,
    -0.6531219029, -0.5431119921,  -0.396432111,  -0.2864222002, -0.1397423191, -0.02973240833};
const std::vector<double> kSpp = {
    0.9801783944,  0.9603567889,   0.9940535183,   0.4667988107,  0.6868186323,   0.9068384539,  0.9801783944,
    0.9603567889,  0.8870168484,   0.8671952428,   0.9405351833,  0.6273538157,   0.8473736373,  0.9940535183,
    0.1674925669,  -0.5599603568,  -0.4132804757,  -0.2666005946, -0.1932606541,  0.3201189296,  0.4667988107,
    0.6134786918,  0.6868186323,   0.7601585728,   0.9068384539,  0.9801783944,   -0.4331020813, -0.3597621407,
    -0.2130822597, -0.06640237859, 0.006937561943, 0.5203171457,  0.6669970268,   0.8136769078,  0.8870168484,
    0.9603567889,  -0.4529236868,  -0.3062438057,  -0.2329038652, 0.2804757185,   0.4271555996,  0.5738354807,
    0.6471754212,  0.7205153617,   0.8671952428,   0.9405351833,  -0.9127849356,  -0.3994053518, -0.2527254708,
    -0.1060455897, -0.03270564916, 0.4806739346,   0.6273538157,  0.7740336967,   0.8473736373,  0.9207135778,
    0.9940535183,  -0.3458870168,  -0.2725470763,  -0.1992071358, -0.05252725471, 0.09415262636, 0.1674925669,
    0.9742319128,  0.9345887017,   0.9881070367,   0.8275520317,  0.9742319128,   0.9544103072,  0.8077304262,
    0.7879088206,  0.9345887017,   0.1080277502,   0.3280475719,  0.9881070367,   0.7680872151,  0.7482656095,
    0.9682854311,  0.6808721506,   0.8275520317,   0.9742319128,  0.6075322101,   -0.4390485629, -0.2923686819,
    -0.1456888008, -0.07234886026, 0.4410307235,   0.5877106046,  0.7343904856,   0.8077304262,  0.8810703667,
    0.9544103072,  -0.8255698712,  -0.7522299306,  -0.2388503469, -0.09217046581, 0.05450941526, 0.1278493558,
    0.6412289395,  0.7879088206,   0.9345887017,   0.567888999,   -0.478691774,   -0.332011893,  -0.1853320119,
    -0.1119920714, -0.03865213082, 0.1080277502,   0.2547076313,  0.3280475719,   0.8414271556,  0.9881070367,
    0.6947472745,  0.7680872151,   -0.278493558,   -0.1318136769, 0.01486620416,  0.0882061447,  0.6015857284,
    0.7482656095,  0.8949454906,   0.9682854311,   -0.9583746283, -0.8116947473,  -0.6650148662, -0.5916749257};
const std::vector<double> kMaxPoolIndexes = {8, 8, 7, 8, 8, 7, 8, 7, 4, 2, 1, 1, 8, 8, 7, 8, 8, 7, 5, 5, 4, 2, 2, 1};
const std::vector<double> kMaxPool3dIndexes = {17, 16, 13, 11, 11, 10, 5,  4,  1,  8, 8, 7, 8, 6, 4, 5, 5, 4,
                                               11, 11, 10, 17, 15, 13, 14, 14, 12, 5, 3, 1, 2, 2, 0, 7, 5, 4};
const std::vector<double> kMaxPool1dIndexes = {2, 2, 2, 1, 2, 2, 2, 1, 2, 2, 2, 1, 2, 2, 2, 1, 2, 2, 2, 1, 2, 2, 2, 1};
const std::vector<double> kTieGrad = {1, 2, 0, 3, 4, 0, 0, 0, 0, 5, 6, 0, 7, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
const std::vector<double> kAvgIgnoreGrad = {27,  20.625,  34.875,  28.5,  20.75, 33.75,  58.5,  41.625,  66.375,
                                            60,  41.75,   65.25,   47,    32.5,  50.5,   81,    55.75,   86.25,
                                            153, 104.625, 160.875, 112.5, 76.75, 117.75, 184.5, 125.625, 192.375};

// Values 0.01 apart in a random order: no ties, and far from each other next to the gradient
// check's steps.
Array distinct(std::size_t, const Shape& shape, Dtype dtype, uint64_t seed) {
  const auto r = randn(shape, Dtype::float64, seed).to_vector<double>();
  std::vector<std::size_t> order(r.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return r[a] < r[b]; });
  std::vector<double> v(r.size());
  for (std::size_t k = 0; k < order.size(); ++k)
    v[order[k]] = 0.01 * (static_cast<double>(k) - 0.5 * static_cast<double>(r.size()));
  return Array::from_vector(v, shape).astype(dtype);
}

}  // namespace

TEST(PoolingNd, MatchesChainer) {
  expect_values(F::max_pooling_3d(seq({1, 2, 5, 4, 5}), {3, 2, 3}, IntN(2), {1, 0, 1}), {1, 2, 3, 2, 3}, kMaxPool3d);
  expect_values(F::max_pooling_1d(seq({2, 3, 7}), 3, IntN(2), 1), {2, 3, 4}, kMaxPool1d);
  expect_values(F::average_pooling_3d(seq({1, 2, 5, 4, 5}), 3, IntN(2), 1, std::nullopt), {1, 2, 3, 2, 3},
                kAvgPool3dIgnore);
  expect_values(F::average_pooling_3d(seq({1, 2, 5, 4, 5}), 3, IntN(2), 1), {1, 2, 3, 2, 3}, kAvgPool3dZero);
  expect_values(F::average_pooling_1d(seq({2, 3, 7}), 3, IntN(2), 1, std::nullopt), {2, 3, 4}, kAvgPool1dIgnore);
  expect_values(F::spatial_pyramid_pooling_2d(seq({2, 3, 7, 6}), 3), {2, 63, 1, 1}, kSpp);
  auto [y, indexes] = F::max_pooling_2d_with_indices(seq({1, 2, 6, 5}), 3, F::Int2(2), 1);
  EXPECT_EQ(indexes.dtype(), Dtype::int32);
  expect_values(Variable(indexes.astype(Dtype::float64)), {1, 2, 4, 3}, kMaxPoolIndexes);
  EXPECT_TRUE(allclose(y.array(), F::max_pooling_2d(seq({1, 2, 6, 5}), 3, F::Int2(2), 1).array(), 0, 0));
  auto [y3, i3] = F::max_pooling_3d_with_indices(seq({1, 2, 5, 4, 5}), {3, 2, 3}, IntN(2), {1, 0, 1});
  EXPECT_EQ(i3.dtype(), Dtype::int32);
  expect_values(Variable(i3.astype(Dtype::float64)), {1, 2, 3, 2, 3}, kMaxPool3dIndexes);
  expect_values(y3, {1, 2, 3, 2, 3}, kMaxPool3d);
  auto [y1, i1] = F::max_pooling_1d_with_indices(seq({2, 3, 7}), 3, IntN(2), 1);
  expect_values(Variable(i1.astype(Dtype::float64)), {2, 3, 4}, kMaxPool1dIndexes);
  expect_values(y1, {2, 3, 4}, kMaxPool1d);
}

// On ties the gradient goes to each window's first maximum in row-major order, as in Chainer; with
// padding left out, each element gets its windows' gradients over their counts of x's elements.
TEST(PoolingNd, GradientsMatchChainer) {
  Variable x(Array::zeros({1, 1, 3, 3, 3}, Dtype::float64), true);
  Variable y = F::max_pooling_3d(x, 2, IntN(1), 0, false);
  auto g = grad({y}, {x}, {Variable(Array::arange(1, 9, 1, Dtype::float64).reshape(y.shape()))});
  expect_values(g[0], {1, 1, 3, 3, 3}, kTieGrad);
  Variable xa(Array::zeros({1, 1, 3, 3, 3}, Dtype::float64), true);
  Variable ya = F::average_pooling_3d(xa, 2, IntN(1), 1, std::nullopt);
  auto ga = grad({ya}, {xa}, {Variable(Array::arange(1, 65, 1, Dtype::float64).reshape(ya.shape()))});
  expect_values(ga[0], {1, 1, 3, 3, 3}, kAvgIgnoreGrad);
}

TEST(PoolingNd, Conforms) {
  auto max_case = [](std::string name, rensa::testing::TestFunction f, Shape shape) {
    FunctionCase c{.name = std::move(name), .f = std::move(f), .shapes = {std::move(shape)}, .size_zero = false};
    c.make_input = distinct;
    return c;
  };
  expect_conforms(max_case("max_pooling_1d",
                           unary_fn([](const Variable& x) { return F::max_pooling_1d(x, 3, IntN(2), 1); }), {2, 3, 7}));
  expect_conforms(max_case("max_pooling_3d", unary_fn([](const Variable& x) {
                             return F::max_pooling_3d(x, {3, 2, 3}, IntN(2), {1, 0, 1});
                           }),
                           {2, 2, 5, 4, 5}));
  expect_conforms(max_case("max_pooling_nd (4 spatial axes)", unary_fn([](const Variable& x) {
                             return F::max_pooling_nd(x, 2, IntN{1, 2, 1, 2});
                           }),
                           {2, 1, 3, 4, 3, 4}));
  expect_conforms(max_case("spatial_pyramid_pooling_2d",
                           unary_fn([](const Variable& x) { return F::spatial_pyramid_pooling_2d(x, 3); }),
                           {2, 3, 7, 6}));
  expect_conforms(
      {.name = "average_pooling_1d (padding left out)",
       .f = unary_fn([](const Variable& x) { return F::average_pooling_1d(x, 3, IntN(2), 1, std::nullopt); }),
       .shapes = {{2, 3, 7}},
       .size_zero = false});
  expect_conforms({.name = "average_pooling_3d",
                   .f = unary_fn([](const Variable& x) { return F::average_pooling_3d(x, 3, IntN(2), 1); }),
                   .shapes = {{2, 2, 5, 4, 5}},
                   .size_zero = false});
  expect_conforms({.name = "average_pooling_nd (4 spatial axes, padding left out)",
                   .f = unary_fn([](const Variable& x) {
                     return F::average_pooling_nd(x, {2, 3, 2, 2}, IntN(2), {0, 1, 1, 0}, std::nullopt);
                   }),
                   .shapes = {{2, 1, 3, 4, 3, 4}},
                   .size_zero = false});
}

TEST(PoolingNd, AgreesWith2d) {
  const Array x = distinct(0, {2, 3, 7, 6}, Dtype::float64, 3);
  EXPECT_TRUE(allclose(F::max_pooling_nd(x, {3, 2}, IntN(2), 1).array(),
                       F::max_pooling_2d(x, {3, 2}, F::Int2(2), 1).array(), 0, 0));
  EXPECT_TRUE(allclose(F::average_pooling_nd(x, {3, 2}, IntN(2), 1).array(),
                       F::average_pooling_2d(x, {3, 2}, F::Int2(2), 1).array(), 1e-15, 1e-15));
  auto [y2, i2] = F::max_pooling_2d_with_indices(x, {3, 2}, F::Int2(2), 1);
  auto [yn, in] = F::max_pooling_nd_with_indices(x, {3, 2}, IntN(2), 1);
  EXPECT_TRUE(allclose(yn.array(), y2.array(), 0, 0));
  EXPECT_TRUE(allclose(in.astype(Dtype::int64), i2.astype(Dtype::int64), 0, 0));
  const Array x1 = x.reshape({2, 3, 42});
  EXPECT_TRUE(allclose(
      F::max_pooling_1d(x1, 4, IntN(3), 1).array(),
      F::max_pooling_2d(x1.reshape({2, 3, 1, 42}), {1, 4}, F::Int2(1, 3), {0, 1}).array().reshape({2, 3, 15}), 0, 0));
  // A 3-d pooling one plane deep is the 2-d one on that plane.
  const Array x3 = x.reshape({2, 3, 1, 7, 6});
  EXPECT_TRUE(allclose(F::max_pooling_3d(x3, {1, 3, 3}, IntN(2), {0, 1, 1}).array(),
                       F::max_pooling_2d(x, 3, F::Int2(2), 1).array().reshape({2, 3, 1, 4, 4}), 0, 0));
}

TEST(PoolingNd, Errors) {
  const Array x = Array::zeros({2, 3, 4, 4, 4}, Dtype::float64);
  expect_error<ShapeError>(
      [] {
        F::max_pooling_nd(Array::zeros({0, 3, 4, 4, 4}, Dtype::float64), 2);
      },
      {"max_pooling_nd", "(0, 3, 4, 4, 4)", "empty"});
  expect_error<ShapeError>(
      [] {
        F::average_pooling_3d(Array::zeros({0, 3, 4, 4, 4}, Dtype::float64), 2);
      },
      {"average_pooling_3d", "(0, 3, 4, 4, 4)", "empty"});
  expect_error<ShapeError>([&] { F::max_pooling_1d(x, 2); }, {"max_pooling_1d", "(2, 3, 4, 4, 4)", "3 axes"});
  expect_error<ShapeError>([&] { F::max_pooling_1d_with_indices(x, 2); }, {"max_pooling_1d", "(2, 3, 4, 4, 4)"});
  expect_error<ValueError>([&] { F::max_pooling_nd_with_indices(x, {2, 2}); }, {"max_pooling_nd", "ksize (2, 2)"});
  expect_error<ShapeError>(
      [] {
        F::average_pooling_3d(Array::zeros({2, 3, 4, 4}, Dtype::float64), 2);
      },
      {"average_pooling_3d", "(2, 3, 4, 4)", "5 axes"});
  expect_error<ShapeError>(
      [] {
        F::max_pooling_nd(Array::zeros({2, 3}, Dtype::float64), 2);
      },
      {"max_pooling_nd", "(2, 3)", "at least 3 axes"});
  expect_error<ValueError>([&] { F::max_pooling_nd(x, {2, 2}); }, {"max_pooling_nd", "ksize (2, 2)", "3 spatial axes"});
  expect_error<ValueError>([&] { F::max_pooling_3d(x, 2, std::nullopt, 2); },
                           {"max_pooling_3d", "pad (2)", "ksize (2)"});
  expect_error<ValueError>([&] { F::average_pooling_nd(x, 0); }, {"average_pooling_nd", "ksize (0)"});
  expect_error<ValueError>([&] { F::average_pooling_nd(x, 2, std::nullopt, 0, 1.0); },
                           {"average_pooling_nd", "pad_value 1"});
  expect_error<ShapeError>(
      [&] {
        F::max_pooling_3d(x, {2, 2, 7}, IntN(1), 0, false);
      },
      {"max_pooling_3d", "window (2, 2, 7)", "(2, 3, 4, 4, 4)"});
  expect_error<DtypeError>(
      [] {
        F::max_pooling_nd(Array::zeros({2, 3, 4}, Dtype::int32), 2);
      },
      {"max_pooling_nd", "int32"});
  const Array x2 = Array::zeros({1, 2, 9, 9}, Dtype::float64);
  expect_error<ValueError>([&] { F::spatial_pyramid_pooling_2d(x2, 2, "avg"); }, {"spatial_pyramid_pooling_2d", "avg"});
  expect_error<ValueError>([&] { F::spatial_pyramid_pooling_2d(x2, 0); }, {"spatial_pyramid_pooling_2d", "0"});
  expect_error<ValueError>([&] { F::spatial_pyramid_pooling_2d(x2, 4); },
                           {"spatial_pyramid_pooling_2d", "level 3", "(1, 2, 9, 9)"});
  // Chainer outputs -inf for a window past the end of the input (level 2 of a width of 5).
  expect_error<ValueError>(
      [] {
        F::spatial_pyramid_pooling_2d(Array::zeros({1, 1, 7, 5}, Dtype::float64), 3);
      },
      {"spatial_pyramid_pooling_2d", "level 2", "(1, 1, 7, 5)"});
  expect_error<ShapeError>(
      [] {
        F::spatial_pyramid_pooling_2d(Array::zeros({0, 2, 4, 4}, Dtype::float64), 2);
      },
      {"spatial_pyramid_pooling_2d", "(0, 2, 4, 4)"});
}
