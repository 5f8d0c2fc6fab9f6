// Recurrent functions: Chainer 7.8.1's values on the same inputs (so its weight layouts carry
// over), the shared conformance checks, variable batch sizes, and errors.
#include <cmath>
#include <vector>

#include "tests/unit/functions/conformance.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::expect_conforms;
using rensa::test::expect_error;
using Vars = std::vector<Variable>;
using Weights = std::vector<std::vector<Variable>>;

namespace {

// sin(0.37 k + off) laid out in `shape`: the same inputs the reference values were computed on.
Variable arr(const Shape& shape, double off) {
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = std::sin(0.37 * static_cast<double>(k) + off);
  return Variable(Array::from_vector(v, shape));
}

void expect_vec(const Variable& v, const std::vector<double>& want) {
  const auto got = v.array().to_vector<double>();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-11 * (1 + std::abs(want[i]))) << i;
}

constexpr int64_t kH = 2, kI = 3;

const Vars& sequence() {
  static const Vars xs{arr({2, kI}, 1.0), arr({2, kI}, 1.1), arr({1, kI}, 1.2)};
  return xs;
}

// Weights and biases as the reference script builds them.
std::pair<Weights, Weights> weights(int64_t layers, int64_t dirs, int64_t per, double off) {
  Weights ws, bs;
  for (int64_t l = 0; l < layers * dirs; ++l) {
    const int64_t in = l < dirs ? kI : kH * dirs;
    ws.emplace_back();
    bs.emplace_back();
    for (int64_t k = 0; k < per; ++k) {
      const double o = off + 0.1 * static_cast<double>(l) + 0.01 * static_cast<double>(k);
      ws.back().push_back(arr({kH, k < per / 2 ? in : kH}, o));
      bs.back().push_back(arr({kH}, o + 0.5));
    }
  }
  return {ws, bs};
}

}  // namespace

TEST(Rnn, CellsMatchChainer) {
  auto [c, h] = F::lstm(arr({3, 2}, 0.1), arr({2, 8}, 0.2));
  expect_vec(c, {0.192922883421597, 0.836320824397935, 0.241625444243661, 0.0818472423315178, 0.99995764649874,
                 0.928959715003869});
  expect_vec(h, {0.138037006176362, 0.400231405228132, 0.0683321539454552, 0.030673119455142});
  auto [sc, sh] = F::slstm(arr({2, 2}, 0.3), arr({2, 2}, 0.4), arr({2, 8}, 0.5), arr({2, 8}, 0.6));
  expect_vec(sc, {1.15522519260062, 1.72174859140067, 0.28190322076634, 0.275548419106422});
  expect_vec(sh, {0.720891585927627, 0.469782698219455, 0.0330600344248554, 0.110206044257});
  auto [tc, th] = F::tree_lstm({arr({2, 2}, 0.7), arr({2, 2}, 0.8), arr({2, 10}, 0.9)});
  expect_vec(tc, {1.04856155702866, 1.16163048689812, 1.10823332808392, 1.08182556822859});
  expect_vec(th, {0.520297356852087, 0.48823772212367, 0.361324068344585, 0.429816220643189});
}

