// The LSTM links (LSTM, StatelessLSTM, StatefulPeepholeLSTM, StatefulZoneoutLSTM): Chainer 7.8.1's
// outputs on the same inputs and parameters (recurrent_test_util.h builds them as the reference
// script did), gradients, states (reset, shrinking batches, snapshots), Chainer's .npz files and
// errors.
#include <cmath>
#include <string>
#include <vector>

#include "tests/unit/links/recurrent_test_util.h"

using namespace rensa;
namespace F = rensa::functions;
namespace L = rensa::links;
namespace I = rensa::initializers;
using rensa::test::expect_error;
using rensa::test::expect_param_grads;
using rensa::test::expect_values;
using rensa::test::set_params;
using rensa::test::sin_array;
using rensa::test::sin_var;
using Vars = std::vector<Variable>;

namespace {

constexpr int64_t kI = 3, kH = 2;

// The reference runs: steps of batch 3, 3, 2 with x_t = sin(0.37 k + 1 + 0.1 t).
Variable step_input(int64_t t, int64_t batch) {
  return sin_var({batch, kI}, 1.0 + 0.1 * static_cast<double>(t));
}

}  // namespace

TEST(LSTM, ParametersAndChainerInitialization) {
  L::LSTM l(kI, kH, {.seed = 3});
  const auto params = l.namedparams();
  ASSERT_EQ(params.size(), 3u);
  EXPECT_EQ(params[0].first, "/upward/W");
  EXPECT_EQ(params[1].first, "/upward/b");
  EXPECT_EQ(params[2].first, "/lateral/W");
  EXPECT_EQ(l.upward().W().shape(), (Shape{8, 3}));
  EXPECT_EQ(l.lateral().W().shape(), (Shape{8, 2}));
  EXPECT_TRUE(l.lateral().b().is_null());
  EXPECT_EQ(l.state_size(), kH);
  // Gates interleaved per unit (a, i, f, o): the forget gate's bias is 1, the others 0.
  EXPECT_EQ(l.upward().b().array().to_vector<double>(), (std::vector<double>{0, 0, 1, 0, 0, 0, 1, 0}));
  // Each gate block drawn by LeCunNormal from the link's generator: lateral then upward per gate.
  Generator g(3);
  for (int64_t k = 0; k < 4; ++k) {
    Array lw = Array::empty({kH, kH}), uw = Array::empty({kH, kI});
    I::LeCunNormal()(lw, g);
    I::LeCunNormal()(uw, g);
    EXPECT_TRUE(array_equal(l.lateral().W().array().slice(0, k * kH, (k + 1) * kH), lw)) << k;
    EXPECT_TRUE(array_equal(l.upward().W().array().slice(0, k * kH, (k + 1) * kH), uw)) << k;
  }
  L::LSTM custom(
      kI, kH,
      {.bias_init = std::make_shared<I::Constant>(0.5), .forget_bias_init = std::make_shared<I::Constant>(-2.0)});
  EXPECT_EQ(custom.upward().b().array().to_vector<double>(),
            (std::vector<double>{0.5, 0.5, -2, 0.5, 0.5, 0.5, -2, 0.5}));
  L::LSTM zeros(kI, kH, {.lateral_init = std::make_shared<I::Zero>(), .upward_init = std::make_shared<I::One>()});
  for (double w : zeros.lateral().W().array().to_vector<double>()) EXPECT_EQ(w, 0.0);
  for (double w : zeros.upward().W().array().to_vector<double>()) EXPECT_EQ(w, 1.0);
}

TEST(LSTM, LazyInSizeDrawsAsEager) {
  L::LSTM lazy(kH, {.seed = 5});
  EXPECT_EQ(lazy.in_size(), -1);
  EXPECT_TRUE(lazy.upward().W().array().is_null());
  const Variable W = lazy.upward().W();
  Variable x(sin_array({2, 3, 2}, 0.1).astype(Dtype::float32));
  const Variable y = lazy(x);
  EXPECT_EQ(lazy.in_size(), 6);
  EXPECT_TRUE(lazy.upward().W().is(W));
  L::LSTM eager(6, kH, {.seed = 5});
  rensa::test::expect_same_params(lazy, eager);
  EXPECT_TRUE(allclose(y.array(), eager(x).array()));
}

