// The ROI family (roi_pooling_2d, roi_max/average_pooling_2d, roi_max/average_align_2d): Chainer's
// values on the same float32 inputs, conformance in x (inputs without ties for the max ones),
// empty bins and ROIs, and errors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "tests/unit/functions/chainer_inputs.h"
#include "tests/unit/functions/conformance.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::expect_conforms;
using rensa::test::expect_error;
using rensa::test::FunctionCase;
using rensa::test::randn;
using rensa::test::unary_fn;

namespace {

// Chainer's values below were computed on seq's inputs (chainer_inputs.h).
using rensa::test::seq;

constexpr double kInf = std::numeric_limits<double>::infinity();
const std::vector<double> kRoiPooling = {0.393458873,
                                         0.540138721,
                                         0.980178416,
                                         0.980178416,
                                         0.740336955,
                                         0.887016833,
                                         0.500495553,
                                         0.647175431,
                                         0.940535188,
                                         0.647175431,
                                         0.847373664,
                                         0.994053543,
                                         0.607532203,
                                         0.754212081,
                                         0.607532203,
                                         0.754212081,
                                         0.954410315,
                                         0.954410315,
                                         0.127849355,
                                         0.201189294,
                                         0.714568853,
                                         0.787908792,
                                         -0.698711574,
                                         -0.625371635,
                                         0.23488602,
                                         0.30822596,
                                         0.821605563,
                                         0.894945502,
                                         -0.591674924,
                                         -0.518334985,
                                         0.3419227,
                                         0.41526264,
                                         0.928642213,
                                         0.928642213,
                                         -0.484638244,
                                         -0.411298305,
                                         0.787908792,
                                         0.93458873,
                                         0.988107026,
                                         0.768087208,
                                         0,
                                         0,
                                         0.894945502,
                                         0.968285441,
                                         0.948463798,
                                         0.875123858,
                                         0,
                                         0,
                                         0.928642213,
                                         0.982160568,
                                         0.762140751,
                                         0.982160568,
                                         0,
                                         0};
const std::vector<double> kRoiMaxPooling = {
    -0.266600609, -0.119920716, 0.906838477,  0.980178416, 0.0802775025,  0.226957381,  -0.159563929, -0.0128840432,
    0.940535188,  0.573835492,  0.187314168,  0.333994061, -0.0525272563, 0.0941526294, 0.534192264,  0.680872142,
    0.294350833,  0.441030711,  0.0545094162, 0.127849355, 0.641228914,   0.714568853,  0.641228914,  0.714568853,
    0.161546081,  0.23488602,   0.748265624,  0.821605563, 0.748265624,   0.821605563,  0.268582761,  0.3419227,
    0.855302274,  0.928642213,  0.855302274,  0.928642213, 0.714568853,   0.93458873,   0.988107026,  0.768087208,
    -kInf,        -kInf,        0.821605563,  0.968285441, 0.948463798,   0.875123858,  -kInf,        -kInf,
    0.928642213,  0.395441025,  0.688800812,  0.982160568, -kInf,         -kInf};
const std::vector<double> kRoiAveragePooling = {-0.596630335,
                                                -0.449950457,
                                                0.576808751,
                                                0.223488614,
                                                -0.249752238,
                                                -0.103072345,
                                                -0.489593655,
                                                -0.342913777,
                                                0.183845401,
                                                -0.169474721,
                                                -0.142715573,
                                                0.00396431983,
                                                -0.382557005,
                                                -0.235877112,
                                                -0.209117949,
                                                -0.0624380708,
                                                -0.0356788859,
                                                0.111000985,
                                                0.0545094162,
                                                0.127849355,
                                                0.347869158,
                                                0.421209097,
                                                0.641228914,
                                                0.714568853,
                                                0.161546081,
                                                0.23488602,
                                                0.454905868,
                                                0.528245807,
                                                0.748265624,
                                                0.821605563,
                                                0.268582761,
                                                0.3419227,
                                                0.561942518,
                                                0.635282457,
                                                0.855302274,
                                                0.928642213,
                                                -0.142054856,
                                                -0.0153617365,
                                                0.4080773,
                                                -0.0485629439,
                                                0,
                                                0,
                                                -0.0350181647,
                                                -0.0749917403,
                                                0.0151139647,
                                                0.058473736,
                                                0,
                                                0,
                                                0.0720184818,
                                                -0.301288396,
                                                -0.12784934,
                                                0.165510416,
                                                0,
                                                0};
const std::vector<double> kRoiMaxAlign = {
    0.28894949,  0.462765127,  0.85220027,   0.114738524,  0.541952491,  0.715768158,   0.39598617,   0.569801807,
    0.654759705, -0.303696662, 0.648989201,  0.764866292,  0.50302279,   0.676838458,   -0.37047568,  -0.196660012,
    0.756025851, 0.366590768,  0.476947457,  0.538552999,  0.147651196,  0.209256738,   -0.701645255, -0.640039682,
    0.583984137, 0.645589709,  0.254687876,  0.316293418,  -0.594608605, -0.533003032,  0.691020787,  0.431026429,
    0.361724526, 0.120930128,  -0.487571925, -0.425966352, 0.355916679,  0.627274454,   0.960237861,  -0.192943349,
    -kInf,       -kInf,        0.462953359,  0.734311104,  0.948463798,  -0.0859066546, -kInf,        -kInf,
    0.569990039, 0.841347814,  -0.250227749, 0.0211300123, -kInf,        -kInf};
const std::vector<double> kRoiAverageAlign = {-0.0506144613,
                                              0.123201206,
                                              0.295886993,
                                              -0.391764045,
                                              0.202388555,
                                              0.376204222,
                                              0.056422215,
                                              0.230237886,
                                              -0.297343045,
                                              -0.463260651,
                                              0.309425235,
                                              0.468074203,
                                              0.163458884,
                                              0.337274551,
                                              -0.530039668,
                                              -0.356224,
                                              0.416461915,
                                              0.0104441186,
                                              0.476947457,
                                              0.538552999,
                                              0.147651196,
                                              0.209256738,
                                              -0.701645255,
                                              -0.640039682,
                                              0.583984137,
                                              0.645589709,
                                              0.254687876,
                                              0.316293418,
                                              -0.594608605,
                                              -0.533003032,
                                              0.691020787,
                                              0.431026429,
                                              0.361724526,
                                              0.120930128,
                                              -0.487571925,
                                              -0.425966352,
                                              -0.272811353,
                                              0.0243700799,
                                              0.29232955,
                                              -0.284968585,
                                              0,
                                              0,
                                              -0.165774703,
                                              0.103256181,
                                              -0.0693792999,
                                              -0.225503743,
                                              0,
                                              0,
                                              -0.0614046976,
                                              0.173075616,
                                              -0.412421465,
                                              -0.16603893,
                                              0,
                                              0};
const std::vector<double> kRoiAverageAlignRatio = {-0.0506144613,
                                                   0.123201206,
                                                   0.295886993,
                                                   -0.391764045,
                                                   0.202388555,
                                                   0.376204222,
                                                   0.056422215,
                                                   0.230237886,
                                                   -0.297343045,
                                                   -0.463260651,
                                                   0.309425235,
                                                   0.468074203,
                                                   0.163458884,
                                                   0.337274551,
                                                   -0.530039668,
                                                   -0.356224,
                                                   0.416461915,
                                                   0.0104441186,
                                                   0.476947457,
                                                   0.538552999,
                                                   0.147651196,
                                                   0.209256738,
                                                   -0.596645176,
                                                   -0.535039604,
                                                   0.583984137,
                                                   0.645589709,
                                                   0.254687876,
                                                   0.316293418,
                                                   -0.489608496,
                                                   -0.428002954,
                                                   0.691020787,
                                                   0.431026429,
                                                   0.361724526,
                                                   0.120930128,
                                                   -0.382571846,
                                                   -0.346166283,
                                                   -0.326144725,
                                                   -0.00531883305,
                                                   0.22274901,
                                                   -0.254947066,
                                                   0,
                                                   0,
                                                   -0.219108075,
                                                   0.0838783905,
                                                   -0.0755992681,
                                                   -0.210348442,
                                                   0,
                                                   0,
                                                   -0.11207141,
                                                   0.173075616,
                                                   -0.358780861,
                                                   -0.165749833,
                                                   0,
                                                   0};
const std::vector<double> kRoiMaxAlignRatio = {
    0.3828246,   0.516640186,  0.7583251,    0.176063448,  0.635827601,  0.809643269,   0.449861228,  0.623676896,
    0.597684622, -0.209821552, 0.742864311,  0.858741403,  0.556897879,  0.730713546,   -0.27660054,  -0.102784887,
    0.849900961, 0.318938851,  0.634383857,  0.69598937,   0.497951776,  0.559557319,   -0.491344452, -0.429738909,
    0.741420567, 0.80302608,   0.604988456,  0.666594028,  -0.384307802, -0.322702229,  0.848457217,  0.868992388,
    0.712025166, 0.732560337,  -0.277271122, -0.256735921, 0.325113922,  0.627274454,   0.929435074,  -0.192943349,
    -kInf,       -kInf,        0.432150573,  0.734311104,  0.948463798,  -0.0859066546, -kInf,        -kInf,
    0.539187253, 0.841347814,  -0.281030536, 0.0211300123, -kInf,        -kInf};

Array x32() {
  return seq({2, 3, 7, 8}).astype(Dtype::float32);
}
// (y_min, x_min, y_max, x_max) rows, one reaching past x, and their batch indices.
Array rois() {
  return Array::from_vector(std::vector<double>{0.7, 1.2, 10.3, 9.1, 2.2, 3.3, 5.7, 6.1, 4.1, -2.2, 17.9, 14.6}, {3, 4})
      .astype(Dtype::float32);
}
Array roi_indices() {
  return Array::from_vector(std::vector<int32_t>{0, 1, 1}, {3});
}

void expect_f32(const Variable& y, const std::vector<double>& expected) {
  ASSERT_EQ(y.shape(), Shape({3, 3, 3, 2}));
  EXPECT_TRUE(allclose(y.array().astype(Dtype::float64), Array::from_vector(expected, y.shape()), 1e-5, 1e-6))
      << y.array();
}

// Values 0.01 apart in a random order: no ties, far apart next to the gradient check's steps.
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

// A plane tilted one way or the other per channel, plus noise below its slope: bilinear samples of
// one bin differ by far more than the gradient check's steps (no near ties between samples).
Array tilted(std::size_t, const Shape& shape, Dtype dtype, uint64_t seed) {
  auto v = randn(shape, Dtype::float64, seed).to_vector<double>();
  const int64_t C = shape[1], H = shape[2], W = shape[3];
  for (std::size_t f = 0; f < v.size(); ++f) {
    const int64_t i = static_cast<int64_t>(f);
    const int64_t c = i / (H * W) % C, h = i / W % H, w = i % W;
    const double slope = c % 2 == 0 ? 1.0 : -1.0;
    v[f] = slope * (static_cast<double>(h) + 0.37 * static_cast<double>(w)) + 0.02 * std::tanh(v[f]);
  }
  return Array::from_vector(v, shape).astype(dtype);
}

}  // namespace

