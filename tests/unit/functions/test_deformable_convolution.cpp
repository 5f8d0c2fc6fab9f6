// deformable_convolution_2d_sampler: Chainer's values and offset gradient on the same inputs,
// conformance in x, offset, W and b, zero offsets as convolution_2d, and errors.
#include <vector>

#include "tests/unit/functions/chainer_inputs.h"
#include "tests/unit/functions/conformance.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::expect_conforms;
using rensa::test::expect_error;
using rensa::test::randn;

namespace {

// Chainer's values below were computed on seq's inputs (chainer_inputs.h).
using rensa::test::seq;

void expect_values(const Variable& y, const Shape& shape, const std::vector<double>& expected) {
  ASSERT_EQ(y.shape(), shape);
  EXPECT_TRUE(allclose(y.array().astype(Dtype::float64), Array::from_vector(expected, shape), 1e-7, 1e-8)) << y.array();
}

const std::vector<double> kDeformable = {
    0.8556217741,   0.3664780792,   0.2401965572,  -0.4063057283, -3.311329331,  -2.028255816,  -1.688006454,
    -1.385047564,   -2.441643719,   -2.261759369,  1.057174385,   1.415392069,   -1.839597152,  -1.50994322,
    -0.06740421303, 0.7972635375,   -1.817678943,  -2.385281042,  1.251610562,   0.7117673237,  0.4883452117,
    -1.237318118,   -3.145341973,   -0.7961496649, -0.674856584,  -1.264612858,  -1.370532088,  -0.931648441,
    -1.752547081,   -0.6895066053,  -1.735954051,  -1.56412673,   -0.4908341746, -0.6699097155, -1.032845118,
    0.7020198614,   -0.08516629274, 0.2578654955,  -0.1441961225, -0.7013609364, -1.828821019,  -2.419520766,
    -0.9751658568,  -1.129781796,   -1.743851094,  -0.9318111193, -0.4900628174, 1.047519986};
const std::vector<double> kDeformableGradOffset = {0,
                                                   0,
                                                   0,
                                                   0.09742904159,
                                                   0.4468158993,
                                                   0.08840937884,
                                                   0.005362549722,
                                                   0.007122602797,
                                                   0.02050646347,
                                                   0.009972862049,
                                                   0.1866508762,
                                                   0.0935560657,
                                                   0.01464860156,
                                                   0.01183237767,
                                                   0.008416277224,
                                                   -0.05279885591,
                                                   -0.002757699808,
                                                   -0.1382060504,
                                                   -0.001541601039,
                                                   0,
                                                   -0.003673909018,
                                                   -0.004740063008,
                                                   -0.005806216998,
                                                   -0.4639519214,
                                                   0.01149030863,
                                                   0.0872770344,
                                                   0.04398360654,
                                                   -0.1673504307,
                                                   0.1093810434,
                                                   0.02271383445,
                                                   0.02929953126,
                                                   0.03085486883,
                                                   0.0318934203,
                                                   0.02953721998,
                                                   0.02168204886,
                                                   0.01730823802,
                                                   0,
                                                   0,
                                                   0,
                                                   0.5845742496,
                                                   0.02838410205,
                                                   0.4056449859,
                                                   -0.4564676825,
                                                   -0.2256864532,
                                                   0.1230387808,
                                                   0.05983717229,
                                                   -0.31975785,
                                                   0.509043459,
                                                   -0.1947197388,
                                                   -0.075827918,
                                                   0.05049766334,
                                                   -0.4198266851,
                                                   0.1197597714,
                                                   -0.1160299777,
                                                   -0.009249606234,
                                                   0,
                                                   -0.02204345411,
                                                   -0.02844037805,
                                                   -0.03483730199,
                                                   0.6591158866,
                                                   -0.5280154238,
                                                   -0.2457287791,
                                                   0.2639016393,
                                                   0.141261486,
                                                   -0.2142352253,
                                                   -0.8912973135,
                                                   -0.3789647529,
                                                   -0.226932655,
                                                   0.1913605218,
                                                   -0.1353726327,
                                                   0.5785161047,
                                                   0.1439928016,
                                                   -0.1163367063,
                                                   0,
                                                   -0.0929314347,
                                                   -0.1093231437,
                                                   0.1076675777,
                                                   0.1031577463,
                                                   0,
                                                   0,
                                                   -0.1548169412,
                                                   0.4859947142,
                                                   0.2667854857,
                                                   0.02335338277,
                                                   0,
                                                   0,
                                                   -0.1501152021,
                                                   -0.05220259933,
                                                   -0.3791288169,
                                                   0.009983811739,
                                                   0.3550157589,
                                                   -0.144347309,
                                                   -0.6810826888,
                                                   -0.146479617,
                                                   0.004139465693,
                                                   -0.0005033674443,
                                                   -0.03160426205,
                                                   -0.07052996183,
                                                   1.986263231,
                                                   -0.05287403414,
                                                   0,
                                                   -0.236137654,
                                                   0,
                                                   0,
                                                   -0.04108237102,
                                                   0.2030056059,
                                                   0.03488643151,
                                                   0,
                                                   -0.6980202378,
                                                   0,
                                                   0.4819639294,
                                                   0.08179875519,
                                                   0.6460054661,
                                                   -1.450480218,
                                                   0,
                                                   0,
                                                   -0.9289016473,
                                                   -0.6869897163,
                                                   -0.061934258,
                                                   0.1254495582,
                                                   0,
                                                   0,
                                                   -0.9006912127,
                                                   -1.191179039,
                                                   -0.2432568264,
                                                   0.05990287043,
                                                   -0.4056205717,
                                                   -0.8660838542,
                                                   0.438532406,
                                                   3.828991318,
                                                   -0.01451653431,
                                                   -0.03524918556,
                                                   -0.1896255723,
                                                   -0.94603458,
                                                   1.462639124,
                                                   -0.3172442049,
                                                   0,
                                                   -0.1492862713,
                                                   0,
                                                   0,
                                                   -0.9923877257,
                                                   -0.03189241643,
                                                   0.2093185891,
                                                   0};

std::vector<Variable> deformable(const std::vector<Variable>& v) {
  return {F::deformable_convolution_2d_sampler(v[0], v[1], v[2], v[3], {2, 3}, {1, 0})};
}

}  // namespace