TEST(LSTM, MatchesChainer) {
  auto guard = using_config("dtype", Dtype::float64);
  L::LSTM l(kI, kH);
  set_params(l, 0.0);
  expect_values(l(step_input(0, 3)), {0.196331521871318, -0.274270796269559, 0.139083527943816, -0.128295964230178,
                                      -0.0805543461139896, 0.188000158286114});
  expect_values(l(step_input(1, 3)), {0.287931666292157, -0.457120354517962, 0.208990876279186, -0.164077252399367,
                                      -0.128947956736358, 0.2331763089604});
  // A smaller batch updates the first rows; the last row of h and c passes through.
  expect_values(l(step_input(2, 2)), {0.326220120635363, -0.572323317988161, 0.236949285246322, -0.13813650545891});
  expect_values(l.c(), {1.08145319316981, -0.876304278732536, 0.451115188453913, -0.206752079888703, -0.177026964069206,
                        0.705373158133147});
  expect_values(l.h(), {0.326220120635363, -0.572323317988161, 0.236949285246322, -0.13813650545891, -0.128947956736358,
                        0.2331763089604});
  // An empty batch changes nothing.
  const Array h = l.h().array();
  EXPECT_EQ(l(Variable(Array::zeros({0, kI}, Dtype::float64))).shape(), (Shape{0, kH}));
  EXPECT_TRUE(array_equal(l.h().array(), h));
}

TEST(LSTM, Gradients) {
  auto guard = using_config("dtype", Dtype::float64);
  L::LSTM l(kI, kH);
  set_params(l, 0.0);
  auto run = [&](const Vars& x) {
    l.reset_state();
    Vars ys;
    for (const Variable& xt : x) ys.push_back(l(xt));
    ys.push_back(l.c());
    ys.push_back(l.h());
    return ys;
  };
  rensa::testing::check_backward(run, {step_input(0, 3).array(), step_input(1, 3).array(), step_input(2, 2).array()});
  expect_param_grads(l, [&] {
    return rensa::test::weighted_sum(run({step_input(0, 3), step_input(1, 3), step_input(2, 2)}));
  });
}

TEST(LSTM, ResetAndSetState) {
  auto guard = using_config("dtype", Dtype::float64);
  L::LSTM l(kI, kH);
  set_params(l, 0.0);
  const Array first = l(step_input(0, 3)).array();
  EXPECT_FALSE(l.c().is_null());
  l.reset_state();
  EXPECT_TRUE(l.c().is_null());
  EXPECT_TRUE(l.h().is_null());
  EXPECT_TRUE(array_equal(l(step_input(0, 3)).array(), first));  // starts afresh
  // set_state to zeros differs from a reset only by the lateral term, which is zero for h = 0.
  l.set_state(Variable(Array::zeros({3, kH}, Dtype::float64)), Variable(Array::zeros({3, kH}, Dtype::float64)));
  EXPECT_TRUE(allclose(l(step_input(0, 3)).array(), first, 0, 1e-15));
  expect_error<ShapeError>(
      [&] {
        l.set_state(sin_var({3, kH}, 0), sin_var({2, kH}, 0));
      },
      {"LSTM::set_state", "(3, 2)", "(2, 2)"});
}