TEST(RoiPooling, MatchesChainer) {
  const Array rois5 =
      Array::from_vector(std::vector<double>{0, 1.2, 0.7, 9.1, 10.3, 1, 3.3, 2.2, 6.1, 5.7, 1, -2.2, 4.1, 14.6, 17.9},
                         {3, 5})
          .astype(Dtype::float32);
  expect_f32(F::roi_pooling_2d(x32(), rois5, 3, 2, 0.6), kRoiPooling);
  expect_f32(F::roi_max_pooling_2d(x32(), rois(), roi_indices(), {3, 2}, 0.6), kRoiMaxPooling);
  expect_f32(F::roi_average_pooling_2d(x32(), rois(), roi_indices(), {3, 2}, 0.6), kRoiAveragePooling);
  expect_f32(F::roi_max_align_2d(x32(), rois(), roi_indices(), {3, 2}, 0.6), kRoiMaxAlign);
  expect_f32(F::roi_average_align_2d(x32(), rois(), roi_indices(), {3, 2}, 0.6), kRoiAverageAlign);
  expect_f32(F::roi_average_align_2d(x32(), rois(), roi_indices(), {3, 2}, 0.6, {2, std::nullopt}),
             kRoiAverageAlignRatio);
  expect_f32(F::roi_max_align_2d(x32(), rois(), roi_indices(), {3, 2}, 0.6, 3), kRoiMaxAlignRatio);
}