TEST(Rnn, NStepMatchChainer) {
  {
    auto [ws, bs] = weights(2, 1, 8, 2.0);
    auto r = F::n_step_lstm(2, 0.0, arr({2, 2, kH}, 3.0), arr({2, 2, kH}, 3.1), ws, bs, sequence());
    expect_vec(r.hy, {0.969863306171072, -0.0910399625246924, 0.716313139954957, -0.0783218926260836,
                      0.715191342211013, 0.238896904063135, 0.250505038780191, 0.0780583050378724});
    expect_vec(r.cy, {2.86531316024566, -0.209792459667878, 1.07287350528828, -0.144798041356807, 1.14803980921455,
                      0.393683248403009, 0.331690256802909, 0.130464205309266});
    ASSERT_EQ(r.ys.size(), 3u);
    expect_vec(r.ys[2], {0.715191342211013, 0.238896904063135});
  }
  {
    auto [ws, bs] = weights(2, 2, 8, 2.2);
    auto r = F::n_step_bilstm(2, 0.0, arr({4, 2, kH}, 3.2), arr({4, 2, kH}, 3.3), ws, bs, sequence());
    expect_vec(r.hy, {0.928327370482103, -0.0550949147876144, 0.512269761234114, -0.138171989889134,
                      0.768024676245839, -0.0236024476260958, 0.480987924907591, -0.080554836906617,
                      0.703394998799339, -0.0888487184740561, 0.651538094308519, -0.0592047732752719,
                      0.635470602611345, -0.0258815864851655, 0.469410038271265, -0.0694285349486648});
    expect_vec(r.ys[0], {0.256269024023811, -0.0199112047561023, 0.635470602611345, -0.0258815864851655,
                         0.550361645354598, 0.0112858023613053, 0.469410038271265, -0.0694285349486648});
  }
  {
    auto [ws, bs] = weights(2, 1, 6, 2.4);
    auto r = F::n_step_gru(2, 0.0, arr({2, 2, kH}, 3.4), ws, bs, sequence());
    EXPECT_TRUE(r.cy.is_null());
    expect_vec(r.hy, {0.35413887722808, -0.963329397911201, 0.0309061330281271, -0.768047884231439,
                      -0.124948506316403, -0.0279253889102619, -0.269927371678966, -0.0247513059919831});
    expect_vec(r.ys[1], {-0.288127610450288, -0.135625034729115, -0.269927371678966, -0.0247513059919831});
  }
  {
    auto [ws, bs] = weights(1, 2, 6, 2.6);
    expect_vec(F::n_step_bigru(1, 0.0, arr({2, 2, kH}, 3.5), ws, bs, sequence()).hy,
               {0.196860892500138, -0.988079316572676, -0.0473673704360743, -0.886035394194874, -0.173230309498689,
                -0.992196540868182, -0.062120785741671, -0.922617019875517});
  }
  {
    auto [ws, bs] = weights(2, 1, 2, 0.9);
    expect_vec(F::n_step_rnn(2, 0.0, arr({2, 2, kH}, 0.2), ws, bs, sequence(), "relu").hy,
               {27.3284056284526, 28.532918994971, 12.0482479063131, 12.6442086277289, 142.185213387068,
                142.929554131319, 46.5816955228966, 46.7796553036969});
  }
  {
    auto [ws, bs] = weights(1, 2, 2, 3.0);
    auto r = F::n_step_birnn(1, 0.0, arr({2, 2, kH}, 3.7), ws, bs, sequence());
    expect_vec(r.hy, {-0.836005062423734, -0.991011202276498, -0.60145824571058, -0.917777930319825,
                      -0.906651648258743, -0.990741889426612, -0.734534053897742, -0.936911859986036});
    expect_vec(r.ys[2], {-0.836005062423734, -0.991011202276498, -0.919139934478144, -0.995290197328937});
  }
}

TEST(Rnn, Conforms) {
  expect_conforms({.name = "lstm", .f = [](const Vars& v) {
                     auto [c, h] = F::lstm(v[0], v[1]);
                     return Vars{c, h};
                   },
                   .shapes = {{3, 2}, {3, 8}}});
  expect_conforms({.name = "lstm_shrinking_batch", .f = [](const Vars& v) {
                     auto [c, h] = F::lstm(v[0], v[1]);
                     return Vars{c, h};
                   },
                   .shapes = {{4, 2}, {3, 8}}, .size_zero = false, .broadcast = false, .batched = {true, true},
                   .big_leading = 4});
  expect_conforms({.name = "slstm", .f = [](const Vars& v) {
                     auto [c, h] = F::slstm(v[0], v[1], v[2], v[3]);
                     return Vars{c, h};
                   },
                   .shapes = {{3, 2}, {3, 2}, {3, 8}, {3, 8}}});
  expect_conforms({.name = "tree_lstm", .f = [](const Vars& v) {
                     auto [c, h] = F::tree_lstm(v);
                     return Vars{c, h};
                   },
                   .shapes = {{3, 2}, {3, 2}, {3, 10}}});
  // The n_step functions: every weight, bias, state and input gets a gradient.
  for (int per : {8, 6, 2}) {
    rensa::test::FunctionCase c{
        .name = per == 8 ? "n_step_bilstm" : per == 6 ? "n_step_bigru" : "n_step_birnn",
        .f = [per](const Vars& v) {
          // v: hx, cx, x0, x1, then 2 * per weights and 2 * per biases.
          Weights ws(2), bs(2);
          for (int d = 0; d < 2; ++d) {
            for (int k = 0; k < per; ++k) {
              ws[static_cast<std::size_t>(d)].push_back(v[static_cast<std::size_t>(4 + d * per + k)]);
              bs[static_cast<std::size_t>(d)].push_back(v[static_cast<std::size_t>(4 + 2 * per + d * per + k)]);
            }
          }
          const Vars xs{v[2], v[3]};
          F::NStepResult r = per == 8   ? F::n_step_bilstm(1, 0.0, v[0], v[1], ws, bs, xs)
                             : per == 6 ? F::n_step_bigru(1, 0.0, v[0], ws, bs, xs)
                                        : F::n_step_birnn(1, 0.0, v[0], ws, bs, xs);
          Vars out{r.hy, r.ys[0], r.ys[1]};
          if (!r.cy.is_null()) out.push_back(r.cy);
          return out;
        },
        .shapes = {{2, 2, kH}, {2, 2, kH}, {2, kI}, {1, kI}},
        .size_zero = false,
        .broadcast = false,
        .batched = std::vector<bool>(static_cast<std::size_t>(4 + 4 * per), false),
        .float32_keeps_dtype = true};
    for (int k = 0; k < 2 * per; ++k) c.shapes.push_back({kH, k % per < per / 2 ? kI : kH});
    for (int k = 0; k < 2 * per; ++k) c.shapes.push_back({kH});
    c.lo = -1.0;
    c.hi = 1.0;
    expect_conforms(c);
  }
}

