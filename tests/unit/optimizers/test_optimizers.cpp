// Optimizers: each update against a hand-written float64 formula over several steps, the fused
// loops of the cpu backend against the reference backend, every optimizer on both backends, 16-bit parameters, state creation,
// hyperparameters and their errors, and training a least-squares problem.
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "src/backends/fused_update.h"
#include "rensa/links/link.h"
#include "rensa/optimizers/adagrad.h"
#include "rensa/optimizers/adam.h"
#include "rensa/optimizers/rmsprop.h"
#include "rensa/optimizers/sgd.h"
#include "tests/unit/optimizers/ported_optimizers.h"
#include "tests/unit/test_util.h"

namespace rensa {
namespace {

namespace F = functions;
namespace O = optimizers;
using test::expect_error;
using test::randn;
using test::randu;

using Vec = std::vector<double>;
// One naive step for one element: p, g, state (up to 3), t (the step count, from 1).
using NaiveStep = std::function<void(double& p, double g, double* s, int64_t t)>;

// A model with a parameter at the root and one in a child: paths "/W" and "/l1/b".
struct Model {
  Chain root;
  Link l1;
  Variable W, b;
  explicit Model(Dtype dtype = Dtype::float64, Device device = Device::cpu()) {
    W = root.add_param("W", randn({3, 4}, Dtype::float64, 11).astype(dtype).to(device));
    b = l1.add_param("b", randn({5}, Dtype::float64, 12).astype(dtype).to(device));
    root.add_link("l1", l1);
  }
  // Gradients of step `t`: fixed pseudo-random values per step and parameter.
  void set_grads(int64_t t) const {
    W.set_grad(Variable(randn(W.shape(), Dtype::float64, 100 + 2 * t).astype(W.dtype()).to(W.device())));
    b.set_grad(Variable(randn(b.shape(), Dtype::float64, 101 + 2 * t).astype(b.dtype()).to(b.device())));
  }
};

// Runs `steps` updates of `opt` on a float64 model and the naive formula on copies; they must agree.
void expect_matches_naive(O::Optimizer& opt, const NaiveStep& naive, int steps = 4, double rtol = 1e-12) {
  Model m;
  opt.setup(m.root);
  std::vector<Variable> params{m.W, m.b};
  std::vector<Vec> p, st;
  for (const auto& v : params) {
    p.push_back(v.array().to_vector<double>());
    st.push_back(Vec(v.size() * 3, 0.0));
  }
  for (int64_t t = 1; t <= steps; ++t) {
    m.set_grads(t);
    for (std::size_t k = 0; k < params.size(); ++k) {
      const Vec g = params[k].grad().array().to_vector<double>();
      for (std::size_t i = 0; i < g.size(); ++i) naive(p[k][i], g[i], &st[k][3 * i], t);
    }
    opt.update();
    EXPECT_EQ(opt.t(), t);
    for (std::size_t k = 0; k < params.size(); ++k) {
      const Vec got = params[k].array().to_vector<double>();
      for (std::size_t i = 0; i < got.size(); ++i) {
        ASSERT_NEAR(got[i], p[k][i], rtol * (1.0 + std::abs(p[k][i])))
            << "step " << t << " param " << k << " elem " << i;
      }
    }
  }
  EXPECT_EQ(opt.rule(m.W)->t, steps);
}

TEST(Optimizers, SgdMatchesNaive) {
  O::SGD opt(0.1);
  expect_matches_naive(opt, [](double& p, double g, double*, int64_t) { p -= 0.1 * g; });
}

TEST(Optimizers, MomentumSgdMatchesNaive) {
  O::MomentumSGD opt(0.05, 0.8);
  expect_matches_naive(opt, [](double& p, double g, double* s, int64_t) {
    s[0] = 0.8 * s[0] - 0.05 * g;
    p += s[0];
  });
}

TEST(Optimizers, NesterovAgMatchesNaive) {
  O::NesterovAG opt(0.05, 0.7);
  expect_matches_naive(opt, [](double& p, double g, double* s, int64_t) {
    s[0] = 0.7 * s[0] - 0.05 * g;
    p += 0.7 * 0.7 * s[0] - (1 + 0.7) * 0.05 * g;
  });
}

NaiveStep naive_adam(double alpha, double b1, double b2, double eps, double eta, double wd, bool amsgrad) {
  return [=](double& p, double g, double* s, int64_t t) {
    double& m = s[0];
    double& v = s[1];
    double& vhat = s[2];
    m += (1 - b1) * (g - m);
    v += (1 - b2) * (g * g - v);
    vhat = amsgrad ? std::max(vhat, v) : v;
    const double td = static_cast<double>(t);
    const double alpha_t = alpha * std::sqrt(1 - std::pow(b2, td)) / (1 - std::pow(b1, td));
    p -= eta * (alpha_t * m / (std::sqrt(vhat) + eps) + wd * p);
  };
}

TEST(Optimizers, AdamMatchesNaive) {
  O::Adam opt(0.01, 0.8, 0.9);
  expect_matches_naive(opt, naive_adam(0.01, 0.8, 0.9, 1e-8, 1.0, 0.0, false), 6);
}

TEST(Optimizers, AdamAmsgradWeightDecayEtaMatchNaive) {
  O::Adam opt(0.02, 0.7, 0.95, 1e-3, 0.5, 0.1, true);
  // Gradients change sign and size between steps, so vhat's maximum differs from v.
  expect_matches_naive(opt, naive_adam(0.02, 0.7, 0.95, 1e-3, 0.5, 0.1, true), 8);
  O::AdamW adamw(0.02, 0.9, 0.999, 1e-8, 1.0, 0.05);
  expect_matches_naive(adamw, naive_adam(0.02, 0.9, 0.999, 1e-8, 1.0, 0.05, false));
  O::AMSGrad ams(0.02);
  expect_matches_naive(ams, naive_adam(0.02, 0.9, 0.999, 1e-8, 1.0, 0.0, true), 6);
}

TEST(Optimizers, RmspropMatchesNaive) {
  O::RMSprop opt(0.02, 0.9, 1e-6);
  expect_matches_naive(opt, [](double& p, double g, double* s, int64_t) {
    s[0] = 0.9 * s[0] + (1 - 0.9) * g * g;
    p -= 0.02 * g / (std::sqrt(s[0]) + 1e-6);
  });
}

TEST(Optimizers, AdaGradMatchesNaive) {
  O::AdaGrad opt(0.1, 1e-6);
  expect_matches_naive(opt, [](double& p, double g, double* s, int64_t) {
    s[0] += g * g;
    p -= 0.1 * g / (std::sqrt(s[0]) + 1e-6);
  });
}

TEST(Optimizers, AdamLrIsBiasCorrectedAlpha) {
  O::Adam opt(0.003, 0.8, 0.95);
  Model m;
  opt.setup(m.root);
  expect_error<ValueError>([&] { (void)opt.lr(); }, {"Adam", "t = 0"});
  for (int64_t t = 1; t <= 3; ++t) {
    m.set_grads(t);
    opt.update();
    const double td = static_cast<double>(t);
    EXPECT_DOUBLE_EQ(opt.lr(), 0.003 * std::sqrt(1 - std::pow(0.95, td)) / (1 - std::pow(0.8, td)));
  }
  EXPECT_DOUBLE_EQ(O::Adam::alpha_t(0.001, 0.9, 0.999, 1), 0.001 * std::sqrt(0.001) / 0.1);
  O::SGD sgd(0.25);
  EXPECT_EQ(sgd.lr(), 0.25);
}

TEST(Optimizers, ChainerDefaults) {
  O::SGD sgd;
  EXPECT_EQ(sgd.hyperparams(), (std::map<std::string, double>{{"lr", 0.01}}));
  O::MomentumSGD msgd;
  EXPECT_EQ(msgd.hyperparams(), (std::map<std::string, double>{{"lr", 0.01}, {"momentum", 0.9}}));
  O::NesterovAG nag;
  EXPECT_EQ(nag.hyperparams(), (std::map<std::string, double>{{"lr", 0.01}, {"momentum", 0.9}}));
  O::Adam adam;
  EXPECT_EQ(adam.hyperparams(), (std::map<std::string, double>{{"alpha", 0.001},
                                                               {"beta1", 0.9},
                                                               {"beta2", 0.999},
                                                               {"eps", 1e-8},
                                                               {"eta", 1.0},
                                                               {"weight_decay_rate", 0.0},
                                                               {"amsgrad", 0.0},
                                                               {"adabound", 0.0},
                                                               {"final_lr", 0.1},
                                                               {"gamma", 1e-3}}));
  O::AMSGrad ams;
  EXPECT_EQ(ams.hyperparam("amsgrad"), 1.0);
  O::RMSprop rms;
  EXPECT_EQ(rms.hyperparams(), (std::map<std::string, double>{{"lr", 0.01}, {"alpha", 0.99}, {"eps", 1e-8}}));
  O::AdaGrad ada;
  EXPECT_EQ(ada.hyperparams(), (std::map<std::string, double>{{"lr", 0.001}, {"eps", 1e-8}}));
}

TEST(Optimizers, HyperparamGetSetAndErrors) {
  O::MomentumSGD opt(0.1, 0.5);
  EXPECT_TRUE(opt.has_hyperparam("momentum"));
  EXPECT_FALSE(opt.has_hyperparam("alpha"));
  opt.set_hyperparam("lr", 0.2);
  EXPECT_EQ(opt.hyperparam("lr"), 0.2);
  EXPECT_EQ(opt.lr(), 0.2);
  expect_error<ValueError>([&] { (void)opt.hyperparam("alpha"); }, {"MomentumSGD", "'alpha'", "lr, momentum"});
  expect_error<ValueError>([&] { opt.set_hyperparam("beta1", 0.1); }, {"MomentumSGD", "'beta1'", "lr, momentum"});
  O::Adam adam;
  expect_error<ValueError>([&] { (void)adam.hyperparam("lr"); }, {"Adam", "'lr'", "alpha", "weight_decay_rate"});

  // A changed hyperparameter takes effect at the next update.
  Model m;
  O::SGD sgd(0.1);
  sgd.setup(m.root);
  m.set_grads(1);
  const Vec w0 = m.W.array().to_vector<double>(), g = m.W.grad().array().to_vector<double>();
  sgd.set_hyperparam("lr", 0.5);
  sgd.update();
  const Vec w1 = m.W.array().to_vector<double>();
  for (std::size_t i = 0; i < w0.size(); ++i) EXPECT_DOUBLE_EQ(w1[i], w0[i] - 0.5 * g[i]);
}

TEST(Optimizers, StateCreatedAtFirstUpdateLikeTheParameter) {
  Model m(Dtype::float32);
  O::Adam adam(0.001, 0.9, 0.999, 1e-8, 1.0, 0.0, true);
  adam.setup(m.root);
  ASSERT_NE(adam.rule(m.W), nullptr);
  EXPECT_TRUE(adam.rule(m.W)->state().empty());
  EXPECT_EQ(adam.rule(Variable(Array::zeros({2}))), nullptr);
  m.set_grads(1);
  adam.update();
  const auto st = adam.rule(m.W)->state();
  ASSERT_EQ(st.size(), 3u);
  EXPECT_EQ(st[0].first, "m");
  EXPECT_EQ(st[1].first, "v");
  EXPECT_EQ(st[2].first, "vhat");
  for (const auto& [name, a] : st) {
    EXPECT_EQ(a.shape(), m.W.shape()) << name;
    EXPECT_EQ(a.dtype(), Dtype::float32) << name;
    EXPECT_EQ(a.device(), Device::cpu()) << name;
    EXPECT_FALSE(a.shares_storage(m.W.array())) << name;
  }
  // m after one step is (1 - beta1) * g.
  const Vec g = m.W.grad().array().to_vector<double>(), mv = st[0].second.to_vector<double>();
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(mv[i], 0.1 * g[i], 1e-7);

  O::SGD sgd;
  Model m2;
  sgd.setup(m2.root);
  m2.set_grads(1);
  sgd.update();
  EXPECT_TRUE(sgd.rule(m2.W)->state().empty());
}

TEST(Optimizers, SkipsParamsWithoutGradUninitializedAndDisabled) {
  Model m;
  Variable lazy = m.l1.add_param("lazy");  // uninitialized: no array yet
  O::MomentumSGD opt(0.1);
  opt.setup(m.root);
  m.set_grads(1);
  m.b.cleargrad();
  const Vec b0 = m.b.array().to_vector<double>();
  opt.update();
  EXPECT_EQ(m.b.array().to_vector<double>(), b0);
  EXPECT_EQ(opt.rule(m.b)->t, 0);
  EXPECT_TRUE(opt.rule(m.b)->state().empty());
  EXPECT_EQ(opt.rule(m.W)->t, 1);
  ASSERT_NE(opt.rule(lazy), nullptr);
  EXPECT_EQ(opt.rule(lazy)->t, 0);

  opt.rule(m.W)->enabled = false;
  const Vec w1 = m.W.array().to_vector<double>();
  m.set_grads(2);
  opt.update();
  EXPECT_EQ(m.W.array().to_vector<double>(), w1);
  EXPECT_EQ(opt.rule(m.W)->t, 1);
  EXPECT_EQ(opt.rule(m.b)->t, 1);
  EXPECT_EQ(opt.t(), 2);
}

TEST(Optimizers, UpdateErrors) {
  O::SGD sgd;
  expect_error<ValueError>([&] { sgd.update(); }, {"SGD::update", "setup"});
  expect_error<ValueError>([&] { sgd.update([] { return Variable(Array::zeros({})); }); }, {"SGD::update", "setup"});
  Model m;
  sgd.setup(m.root);
  expect_error<ValueError>([&] { sgd.update([] { return Variable(); }); }, {"SGD::update", "null"});
  EXPECT_EQ(sgd.t(), 0);
  EXPECT_EQ(sgd.epoch(), 0);
  sgd.new_epoch();
  EXPECT_EQ(sgd.epoch(), 1);
}

// The fused loops of the cpu and reference backends run a step alike: 0 to 3 state arrays, every
// floating dtype, the parallel path (40200 elements), strided arrays.
template <std::size_t S>
struct ChainStep {
  template <class C>
  struct Step {
    static constexpr std::size_t n_state = S;
    C rate;
    explicit Step(double rate) : rate(C(rate)) {}
    template <class T, class... State>
    void operator()(T& p, const T& g, State&... s) const {
      C acc = C(g);
      ((acc = acc * C(0.5) + C(s), s = T(acc * acc)), ...);
      p = T(C(p) - rate * acc);
    }
  };
};

template <std::size_t S>
std::vector<Array> run_loop(Device device, const std::vector<Array>& inputs, bool noncontig) {
  std::vector<Array> xs;
  for (const Array& a : inputs) {
    Array c = a.to(device).copy();
    xs.push_back(noncontig ? testing::make_noncontiguous(c) : c);
  }
  backends::fused_update<ChainStep<S>::template Step>(xs[0], xs[1], xs.data() + 2, "test", 0.1);
  std::vector<Array> out;
  for (std::size_t k = 0; k < 2 + S; ++k) {
    if (k != 1) out.push_back(xs[k].to(Device::cpu()));
  }
  return out;
}

template <std::size_t S>
void expect_loops_agree() {
  for (const Dtype dtype : {Dtype::float32, Dtype::float64, Dtype::float16, Dtype::bfloat16}) {
    for (const Shape& shape : {Shape{7, 5}, Shape{200, 201}}) {
      for (const bool noncontig : {false, true}) {
        std::vector<Array> inputs;
        for (std::size_t k = 0; k < 2 + S; ++k) inputs.push_back(randn(shape, Dtype::float64, 1 + k).astype(dtype));
        const auto yc = run_loop<S>(Device::cpu(), inputs, noncontig);
        const auto yr = run_loop<S>(Device::reference(), inputs, noncontig);
        for (std::size_t i = 0; i < yc.size(); ++i) {
          // One step of an elementwise formula in the compute type, rounded once per stored value.
          EXPECT_TRUE(test::close_within(yc[i], yr[i], test::rounded_once_tolerance(dtype)))
              << S << " states " << dtype << " " << shape << " noncontig " << noncontig << " output " << i;
        }
      }
    }
  }
}

TEST(FusedUpdate, CpuLoopMatchesReferenceLoop) {
  expect_loops_agree<0>();
  expect_loops_agree<1>();
  expect_loops_agree<2>();
  expect_loops_agree<3>();
}

TEST(FusedUpdate, Errors) {
  const Array i = Array::zeros({3}, Dtype::int32);
  expect_error<DtypeError>([&] { backends::fused_update<ChainStep<0>::Step>(i, i, nullptr, "MyOptimizer", 0.1); },
                           {"MyOptimizer", "floating", "int32"});
}

// Every optimizer runs its step on both backends alike, in every floating dtype.
TEST(Optimizers, EveryOptimizerOnReferenceMatchesCpu) {
  std::vector<std::function<std::unique_ptr<O::Optimizer>()>> makers = {
      [] { return std::make_unique<O::SGD>(0.1); },
      [] { return std::make_unique<O::MomentumSGD>(0.1, 0.9); },
      [] { return std::make_unique<O::NesterovAG>(0.1, 0.9); },
      [] { return std::make_unique<O::Adam>(0.01, 0.9, 0.999, 1e-8, 0.7, 0.01); },
      [] { return std::make_unique<O::Adam>(0.01, 0.9, 0.999, 1e-8, 1.0, 0.0, true); },
      [] { return std::make_unique<O::RMSprop>(0.01, 0.9); },
      [] { return std::make_unique<O::AdaGrad>(0.01); }};
  for (const auto& [name, make] : test::ported_optimizers()) makers.push_back(make);
  for (const Dtype dtype : {Dtype::float32, Dtype::float64, Dtype::float16, Dtype::bfloat16}) {
    for (std::size_t i = 0; i < makers.size(); ++i) {
      const auto& make = makers[i];
      Model mc(dtype), mr(dtype, Device::reference());
      auto oc = make(), orf = make();
      oc->setup(mc.root);
      orf->setup(mr.root);
      for (int64_t t = 1; t <= 3; ++t) {
        mc.set_grads(t);
        mr.set_grads(t);
        oc->update();
        orf->update();
      }
      // Three steps of an elementwise formula in the compute type, each rounded once per stored value.
      const test::Tolerance tol = test::chained_tolerance(test::rounded_once_tolerance(dtype), 3);
      EXPECT_TRUE(test::close_within(mc.W.array(), mr.W.array().to(Device::cpu()), tol))
          << "optimizer " << i << " " << dtype;
      EXPECT_TRUE(test::close_within(mc.b.array(), mr.b.array().to(Device::cpu()), tol))
          << "optimizer " << i << " " << dtype;
      const auto sc = oc->rule(mc.W)->state(), sr = orf->rule(mr.W)->state();
      ASSERT_EQ(sc.size(), sr.size()) << "optimizer " << i;
      for (std::size_t k = 0; k < sc.size(); ++k) {
        EXPECT_EQ(sr[k].second.device(), Device::reference());
        EXPECT_TRUE(test::close_within(sc[k].second, sr[k].second.to(Device::cpu()), tol))
            << "optimizer " << i << " " << sc[k].first;
      }
    }
  }
}

// Training through the reference backend gives the cpu backend's values.
TEST(Optimizers, ReferenceDeviceTrainsLikeCpu) {
  Model mc(Dtype::float32), mr(Dtype::float32, Device::reference());
  O::Adam oc(0.01, 0.9, 0.999, 1e-8, 1.0, 0.01, true), orf(0.01, 0.9, 0.999, 1e-8, 1.0, 0.01, true);
  oc.setup(mc.root);
  orf.setup(mr.root);
  for (int64_t t = 1; t <= 3; ++t) {
    mc.set_grads(t);
    mr.set_grads(t);
    oc.update();
    orf.update();
  }
  EXPECT_EQ(orf.rule(mr.W)->state()[0].second.device(), Device::reference());
  const test::Tolerance tol = test::chained_tolerance(test::reference_tolerance(Dtype::float32), 3);
  EXPECT_TRUE(test::close_within(mc.W.array(), mr.W.array().to(Device::cpu()), tol));
  EXPECT_TRUE(test::close_within(mc.b.array(), mr.b.array().to(Device::cpu()), tol));
}

// 16-bit parameters are updated in float32 arithmetic and rounded once per stored value: the
// result stays within a few 16-bit ulps of the float32 update of the same values.
TEST(Optimizers, SixteenBitParams) {
  for (const Dtype dtype : {Dtype::float16, Dtype::bfloat16}) {
    Model m16(dtype), m32(Dtype::float32);
    m32.W.array().assign(m16.W.array());
    m32.b.array().assign(m16.b.array());
    std::vector<std::pair<std::unique_ptr<O::Optimizer>, std::unique_ptr<O::Optimizer>>> opts;
    opts.emplace_back(std::make_unique<O::SGD>(0.1), std::make_unique<O::SGD>(0.1));
    opts.emplace_back(std::make_unique<O::MomentumSGD>(0.1), std::make_unique<O::MomentumSGD>(0.1));
    // Second moments small enough to underflow float16 (below 6e-8) would blow the step up, in
    // Chainer too: these betas keep them representable for the test's gradients.
    opts.emplace_back(std::make_unique<O::Adam>(0.05, 0.9, 0.9), std::make_unique<O::Adam>(0.05, 0.9, 0.9));
    opts.emplace_back(std::make_unique<O::RMSprop>(0.01, 0.5), std::make_unique<O::RMSprop>(0.01, 0.5));
    for (auto& [o16, o32] : opts) {
      o16->setup(m16.root);
      o32->setup(m32.root);
      m16.set_grads(1);
      m32.W.set_grad(Variable(m16.W.grad().array().astype(Dtype::float32)));
      m32.b.set_grad(Variable(m16.b.grad().array().astype(Dtype::float32)));
      o16->update();
      o32->update();
      EXPECT_EQ(m16.W.dtype(), dtype);
      for (const auto& [name, a] : o16->rule(m16.W)->state()) EXPECT_EQ(a.dtype(), dtype) << name;
      const double tol = dtype == Dtype::float16 ? 4e-3 : 2e-2;
      EXPECT_TRUE(allclose(m16.W.array().astype(Dtype::float32), m32.W.array(), tol, tol)) << dtype;
      EXPECT_TRUE(allclose(m16.b.array().astype(Dtype::float32), m32.b.array(), tol, tol)) << dtype;
      m32.W.array().assign(m16.W.array());
      m32.b.array().assign(m16.b.array());
    }
  }
}

TEST(Optimizers, RejectsMismatchedGradient) {
  Model m;
  O::SGD sgd;
  sgd.setup(m.root);
  // Variable::set_grad checks shapes and dtypes; a gradient on another device reaches the rule.
  m.W.set_grad(Variable(Array::zeros(m.W.shape(), Dtype::float64, Device::reference())));
  expect_error<DeviceError>([&] { sgd.update(); }, {"SGD", "(3, 4)", "reference"});
}

// update(loss_fn) clears gradients, backpropagates and updates: it fits least squares.
TEST(Optimizers, UpdateWithLossFnFitsLeastSquares) {
  const Array x = randn({32, 3}, Dtype::float32, 5);
  const Array w_true = Array::from_vector<float>({1.5f, -2.0f, 0.5f}, {3, 1});
  const Variable y = F::matmul(Variable(x), Variable(w_true));
  for (int which = 0; which < 3; ++which) {
    Link model;
    Variable w = model.add_param("w", Array::zeros({3, 1}));
    std::unique_ptr<O::Optimizer> opt;
    if (which == 0) opt = std::make_unique<O::MomentumSGD>(0.05);
    if (which == 1) opt = std::make_unique<O::Adam>(0.05);
    if (which == 2) opt = std::make_unique<O::RMSprop>(0.01);
    opt->setup(model);
    double loss = 0;
    for (int it = 0; it < 400; ++it) {
      // A stale gradient must not leak into the next step: update(loss_fn) clears it first.
      opt->update([&] {
        Variable l = F::mean_squared_error(F::matmul(Variable(x), w), y);
        loss = l.array().item<double>();
        return l;
      });
    }
    EXPECT_LT(loss, 1e-4) << "optimizer " << which;
    EXPECT_EQ(opt->t(), 400);
    EXPECT_TRUE(allclose(w.array(), w_true, 0.0, 2e-2)) << w.array();
  }
}

}  // namespace
}  // namespace rensa