TEST(LSTM, StateInSnapshots) {
  auto guard = using_config("dtype", Dtype::float64);
  L::LSTM a(kI, kH);
  set_params(a, 0.0);
  a(step_input(0, 3));
  a(step_input(1, 2));
  const std::string path = rensa::test::temp_npz("lstm_state");
  serializers::save_npz(path, a);
  const auto stored = serializers::read_npz(path);
  EXPECT_EQ(stored.count("c"), 1u);
  EXPECT_EQ(stored.count("h"), 1u);
  L::LSTM b(kI, kH);
  serializers::load_npz(path, b);
  rensa::test::expect_same_params(a, b);
  EXPECT_TRUE(array_equal(b.c().array(), a.c().array()));
  EXPECT_TRUE(array_equal(b.h().array(), a.h().array()));
  EXPECT_TRUE(b.h().creator() == nullptr);  // loaded states carry no graph
  EXPECT_TRUE(array_equal(b(step_input(2, 2)).array(), a(step_input(2, 2)).array()));
  // A snapshot of a reset link has no state, and loading it clears the state.
  a.reset_state();
  serializers::save_npz(path, a);
  EXPECT_EQ(serializers::read_npz(path).count("h"), 0u);
  serializers::load_npz(path, b);
  EXPECT_TRUE(b.c().is_null());
  EXPECT_TRUE(b.h().is_null());
  // Inside a model, the states sit under the link's path.
  Chain model;
  model.add_link("rnn", a);
  a(step_input(0, 2));
  serializers::save_npz(path, model);
  const auto nested = serializers::read_npz(path);
  EXPECT_EQ(nested.count("rnn/c"), 1u);
  EXPECT_EQ(nested.count("rnn/upward/W"), 1u);
  a.reset_state();
  serializers::load_npz(path, model);
  EXPECT_EQ(a.h().shape(), (Shape{2, kH}));
  std::filesystem::remove(path);
  // States follow the link to another device.
  b(step_input(0, 2));
  b.to_device(Device::reference());
  EXPECT_EQ(b.h().device(), Device::reference());
  EXPECT_EQ(b.c().device(), Device::reference());
  EXPECT_EQ(b(step_input(1, 2).array().to(Device::reference())).device(), Device::reference());
}

TEST(LSTM, LoadsChainerNpz) {
  const std::string file = std::string(RENSA_TEST_FIXTURES_DIR) + "/chainer_lstm.npz";
  for (bool lazy : {false, true}) {
    auto l = lazy ? std::make_unique<L::LSTM>(kH) : std::make_unique<L::LSTM>(kI, kH);
    serializers::load_npz(file, *l);
    EXPECT_EQ(l->in_size(), kI);
    EXPECT_TRUE(l->h().is_null());  // Chainer saves no state
    L::LSTM want(kI, kH);
    set_params(want, 0.0);
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_TRUE(array_equal(l->namedparams()[i].second.array(), want.namedparams()[i].second.array()));
    }
    // Chainer's float32 output on the same input.
    expect_values((*l)(Variable(sin_array({2, kI}, 1.0).astype(Dtype::float32))),
                  {0.196331546, -0.274270833, 0.139083534, -0.128295958}, 1e-6);
  }
}

TEST(LSTM, Errors) {
  expect_error<ValueError>([] { L::LSTM(3, 0); }, {"LSTM", "out_size", "0"});
  expect_error<ValueError>([] { L::LSTM(-2, 4); }, {"LSTM", "in_size", "-2"});
  L::LSTM l(kI, kH);
  expect_error<ShapeError>([&] { l(Variable(Array::zeros({2, 4}))); }, {"LSTM", "(2, 4)", "in_size 3"});
  l(Variable(Array::zeros({2, 3})));
  expect_error<ShapeError>([&] { l(Variable(Array::zeros({3, 3}))); }, {"LSTM", "(3, 3)", "(2, 2)", "reset_state"});
  expect_error<ValueError>([&] { l(Variable()); }, {"LSTM", "null"});
  auto guard = using_config("dtype", Dtype::int32);
  expect_error<DtypeError>([] { L::LSTM(3, 2); }, {"LSTM", "int32"});
}