TEST(RoiPooling, Conforms) {
  const Array r = rois().astype(Dtype::float64), idx = roi_indices();
  // The max functions' third ROI has bins past x, whose -inf has no derivative to check.
  const Array r2 = r.index({Slice{0, 2}}), idx2 = idx.index({Slice{0, 2}});
  const Array r5 = Array::from_vector(std::vector<double>{0, 1.2, 0.7, 9.1, 10.3, 1, 3.3, 2.2, 6.1, 5.7}, {2, 5});
  auto with = [](std::string name, rensa::testing::TestFunction f, bool max) {
    FunctionCase c{.name = std::move(name), .f = std::move(f), .shapes = {{2, 3, 7, 8}}, .size_zero = false};
    if (max) c.make_input = distinct;
    return c;
  };
  FunctionCase max_align = with("roi_max_align_2d", unary_fn([r2, idx2](const Variable& x) {
                                  return F::roi_max_align_2d(x, r2, idx2, {3, 2}, 0.6, 2);
                                }),
                                false);
  max_align.make_input = tilted;
  expect_conforms(max_align);
  expect_conforms(
      with("roi_pooling_2d", unary_fn([r5](const Variable& x) { return F::roi_pooling_2d(x, r5, 3, 2, 0.6); }), true));
  expect_conforms(with("roi_max_pooling_2d", unary_fn([r2, idx2](const Variable& x) {
                         return F::roi_max_pooling_2d(x, r2, idx2, {3, 2}, 0.6);
                       }),
                       true));
  expect_conforms(with("roi_average_pooling_2d", unary_fn([r, idx](const Variable& x) {
                         return F::roi_average_pooling_2d(x, r, idx, {3, 2}, 0.6);
                       }),
                       false));
  expect_conforms(with("roi_average_align_2d", unary_fn([r, idx](const Variable& x) {
                         return F::roi_average_align_2d(x, r, idx, {3, 2}, 0.6);
                       }),
                       false));
}