TEST(DeformableConvolution, MatchesChainer) {
  const Array x = seq({2, 3, 5, 6}), W = seq({4, 3, 2, 3}, 5), b = seq({4}, 11);
  Variable offset(F::mul(seq({2, 12, 3, 2}, 7), 1.37).array(), true);
  const Variable y = F::deformable_convolution_2d_sampler(x, offset, W, b, {2, 3}, {1, 0});
  expect_values(y, {2, 4, 3, 2}, kDeformable);
  const Variable g = grad({y}, {offset}, {Variable(seq({2, 4, 3, 2}, 3))})[0];
  expect_values(g, {2, 12, 3, 2}, kDeformableGradOffset);
}

// Offsets are kept away from integers, where the sampled neighbours change.
TEST(DeformableConvolution, Conforms) {
  expect_conforms({.name = "deformable_convolution_2d_sampler",
                   .f = deformable,
                   .shapes = {{2, 3, 5, 6}, {2, 12, 3, 2}, {4, 3, 2, 3}, {4}},
                   .kinks = {-2.0, -1.0, 0.0, 1.0, 2.0},
                   .batched = {true, true, false, false},
                   .big_leading = 200,
                   .accumulation = 3 * 2 * 3 * 4});  // C kh kw products of 4-point bilinear samples
}

TEST(DeformableConvolution, ZeroOffsetsAreAConvolution) {
  const Array x = randn({2, 3, 6, 7}), W = randn({4, 3, 3, 2}, Dtype::float64, 2), b = randn({4}, Dtype::float64, 3);
  const Variable conv = F::convolution_2d(x, W, b, {.stride = {2, 1}, .pad = {1, 2}});
  const Array offset = Array::zeros({2, 12, conv.shape()[2], conv.shape()[3]}, Dtype::float64);
  EXPECT_TRUE(allclose(F::deformable_convolution_2d_sampler(x, offset, W, b, {2, 1}, {1, 2}).array(), conv.array(),
                       1e-12, 1e-12));
}

TEST(DeformableConvolution, Errors) {
  const Array x = Array::zeros({2, 3, 5, 6}, Dtype::float64), W = Array::zeros({4, 3, 2, 3}, Dtype::float64);
  const Array offset = Array::zeros({2, 12, 3, 2}, Dtype::float64);
  expect_error<ShapeError>(
      [&] {
        F::deformable_convolution_2d_sampler(x, Array::zeros({2, 10, 3, 2}, Dtype::float64), W);
      },
      {"deformable_convolution_2d_sampler", "offset (2, 10, 3, 2)", "(2, 12, OH, OW)"});
  expect_error<ShapeError>(
      [&] {
        F::deformable_convolution_2d_sampler(x, Array::zeros({1, 12, 3, 2}, Dtype::float64), W);
      },
      {"deformable_convolution_2d_sampler", "offset (1, 12, 3, 2)", "(2, 3, 5, 6)"});
  expect_error<ShapeError>(
      [&] {
        F::deformable_convolution_2d_sampler(x, offset, Array::zeros({4, 2, 2, 3}, Dtype::float64));
      },
      {"deformable_convolution_2d_sampler", "(2, 3, 5, 6)", "W (4, 2, 2, 3)"});
  expect_error<ShapeError>(
      [&] { F::deformable_convolution_2d_sampler(x, offset, W, Array::zeros({3}, Dtype::float64)); },
      {"deformable_convolution_2d_sampler", "b (3,)"});
  expect_error<ShapeError>(
      [&] {
        F::deformable_convolution_2d_sampler(x.reshape({6, 5, 6}), offset, W);
      },
      {"deformable_convolution_2d_sampler", "(6, 5, 6)", "4 axes"});
  expect_error<ValueError>([&] { F::deformable_convolution_2d_sampler(x, offset, W, Variable(), 0); },
                           {"deformable_convolution_2d_sampler", "stride (0, 0)"});
  expect_error<DtypeError>([&] { F::deformable_convolution_2d_sampler(x, offset.astype(Dtype::float32), W); },
                           {"deformable_convolution_2d_sampler", "float32"});
}