TEST(StatelessLSTM, MatchesChainerAndGradients) {
  auto guard = using_config("dtype", Dtype::float64);
  L::StatelessLSTM l(kI, kH);
  set_params(l, 0.0);
  auto [c, h] = l(sin_var({2, kH}, 0.3), sin_var({2, kH}, 0.4), sin_var({2, kI}, 0.5));
  expect_values(c, {0.786882044273133, 0.174520774747231, 1.35677570283447, 0.337411662065624});
  expect_values(h, {0.346941775290514, 0.115566951304056, 0.519824164096117, 0.211131434406817});
  auto [c0, h0] = l(Variable(), Variable(), sin_var({2, kI}, 0.5));
  expect_values(c0, {0.449918739259587, -0.265659341454884, 0.453803739670032, -0.32658493952667});
  expect_values(h0, {0.187398036966062, -0.195237903896545, 0.186673981402191, -0.250792394806287});
  auto f = [&](const Vars& in) {
    auto [cn, hn] = l(in[0], in[1], in[2]);
    return Vars{cn, hn};
  };
  const std::vector<Array> inputs{sin_array({2, kH}, 0.3), sin_array({2, kH}, 0.4), sin_array({2, kI}, 0.5)};
  rensa::testing::check_backward(f, inputs);
  expect_param_grads(l, [&] {
    return rensa::test::weighted_sum(f({Variable(inputs[0]), Variable(inputs[1]), Variable(inputs[2])}));
  });
  // Lazy in_size, from the flattened input.
  L::StatelessLSTM lazy(kH);
  EXPECT_EQ(lazy(Variable(), Variable(), Variable(Array::zeros({2, 2, 2}, Dtype::float64))).second.shape(),
            (Shape{2, kH}));
  EXPECT_EQ(lazy.in_size(), 4);
}

TEST(StatelessLSTM, Errors) {
  L::StatelessLSTM l(kI, kH);
  expect_error<ShapeError>(
      [&] {
        l(Variable(Array::zeros({3, 2})), Variable(), Variable(Array::zeros({2, 3})));
      },
      {"StatelessLSTM", "c (3, 2)", "x (2, 3)", "(2, 2)"});
  expect_error<ShapeError>(
      [&] {
        l(Variable(), Variable(Array::zeros({2, 5})), Variable(Array::zeros({2, 3})));
      },
      {"StatelessLSTM", "h (2, 5)"});
  expect_error<ShapeError>(
      [&] {
        l(Variable(), Variable(), Variable(Array::zeros({2, 7})));
      },
      {"StatelessLSTM", "(2, 7)", "in_size 3"});
}

TEST(StatefulPeepholeLSTM, MatchesChainerGradientsAndState) {
  auto guard = using_config("dtype", Dtype::float64);
  L::StatefulPeepholeLSTM l(kI, kH);
  const auto params = l.namedparams();
  ASSERT_EQ(params.size(), 6u);
  EXPECT_EQ(params[2].first, "/lateral/W");
  EXPECT_EQ(params[5].first, "/peep_o/W");
  EXPECT_EQ(l.peep_i().W().shape(), (Shape{kH, kH}));
  set_params(l, 0.2);
  expect_values(l(step_input(0, 2)), {0.208230568783203, -0.24115193863664, 0.236991427054947, -0.115470834856408});
  expect_values(l(step_input(1, 2)), {0.274337515128263, -0.418925652229049, 0.370005712691936, -0.16176173616393});
  expect_values(l.c(), {1.18765655587073, -0.653884720948033, 0.914708745968678, -0.245366604168249});
  auto run = [&](const Vars& x) {
    l.reset_state();
    Vars ys;
    for (const Variable& xt : x) ys.push_back(l(xt));
    ys.push_back(l.c());
    return ys;
  };
  rensa::testing::check_backward(run, {step_input(0, 2).array(), step_input(1, 2).array()});
  expect_param_grads(l, [&] { return rensa::test::weighted_sum(run({step_input(0, 2), step_input(1, 2)})); });
  // Snapshot round trip with the state.
  const std::string path = rensa::test::temp_npz("peephole");
  serializers::save_npz(path, l);
  L::StatefulPeepholeLSTM b(kI, kH);
  serializers::load_npz(path, b);
  std::filesystem::remove(path);
  EXPECT_TRUE(array_equal(b.c().array(), l.c().array()));
  EXPECT_TRUE(array_equal(b(step_input(2, 2)).array(), l(step_input(2, 2)).array()));
  expect_error<ShapeError>([&] { l(step_input(0, 1)); }, {"StatefulPeepholeLSTM", "h (2, 2)", "x (1, 3)"});
  l.reset_state();
  EXPECT_TRUE(l.h().is_null());
  EXPECT_EQ(l(step_input(0, 1)).shape(), (Shape{1, kH}));
}