// Bins outside x give Chainer's fill values (0 for roi_pooling_2d and the averages, -inf for the
// other max functions), with no gradient; no ROIs give an empty output.
TEST(RoiPooling, EmptyBinsAndRois) {
  const Array x = randn({1, 2, 4, 4});
  const Array far = Array::from_vector(std::vector<double>{20, 20, 30, 30}, {1, 4});
  const Array far5 = Array::from_vector(std::vector<double>{0, 20, 20, 30, 30}, {1, 5});
  const Array zero = Array::from_vector(std::vector<int32_t>{0}, {1});
  const double inf = std::numeric_limits<double>::infinity();
  Variable xv(x, true);
  const Variable ymax = F::roi_max_pooling_2d(xv, far, zero, 2, 1.0);
  EXPECT_TRUE(allclose(ymax.array(), Array::full({1, 2, 2, 2}, -inf, Dtype::float64), 0, 0));
  EXPECT_TRUE(allclose(F::roi_max_align_2d(x, far, zero, 2, 1.0).array(),
                       Array::full({1, 2, 2, 2}, -inf, Dtype::float64), 0, 0));
  EXPECT_TRUE(
      allclose(F::roi_pooling_2d(x, far5, 2, 2, 1.0).array(), Array::zeros({1, 2, 2, 2}, Dtype::float64), 0, 0));
  EXPECT_TRUE(allclose(F::roi_average_pooling_2d(x, far, zero, 2, 1.0).array(),
                       Array::zeros({1, 2, 2, 2}, Dtype::float64), 0, 0));
  EXPECT_TRUE(allclose(F::roi_average_align_2d(x, far, zero, 2, 1.0).array(),
                       Array::zeros({1, 2, 2, 2}, Dtype::float64), 0, 0));
  const Variable g = grad({ymax}, {xv}, {Variable(Array::ones({1, 2, 2, 2}, Dtype::float64))})[0];
  EXPECT_TRUE(allclose(g.array(), Array::zeros(x.shape(), Dtype::float64), 0, 0));
  const Variable none =
      F::roi_average_align_2d(x, Array::zeros({0, 4}, Dtype::float64), Array::zeros({0}, Dtype::int32), {3, 2}, 1.0);
  EXPECT_EQ(none.shape(), Shape({0, 2, 3, 2}));
}

