// LARS, GradientLARS, LAMB and RMSpropWarmup: several steps against whole-parameter float64
// formulas written out here, exclusion rules, hyperparameter errors, and an .npz round trip that
// continues bit for bit.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rensa/functions/basic_math.h"
#include "rensa/links/link.h"
#include "rensa/optimizers/lamb.h"
#include "rensa/optimizers/lars.h"
#include "rensa/optimizers/rmsprop_warmup.h"
#include "rensa/optimizers/sgd.h"
#include "rensa/serializers/npz.h"
#include "tests/unit/test_util.h"

namespace rensa {
namespace {

namespace O = optimizers;
using test::expect_error;
using test::randn;

using Vec = std::vector<double>;

// A weight "W" (3, 4) at the root and a bias "b" (5) in child l1: b is what the default exclusion
// (ndim <= 1) leaves out.
struct Model {
  Chain root;
  Link l1;
  Variable W, b;
  explicit Model(Dtype dtype = Dtype::float64, Device device = Device::cpu()) {
    W = root.add_param("W", randn({3, 4}, Dtype::float64, 21).astype(dtype).to(device));
    b = l1.add_param("b", randn({5}, Dtype::float64, 22).astype(dtype).to(device));
    root.add_link("l1", l1);
  }
  // Step t's gradients; the scale differs per parameter, so the norm ratios matter.
  void set_grads(int64_t t) const {
    const auto scaled = [](const Variable& p, uint64_t seed, double scale) {
      const Array g = functions::mul(Variable(randn(p.shape(), Dtype::float64, seed)), scale).array();
      return Variable(g.astype(p.dtype()).to(p.device()));
    };
    W.set_grad(scaled(W, static_cast<uint64_t>(200 + 2 * t), 0.1));
    b.set_grad(scaled(b, static_cast<uint64_t>(201 + 2 * t), 3.0));
  }
  std::vector<Variable> params() const { return {W, b}; }
};

double norm(const Vec& x) {
  double s = 0.0;
  for (double v : x) s += v * v;
  return std::sqrt(s);
}

// One naive step of a whole parameter: p, g, its state vectors, t (from 1), excluded.
using NaiveStep = std::function<void(Vec& p, const Vec& g, std::vector<Vec>& state, int64_t t, bool excluded)>;

// Runs `steps` updates of `opt` and of `naive` (on float64 copies); they must agree. `excluded`
// says which of W, b the optimizer is expected to exclude.
void expect_matches_naive(O::Optimizer& opt, const NaiveStep& naive, std::vector<bool> excluded, int steps = 5,
                          double rtol = 1e-12) {
  Model m;
  opt.setup(m.root);
  const auto params = m.params();
  std::vector<Vec> p;
  std::vector<std::vector<Vec>> st;
  for (const auto& v : params) {
    p.push_back(v.array().to_vector<double>());
    st.emplace_back(3, Vec(static_cast<std::size_t>(v.size()), 0.0));
  }
  for (int64_t t = 1; t <= steps; ++t) {
    m.set_grads(t);
    for (std::size_t k = 0; k < params.size(); ++k) {
      naive(p[k], params[k].grad().array().to_vector<double>(), st[k], t, excluded[k]);
    }
    opt.update();
    for (std::size_t k = 0; k < params.size(); ++k) {
      const Vec got = params[k].array().to_vector<double>();
      for (std::size_t i = 0; i < got.size(); ++i) {
        ASSERT_NEAR(got[i], p[k][i], rtol * (1.0 + std::abs(p[k][i]))) << "step " << t << " param " << k << " elem " << i;
      }
    }
  }
}

// ---- LARS -----------------------------------------------------------------------------------------

NaiveStep naive_lars(double lr, double mom, double wd, double eta, double eps) {
  return [=](Vec& p, const Vec& g, std::vector<Vec>& s, int64_t, bool excluded) {
    const double wn = norm(p), gn = norm(g);
    const double local = excluded || wn == 0.0 || gn == 0.0 ? 1.0 : eta * wn / (gn + wd * wn + eps);
    const double decay = excluded ? 0.0 : wd;
    for (std::size_t i = 0; i < p.size(); ++i) {
      s[0][i] = mom * s[0][i] - lr * local * (g[i] + decay * p[i]);
      p[i] += s[0][i];
    }
  };
}

TEST(LARS, MatchesNaive) {
  O::LARS lars(0.5, 0.9, 1e-3, 0.01, 1e-9);  // default exclusion: b
  expect_matches_naive(lars, naive_lars(0.5, 0.9, 1e-3, 0.01, 1e-9), {false, true});
  O::LARS all(0.5, 0.8, 0.0, 0.02, 1e-6, nullptr);  // nothing excluded
  expect_matches_naive(all, naive_lars(0.5, 0.8, 0.0, 0.02, 1e-6), {false, false});
  // A rule by name: exclude the weight, adapt the bias.
  O::LARS by_name(0.5, 0.9, 1e-2, 0.01);
  by_name.set_exclude([](const Variable& v) { return v.name() == "W"; });
  expect_matches_naive(by_name, naive_lars(0.5, 0.9, 1e-2, 0.01, 1e-9), {true, false});
}

TEST(LARS, DefaultsAndLocalRate) {
  O::LARS lars;
  EXPECT_EQ(lars.hyperparam("lr"), 1.0);
  EXPECT_EQ(lars.hyperparam("momentum"), 0.9);
  EXPECT_EQ(lars.hyperparam("weight_decay_rate"), 0.0);
  EXPECT_EQ(lars.hyperparam("eta"), 0.001);
  EXPECT_EQ(lars.hyperparam("eps"), 1e-9);
  Model m;
  lars.setup(m.root);
  m.set_grads(1);
  const double wn = norm(m.W.array().to_vector<double>()), gn = norm(m.W.grad().array().to_vector<double>());
  EXPECT_NEAR(lars.local_rate(m.W), 0.001 * wn / (gn + 1e-9), 1e-15);
  EXPECT_EQ(lars.local_rate(m.b), 1.0);  // excluded
  // A zero weight has no ratio: it takes the plain step.
  m.W.array().fill(0.0);
  EXPECT_EQ(lars.local_rate(m.W), 1.0);
  m.W.cleargrad();
  expect_error<ValueError>([&] { lars.local_rate(m.W); }, {"LARS", "gradient"});
}

// An excluded parameter takes MomentumSGD's step exactly.
TEST(LARS, ExcludedParameterIsMomentumSgd) {
  Model ma(Dtype::float32), mb(Dtype::float32);
  O::LARS lars(0.1, 0.9, 0.01, 0.001, 1e-9, [](const Variable&) { return true; });
  O::MomentumSGD sgd(0.1, 0.9);
  lars.setup(ma.root);
  sgd.setup(mb.root);
  for (int64_t t = 1; t <= 3; ++t) {
    ma.set_grads(t);
    mb.set_grads(t);
    lars.update();
    sgd.update();
  }
  EXPECT_TRUE(array_equal(ma.W.array(), mb.W.array()));
  EXPECT_TRUE(array_equal(ma.b.array(), mb.b.array()));
}

TEST(LARS, Errors) {
  expect_error<ValueError>([] { O::LARS(-0.1); }, {"LARS", "lr", "-0.1"});
  expect_error<ValueError>([] { O::LARS(0.1, 1.0); }, {"LARS", "momentum", "1"});
  expect_error<ValueError>([] { O::LARS(0.1, 0.9, -1e-4); }, {"LARS", "weight_decay_rate", "-0.0001"});
  expect_error<ValueError>([] { O::LARS(0.1, 0.9, 0.0, -0.5); }, {"LARS", "eta", "-0.5"});
  expect_error<ValueError>([] { O::LARS(0.1, 0.9, 0.0, 0.001, std::nan("")); }, {"LARS", "eps", "nan"});
  // A value set later is checked at the update.
  Model m;
  O::LARS lars;
  lars.setup(m.root);
  lars.set_hyperparam("eta", -2.0);
  m.set_grads(1);
  expect_error<ValueError>([&] { lars.update(); }, {"LARS", "eta", "-2"});
}

// ---- GradientLARS ---------------------------------------------------------------------------------

// Chainer's hook: g = (g + wd * p) * rate, rate = ||p|| / (eps + ||g|| + wd ||p||) above the threshold.
NaiveStep naive_sgd_with_gradient_lars(double lr, double threshold, double wd, double eps) {
  return [=](Vec& p, const Vec& g, std::vector<Vec>&, int64_t, bool excluded) {
    const double pn = norm(p), gn = norm(g);
    const double rate = pn > threshold ? pn / (eps + gn + wd * pn) : 1.0;
    for (std::size_t i = 0; i < p.size(); ++i) {
      const double gi = excluded ? g[i] : (g[i] + wd * p[i]) * rate;
      p[i] -= lr * gi;
    }
  };
}

TEST(GradientLARS, MatchesChainersFormula) {
  O::SGD sgd(0.01);
  sgd.add_hook(std::make_shared<O::GradientLARS>(1e-2, 1e-3, 1e-9));
  expect_matches_naive(sgd, naive_sgd_with_gradient_lars(0.01, 1e-2, 1e-3, 1e-9), {false, false});
  // Below the threshold the rate is 1 (the weight decay still applies), as in Chainer.
  O::SGD small(0.01);
  small.add_hook(std::make_shared<O::GradientLARS>(1e6, 1e-3, 1e-9));
  expect_matches_naive(small, naive_sgd_with_gradient_lars(0.01, 1e6, 1e-3, 1e-9), {false, false});
  // With the default exclusion, the bias's gradient is left alone.
  O::SGD excl(0.01);
  excl.add_hook(std::make_shared<O::GradientLARS>(1e-2, 1e-3, 1e-9, O::exclude_bias_and_normalization));
  expect_matches_naive(excl, naive_sgd_with_gradient_lars(0.01, 1e-2, 1e-3, 1e-9), {false, true});
}

// MomentumSGD with the hook is LARS with eta 1 (lr is Chainer's lr * eta), away from zero norms.
TEST(GradientLARS, WithMomentumSgdIsLarsAtEtaOne) {
  Model ma, mb;
  O::MomentumSGD sgd(0.05, 0.9);
  sgd.add_hook(std::make_shared<O::GradientLARS>(0.0, 1e-3, 1e-9));
  O::LARS lars(0.05, 0.9, 1e-3, 1.0, 1e-9, nullptr);
  sgd.setup(ma.root);
  lars.setup(mb.root);
  for (int64_t t = 1; t <= 4; ++t) {
    ma.set_grads(t);
    mb.set_grads(t);
    sgd.update();
    lars.update();
  }
  EXPECT_TRUE(allclose(ma.W.array(), mb.W.array(), 1e-12, 1e-14));
  EXPECT_TRUE(allclose(ma.b.array(), mb.b.array(), 1e-12, 1e-14));
}

TEST(GradientLARS, Errors) {
  expect_error<ValueError>([] { O::GradientLARS(-1.0); }, {"GradientLARS", "threshold", "-1"});
  expect_error<ValueError>([] { O::GradientLARS(0.01, -0.5); }, {"GradientLARS", "weight_decay", "-0.5"});
  expect_error<ValueError>([] { O::GradientLARS(0.01, 0.0, -1e-9); }, {"GradientLARS", "eps", "-1e-09"});
  O::SGD sgd;
  O::GradientLARS hook;
  expect_error<ValueError>([&] { hook(sgd); }, {"GradientLARS", "setup"});
}

// ---- LAMB -----------------------------------------------------------------------------------------

NaiveStep naive_lamb(double lr, double b1, double b2, double eps, double wd) {
  return [=](Vec& p, const Vec& g, std::vector<Vec>& s, int64_t t, bool excluded) {
    const double c1 = 1.0 - std::pow(b1, static_cast<double>(t)), c2 = 1.0 - std::pow(b2, static_cast<double>(t));
    Vec r(p.size());
    for (std::size_t i = 0; i < p.size(); ++i) {
      s[0][i] = b1 * s[0][i] + (1 - b1) * g[i];
      s[1][i] = b2 * s[1][i] + (1 - b2) * g[i] * g[i];
      r[i] = (s[0][i] / c1) / (std::sqrt(s[1][i] / c2) + eps) + (excluded ? 0.0 : wd) * p[i];
    }
    const double wn = norm(p), rn = norm(r);
    const double ratio = excluded || wn == 0.0 || rn == 0.0 ? 1.0 : wn / rn;
    for (std::size_t i = 0; i < p.size(); ++i) p[i] -= lr * ratio * r[i];
  };
}

TEST(LAMB, MatchesNaive) {
  O::LAMB lamb(0.01, 0.9, 0.999, 1e-6, 0.01);
  expect_matches_naive(lamb, naive_lamb(0.01, 0.9, 0.999, 1e-6, 0.01), {false, true});
  O::LAMB all(0.02, 0.8, 0.99, 1e-8, 0.0, nullptr);
  expect_matches_naive(all, naive_lamb(0.02, 0.8, 0.99, 1e-8, 0.0), {false, false});
}

TEST(LAMB, DefaultsStateAndErrors) {
  O::LAMB lamb;
  EXPECT_EQ(lamb.hyperparam("lr"), 0.001);
  EXPECT_EQ(lamb.hyperparam("beta1"), 0.9);
  EXPECT_EQ(lamb.hyperparam("beta2"), 0.999);
  EXPECT_EQ(lamb.hyperparam("eps"), 1e-6);
  EXPECT_EQ(lamb.hyperparam("weight_decay_rate"), 0.0);
  Model m(Dtype::float32);
  lamb.setup(m.root);
  m.set_grads(1);
  lamb.update();
  const auto state = lamb.rule(m.W)->state();
  ASSERT_EQ(state.size(), 2u);
  EXPECT_EQ(state[0].first, "m");
  EXPECT_EQ(state[1].first, "v");
  EXPECT_EQ(state[0].second.dtype(), Dtype::float32);
  expect_error<ValueError>([] { O::LAMB(-1.0); }, {"LAMB", "lr", "-1"});
  expect_error<ValueError>([] { O::LAMB(0.001, 1.5); }, {"LAMB", "beta1", "1.5"});
  expect_error<ValueError>([] { O::LAMB(0.001, 0.9, -0.1); }, {"LAMB", "beta2", "-0.1"});
  expect_error<ValueError>([] { O::LAMB(0.001, 0.9, 0.999, -1.0); }, {"LAMB", "eps", "-1"});
  expect_error<ValueError>([] { O::LAMB(0.001, 0.9, 0.999, 1e-6, -0.01); }, {"LAMB", "weight_decay_rate", "-0.01"});
  lamb.set_hyperparam("beta2", 1.0);
  m.set_grads(2);
  expect_error<ValueError>([&] { lamb.update(); }, {"LAMB", "beta2", "1"});
}

// ---- RMSpropWarmup --------------------------------------------------------------------------------

NaiveStep naive_rmsprop_warmup(double lr, double begin, double end, double scale, double mom, double alpha,
                               double eps) {
  return [=](Vec& p, const Vec& g, std::vector<Vec>& s, int64_t t, bool) {
    const double td = static_cast<double>(t);
    const double sgd = td >= end ? 1.0 : td <= begin ? 0.0 : (td - begin) / (end - begin);
    for (std::size_t i = 0; i < p.size(); ++i) {
      s[1][i] = alpha * s[1][i] + (1 - alpha) * g[i] * g[i];
      const double coef = sgd + (1 - sgd) * scale / (std::sqrt(s[1][i]) + eps);
      s[0][i] = mom * s[0][i] - lr * coef * g[i];
      p[i] += s[0][i];
    }
  };
}

TEST(RMSpropWarmup, MatchesNaive) {
  // Two steps of RMSprop, a transition over steps 2..6, then momentum SGD.
  O::RMSpropWarmup opt(0.1, 6, 2, 0.05, 0.9, 0.9, 1e-8);
  expect_matches_naive(opt, naive_rmsprop_warmup(0.1, 2, 6, 0.05, 0.9, 0.9, 1e-8), {false, false}, 8);
}

TEST(RMSpropWarmup, TransitionAndDefaults) {
  O::RMSpropWarmup opt(0.1, 10, 2);
  EXPECT_EQ(opt.transition(1), 0.0);
  EXPECT_EQ(opt.transition(2), 0.0);
  EXPECT_EQ(opt.transition(6), 0.5);
  EXPECT_EQ(opt.transition(10), 1.0);
  EXPECT_EQ(opt.transition(50), 1.0);
  O::RMSpropWarmup d;
  EXPECT_EQ(d.hyperparam("lr"), 0.1);
  EXPECT_EQ(d.hyperparam("transition_begin"), 0.0);
  EXPECT_EQ(d.hyperparam("transition_end"), 1000.0);
  EXPECT_EQ(d.hyperparam("rmsprop_scale"), 0.01);
  EXPECT_EQ(d.hyperparam("momentum"), 0.9);
  EXPECT_EQ(d.hyperparam("alpha"), 0.99);
  EXPECT_EQ(d.hyperparam("eps"), 1e-8);
}

// After the transition, the parameters move exactly as MomentumSGD moves them.
TEST(RMSpropWarmup, EndsAsMomentumSgd) {
  Model ma(Dtype::float32), mb(Dtype::float32);
  O::RMSpropWarmup opt(0.1, 0);  // transition_end 0: momentum SGD from the first step
  O::MomentumSGD sgd(0.1, 0.9);
  opt.setup(ma.root);
  sgd.setup(mb.root);
  for (int64_t t = 1; t <= 3; ++t) {
    ma.set_grads(t);
    mb.set_grads(t);
    opt.update();
    sgd.update();
  }
  EXPECT_TRUE(array_equal(ma.W.array(), mb.W.array()));
  EXPECT_TRUE(array_equal(ma.b.array(), mb.b.array()));
}

TEST(RMSpropWarmup, Errors) {
  expect_error<ValueError>([] { O::RMSpropWarmup(-0.1); }, {"RMSpropWarmup", "lr", "-0.1"});
  expect_error<ValueError>([] { O::RMSpropWarmup(0.1, 5, 10); },
                           {"RMSpropWarmup", "transition_end", "5", "transition_begin", "10"});
  expect_error<ValueError>([] { O::RMSpropWarmup(0.1, 10, -1); }, {"RMSpropWarmup", "transition_begin", "-1"});
  expect_error<ValueError>([] { O::RMSpropWarmup(0.1, 10, 0, -0.01); }, {"RMSpropWarmup", "rmsprop_scale", "-0.01"});
  expect_error<ValueError>([] { O::RMSpropWarmup(0.1, 10, 0, 0.01, 1.0); }, {"RMSpropWarmup", "momentum", "1"});
  expect_error<ValueError>([] { O::RMSpropWarmup(0.1, 10, 0, 0.01, 0.9, -0.5); }, {"RMSpropWarmup", "alpha", "-0.5"});
}

// ---- All three: backends, 16-bit parameters, .npz round trip ------------------------------------

std::vector<std::pair<std::string, std::function<std::unique_ptr<O::Optimizer>()>>> makers() {
  return {{"LARS", [] { return std::make_unique<O::LARS>(0.5, 0.9, 1e-3, 0.01); }},
          {"LAMB", [] { return std::make_unique<O::LAMB>(0.01, 0.9, 0.999, 1e-6, 0.01); }},
          {"RMSpropWarmup", [] { return std::make_unique<O::RMSpropWarmup>(0.1, 4, 1, 0.05); }}};
}

TEST(LargeBatchOptimizers, ReferenceMatchesCpu) {
  for (const Dtype dtype : {Dtype::float32, Dtype::float64, Dtype::bfloat16}) {
    for (const auto& [name, make] : makers()) {
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
      // Three steps of an elementwise formula, rounded once per stored value, whose trust ratio (LARS,
      // LAMB) divides norms of the parameter and its update: sums over the parameter's elements.
      EXPECT_TRUE(test::close_within(mc.W.array(), mr.W.array().to(Device::cpu()),
                                     test::chained_tolerance(test::rounded_once_tolerance(dtype, mc.W.size()), 3)))
          << name << " " << dtype;
      EXPECT_TRUE(test::close_within(mc.b.array(), mr.b.array().to(Device::cpu()),
                                     test::chained_tolerance(test::rounded_once_tolerance(dtype, mc.b.size()), 3)))
          << name << " " << dtype;
      EXPECT_EQ(mc.W.dtype(), dtype);
    }
  }
}

// Save mid-run (optimizer state and hyperparameters) to .npz, load into a fresh optimizer over a
// copy of the model, and continue: every later step is bit for bit the uninterrupted one's.
TEST(LargeBatchOptimizers, NpzRoundTripContinuesExactly) {
  for (const auto& [name, make] : makers()) {
    Model ma(Dtype::float32), mb(Dtype::float32);
    auto a = make(), b = make();
    a->setup(ma.root);
    b->setup(mb.root);
    for (int64_t t = 1; t <= 3; ++t) {
      ma.set_grads(t);
      a->update();
    }
    a->set_hyperparam("lr", 0.25);  // a scheduled value: it must travel with the snapshot
    const std::string path = ::testing::TempDir() + "/rensa_large_batch_" + name + ".npz";
    serializers::save_npz(path, *a);
    serializers::load_npz(path, *b);
    std::remove(path.c_str());
    mb.W.array().assign(ma.W.array());
    mb.b.array().assign(ma.b.array());
    EXPECT_EQ(b->t(), 3) << name;
    EXPECT_EQ(b->hyperparam("lr"), 0.25) << name;
    for (int64_t t = 4; t <= 6; ++t) {
      ma.set_grads(t);
      mb.set_grads(t);
      a->update();
      b->update();
      EXPECT_TRUE(array_equal(ma.W.array(), mb.W.array())) << name << " step " << t;
      EXPECT_TRUE(array_equal(ma.b.array(), mb.b.array())) << name << " step " << t;
    }
    for (const auto& [pa, pb] : {std::pair{ma.W, mb.W}, std::pair{ma.b, mb.b}}) {
      const auto sa = a->rule(pa)->state(), sb = b->rule(pb)->state();
      ASSERT_EQ(sa.size(), sb.size()) << name;
      for (std::size_t i = 0; i < sa.size(); ++i) EXPECT_TRUE(array_equal(sa[i].second, sb[i].second)) << name;
    }
  }
}

}  // namespace
}  // namespace rensa