// Two stacked layers over three steps whose batch shrinks: the fused layers' state handling
// between layers and across steps, first and second order.
TEST(Rnn, NStepTwoLayersShrinkingBatch) {
  for (const std::size_t per : {std::size_t{8}, std::size_t{6}}) {
    const std::size_t n_in = 5 + 4 * per;
    rensa::test::FunctionCase c{
        .name = per == 8 ? "n_step_lstm_2_layers" : "n_step_gru_2_layers",
        .f = [per](const Vars& v) {
          // v: hx, cx (unused by the GRU), x0, x1, x2, then 2 per weights and 2 per biases.
          Weights ws(2), bs(2);
          for (std::size_t l = 0; l < 2; ++l) {
            for (std::size_t k = 0; k < per; ++k) {
              ws[l].push_back(v[5 + l * per + k]);
              bs[l].push_back(v[5 + 2 * per + l * per + k]);
            }
          }
          const Vars xs{v[2], v[3], v[4]};
          if (per == 6) {
            F::NStepResult r = F::n_step_gru(2, 0.0, v[0], ws, bs, xs);
            return Vars{r.hy, r.ys[0], r.ys[1], r.ys[2], F::sum(v[1])};
          }
          F::NStepResult r = F::n_step_lstm(2, 0.0, v[0], v[1], ws, bs, xs);
          return Vars{r.hy, r.cy, r.ys[0], r.ys[1], r.ys[2]};
        },
        .shapes = {{2, 3, kH}, {2, 3, kH}, {3, kI}, {2, kI}, {1, kI}},
        .size_zero = false,
        .broadcast = false,
        .batched = std::vector<bool>(n_in, false),
        .float32_keeps_dtype = true};
    for (std::size_t l = 0; l < 2; ++l) {
      for (std::size_t k = 0; k < per; ++k) c.shapes.push_back({kH, l == 0 && k < per / 2 ? kI : kH});
    }
    for (std::size_t k = 0; k < 2 * per; ++k) c.shapes.push_back({kH});
    c.lo = -1.0;
    c.hi = 1.0;
    expect_conforms(c);
  }
}

TEST(Rnn, Errors) {
  expect_error<ShapeError>([] { F::lstm(arr({2, 2}, 0), arr({2, 7}, 0)); }, {"lstm", "x (2, 7)", "4 H"});
  expect_error<ShapeError>([] { F::lstm(arr({1, 2}, 0), arr({2, 8}, 0)); }, {"lstm", "c_prev (1, 2)", "at least (2, 2)"});
  expect_error<ShapeError>([] { F::slstm(arr({2, 2}, 0), arr({2, 3}, 0), arr({2, 8}, 0), arr({2, 8}, 0)); },
                           {"slstm", "c_prev2 (2, 3)"});
  expect_error<ValueError>([] { F::tree_lstm({arr({2, 8}, 0)}); }, {"tree_lstm", "at least one cell state"});
  expect_error<ShapeError>([] { F::tree_lstm({arr({2, 2}, 0), arr({2, 3}, 0), arr({2, 10}, 0)}); },
                           {"tree_lstm", "c2 (2, 3)"});
  auto [ws, bs] = weights(1, 1, 8, 0.0);
  const Variable h = arr({1, 2, kH}, 0), c = arr({1, 2, kH}, 1);
  expect_error<ShapeError>([&] { F::n_step_lstm(1, 0.0, h, c, ws, bs, {arr({1, kI}, 0), arr({2, kI}, 0)}); },
                           {"n_step_lstm", "xs[1] (2, 3)", "at most 1"});
  expect_error<ValueError>([&] { F::n_step_lstm(2, 0.0, arr({2, 2, kH}, 0), arr({2, 2, kH}, 0), ws, bs, sequence()); },
                           {"n_step_lstm", "need 2 weight and bias lists, got 1"});
  expect_error<ShapeError>([&] { F::n_step_lstm(1, 0.0, arr({2, 2, kH}, 0), c, ws, bs, sequence()); },
                           {"n_step_lstm", "hx (2, 2, 2)", "(1, B, H)"});
  auto bad = ws;
  bad[0][5] = arr({kH, kI}, 0);
  expect_error<ShapeError>([&] { F::n_step_lstm(1, 0.0, h, c, bad, bs, sequence()); },
                           {"n_step_lstm", "ws[0][5] (2, 3)", "(2, 2)"});
  auto [gw, gb] = weights(1, 1, 2, 0.0);
  expect_error<ValueError>([&] { F::n_step_rnn(1, 0.0, h, gw, gb, sequence(), "sigmoid"); },
                           {"n_step_rnn", "unknown activation 'sigmoid'", "\"tanh\", \"relu\""});
  expect_error<ValueError>([&] { F::n_step_gru(1, 0.0, h, ws, bs, sequence()); },
                           {"n_step_gru", "needs 6 weights and 6 biases, got 8 and 8"});
}