TEST(RoiPooling, Errors) {
  const Array x = Array::zeros({2, 3, 7, 8}, Dtype::float64);
  const Array r = rois().astype(Dtype::float64), idx = roi_indices();
  expect_error<ShapeError>(
      [&] {
        F::roi_max_pooling_2d(x, r.reshape({4, 3}), idx, 2, 1.0);
      },
      {"roi_max_pooling_2d", "rois (4, 3)", "(R, 4)"});
  expect_error<ShapeError>([&] { F::roi_average_align_2d(x, r, Array::zeros({2}, Dtype::int32), 2, 1.0); },
                           {"roi_average_align_2d", "roi_indices (2,)", "(3, 4)"});
  expect_error<IndexError>(
      [&] {
        F::roi_max_align_2d(x, r, Array::from_vector(std::vector<int32_t>{0, 2, 1}, {3}), 2, 1.0);
      },
      {"roi_max_align_2d", "ROI 1", "batch index 2", "(2, 3, 7, 8)"});
  expect_error<DtypeError>(
      [&] {
        F::roi_average_pooling_2d(x, r, r.index({Slice{}, 0}), 2, 1.0);
      },
      {"roi_average_pooling_2d", "roi_indices", "float64"});
  expect_error<DtypeError>(
      [&] {
        F::roi_max_pooling_2d(x, idx.reshape({3, 1}), idx, 2, 1.0);
      },
      {"roi_max_pooling_2d", "rois", "int32"});
  expect_error<ValueError>([&] { F::roi_max_pooling_2d(x, r, idx, {0, 2}, 1.0); }, {"roi_max_pooling_2d", "(0, 2)"});
  expect_error<ValueError>([&] { F::roi_average_align_2d(x, r, idx, 2, -1.0); },
                           {"roi_average_align_2d", "spatial_scale -1"});
  expect_error<ValueError>([&] { F::roi_average_align_2d(x, r, idx, 2, 1.0, 0); },
                           {"roi_average_align_2d", "sampling_ratio"});
  expect_error<ShapeError>([&] { F::roi_pooling_2d(x, r, 2, 2, 1.0); }, {"roi_pooling_2d", "rois (3, 4)", "(R, 5)"});
  expect_error<IndexError>(
      [&] {
        F::roi_pooling_2d(x, Array::from_vector(std::vector<double>{5, 0, 0, 2, 2}, {1, 5}), 2, 2, 1.0);
      },
      {"roi_pooling_2d", "batch index 5"});
  expect_error<ShapeError>(
      [&] {
        F::roi_pooling_2d(x.reshape({6, 7, 8}), Array::zeros({1, 5}, Dtype::float64), 2, 2, 1.0);
      },
      {"roi_pooling_2d", "(6, 7, 8)", "4 axes"});
  expect_error<DtypeError>([&] { F::roi_max_align_2d(x.astype(Dtype::int32), r, idx, 2, 1.0); },
                           {"roi_max_align_2d", "int32"});
}