TEST(StatefulZoneoutLSTM, MatchesChainerInTestModeAndZonesOut) {
  auto guard = using_config("dtype", Dtype::float64);
  L::StatefulZoneoutLSTM l(kI, kH);
  EXPECT_EQ(l.c_ratio(), 0.5);
  EXPECT_EQ(l.h_ratio(), 0.5);
  set_params(l, 0.4);
  {
    auto test_mode = using_config("train", false);
    expect_values(l(step_input(0, 2)), {0.207734997346547, -0.24763533800106, 0.222671467077056, -0.115801790540361});
    expect_values(l(step_input(1, 2)), {0.280606216798161, -0.407363620840978, 0.339487158453823, -0.150255597295108});
    expect_values(l.c(), {1.17715258720872, -0.651338703515146, 0.852945436032463, -0.244682295640286});
  }
  // Training with ratio 0 never keeps the previous state: the test-mode values.
  L::StatefulZoneoutLSTM none(kI, kH, {.c_ratio = 0.0, .h_ratio = 0.0});
  set_params(none, 0.4);
  none(step_input(0, 2));
  expect_values(none(step_input(1, 2)), {0.280606216798161, -0.407363620840978, 0.339487158453823, -0.150255597295108});
  // Ratio 1 always keeps it: the zero initial state stays.
  L::StatefulZoneoutLSTM all(kI, kH, {.c_ratio = 1.0, .h_ratio = 1.0});
  set_params(all, 0.4);
  all(step_input(0, 2));
  expect_values(all(step_input(1, 2)), {0, 0, 0, 0});
  expect_values(all.c(), {0, 0, 0, 0});
  // Gradients through two steps in training mode, the masks drawn alike on every run.
  Generator masks(9);
  L::StatefulZoneoutLSTM z(kI, kH, {.c_ratio = 0.3, .h_ratio = 0.6, .mask_generator = &masks});
  set_params(z, 0.4);
  auto run = [&](const Vars& x) {
    z.reset_state();
    masks.reseed(9);
    Vars ys;
    for (const Variable& xt : x) ys.push_back(z(xt));
    ys.push_back(z.c());
    return ys;
  };
  rensa::testing::check_backward(run, {step_input(0, 2).array(), step_input(1, 2).array()});
  expect_param_grads(z, [&] { return rensa::test::weighted_sum(run({step_input(0, 2), step_input(1, 2)})); });
}

TEST(StatefulZoneoutLSTM, StateAndErrors) {
  L::StatefulZoneoutLSTM l(kI, kH, {.seed = 1});
  l(Variable(Array::zeros({2, kI})));
  const std::string path = rensa::test::temp_npz("zoneout");
  serializers::save_npz(path, l);
  L::StatefulZoneoutLSTM b(kI, kH);
  serializers::load_npz(path, b);
  std::filesystem::remove(path);
  EXPECT_TRUE(array_equal(b.h().array(), l.h().array()));
  EXPECT_TRUE(array_equal(b.c().array(), l.c().array()));
  expect_error<ShapeError>([&] { l(Variable(Array::zeros({3, kI}))); }, {"StatefulZoneoutLSTM", "(2, 2)", "(3, 3)"});
  expect_error<ValueError>([] { L::StatefulZoneoutLSTM(3, 2, {.c_ratio = 1.5}); },
                           {"StatefulZoneoutLSTM", "c_ratio", "1.5"});
  expect_error<ShapeError>(
      [&] {
        l.set_state(Variable(Array::zeros({2, 3})), Variable(Array::zeros({2, 3})));
      },
      {"StatefulZoneoutLSTM::set_state", "(2, 3)"});
}
