// Optimizer serialization: the stored keys, and a save/load round trip that reproduces the next
// update bit for bit, through memory and through an .npz file.
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rensa/links/link.h"
#include "rensa/optimizers/adagrad.h"
#include "rensa/optimizers/adam.h"
#include "rensa/optimizers/rmsprop.h"
#include "rensa/optimizers/sgd.h"
#include "rensa/serializers/npz.h"
#include "tests/unit/optimizers/ported_optimizers.h"
#include "tests/unit/test_util.h"

namespace rensa {
namespace {

namespace O = optimizers;
namespace S = serializers;
using test::expect_error;
using test::randn;

struct Model {
  Chain root;
  Link l1;
  Variable W, b;
  explicit Model(Device device = Device::cpu()) {
    W = root.add_param("W", randn({3, 4}, Dtype::float32, 11).to(device));
    b = l1.add_param("b", randn({5}, Dtype::float32, 12).to(device));
    root.add_link("l1", l1);
  }
  void set_grads(int64_t t) const {
    W.set_grad(Variable(randn(W.shape(), Dtype::float32, 100 + 2 * t).to(W.device())));
    b.set_grad(Variable(randn(b.shape(), Dtype::float32, 101 + 2 * t).to(b.device())));
  }
  void copy_values_from(const Model& other) const {
    W.array().assign(other.W.array().to(W.device()));
    b.array().assign(other.b.array().to(b.device()));
  }
};

// The saved values, copied: DictionarySerializer keeps handles to the live arrays.
std::map<std::string, Array> save(O::Optimizer& opt) {
  S::DictionarySerializer s;
  opt.serialize(s);
  std::map<std::string, Array> out;
  for (const auto& [k, v] : s.target()) out[k] = v.copy();
  return out;
}

void load(O::Optimizer& opt, std::map<std::string, Array> values, bool strict = true) {
  S::DictionaryDeserializer d(std::move(values), "memory", strict);
  opt.serialize(d);
}

using Factory = std::function<std::unique_ptr<O::Optimizer>()>;

std::vector<std::pair<std::string, Factory>> factories() {
  std::vector<std::pair<std::string, Factory>> out = {
      {"SGD", [] { return std::make_unique<O::SGD>(0.1); }},
      {"MomentumSGD", [] { return std::make_unique<O::MomentumSGD>(0.1, 0.8); }},
      {"NesterovAG", [] { return std::make_unique<O::NesterovAG>(0.1, 0.8); }},
      {"Adam", [] { return std::make_unique<O::Adam>(0.01, 0.9, 0.99, 1e-8, 1.0, 0.01, false); }},
      {"AdamAmsgrad", [] { return std::make_unique<O::Adam>(0.01, 0.9, 0.99, 1e-8, 0.9, 0.0, true); }},
      {"RMSprop", [] { return std::make_unique<O::RMSprop>(0.01, 0.9); }},
      {"AdaGrad", [] { return std::make_unique<O::AdaGrad>(0.1); }},
  };
  for (auto& f : test::ported_optimizers()) out.push_back(std::move(f));
  return out;
}

void expect_same_state(O::Optimizer& a, const Model& ma, O::Optimizer& b, const Model& mb, const std::string& what) {
  EXPECT_TRUE(array_equal(ma.W.array(), mb.W.array())) << what;
  EXPECT_TRUE(array_equal(ma.b.array(), mb.b.array())) << what;
  for (const auto& [pa, pb] : {std::pair{ma.W, mb.W}, std::pair{ma.b, mb.b}}) {
    const auto sa = a.rule(pa)->state(), sb = b.rule(pb)->state();
    ASSERT_EQ(sa.size(), sb.size()) << what;
    for (std::size_t i = 0; i < sa.size(); ++i) {
      EXPECT_EQ(sa[i].first, sb[i].first) << what;
      EXPECT_TRUE(array_equal(sa[i].second, sb[i].second.to(sa[i].second.device()))) << what << " " << sa[i].first;
    }
    EXPECT_EQ(a.rule(pa)->t, b.rule(pb)->t) << what;
  }
}

TEST(OptimizerSerialize, RoundTripReproducesNextUpdateBitForBit) {
  for (const auto& [name, make] : factories()) {
    Model ma, mb;
    auto a = make(), b = make();
    a->setup(ma.root);
    b->setup(mb.root);
    for (int64_t t = 1; t <= 3; ++t) {
      ma.set_grads(t);
      a->update();
    }
    a->new_epoch();
    mb.copy_values_from(ma);
    load(*b, save(*a));
    EXPECT_EQ(b->t(), 3) << name;
    EXPECT_EQ(b->epoch(), 1) << name;
    expect_same_state(*a, ma, *b, mb, name + " after load");
    for (int64_t t = 4; t <= 5; ++t) {
      ma.set_grads(t);
      mb.set_grads(t);
      a->update();
      b->update();
      expect_same_state(*a, ma, *b, mb, name + " step " + std::to_string(t));
    }
  }
}

TEST(OptimizerSerialize, KeysFollowChainer) {
  Model m;
  O::Adam adam(0.001, 0.9, 0.999, 1e-8, 1.0, 0.0, true);
  adam.setup(m.root);
  m.set_grads(1);
  adam.update();
  std::vector<std::string> keys;
  for (const auto& [k, v] : save(adam)) keys.push_back(k);
  const std::vector<std::string> expected{"W/m",
                                          "W/t",
                                          "W/v",
                                          "W/vhat",
                                          "epoch",
                                          "hyperparam/adabound",
                                          "hyperparam/alpha",
                                          "hyperparam/amsgrad",
                                          "hyperparam/beta1",
                                          "hyperparam/beta2",
                                          "hyperparam/eps",
                                          "hyperparam/eta",
                                          "hyperparam/final_lr",
                                          "hyperparam/gamma",
                                          "hyperparam/weight_decay_rate",
                                          "l1/b/m",
                                          "l1/b/t",
                                          "l1/b/v",
                                          "l1/b/vhat",
                                          "t"};
  EXPECT_EQ(keys, expected);
  const auto saved = save(adam);
  EXPECT_EQ(saved.at("t").item<int64_t>(), 1);
  EXPECT_EQ(saved.at("l1/b/t").item<int64_t>(), 1);
  EXPECT_EQ(saved.at("W/m").shape(), (Shape{3, 4}));

  // Before any update a rule has no state, only its step count.
  Model m2;
  O::MomentumSGD msgd;
  msgd.setup(m2.root);
  std::vector<std::string> keys2;
  for (const auto& [k, v] : save(msgd)) keys2.push_back(k);
  EXPECT_EQ(keys2, (std::vector<std::string>{"W/t", "epoch", "hyperparam/lr", "hyperparam/momentum", "l1/b/t", "t"}));
}

TEST(OptimizerSerialize, LoadRestoresHyperparamsAndResetsState) {
  Model m;
  O::MomentumSGD a(0.3, 0.7);
  a.setup(m.root);
  const auto fresh = save(a);
  m.set_grads(1);
  a.update();
  a.set_hyperparam("lr", 0.05);
  EXPECT_FALSE(a.rule(m.W)->state().empty());
  // A snapshot taken before the first update: t and state go back to nothing, lr to 0.3.
  load(a, fresh);
  EXPECT_EQ(a.t(), 0);
  EXPECT_EQ(a.hyperparam("lr"), 0.3);
  EXPECT_EQ(a.rule(m.W)->t, 0);
  EXPECT_TRUE(a.rule(m.W)->state().empty());

  // Snapshots without hyperparameters (Chainer's) keep the current values.
  auto no_hp = fresh;
  no_hp.erase("hyperparam/lr");
  a.set_hyperparam("lr", 0.07);
  load(a, no_hp);
  EXPECT_EQ(a.hyperparam("lr"), 0.07);
}

TEST(OptimizerSerialize, MissingKeysAndMismatchedShapes) {
  Model m;
  O::Adam a;
  a.setup(m.root);
  m.set_grads(1);
  a.update();
  auto values = save(a);
  values.erase("l1/b/v");
  Model m2;
  O::Adam b;
  b.setup(m2.root);
  expect_error<IOError>([&] { load(b, values); }, {"memory", "l1/b/v"});
  // Non-strict loading leaves missing state to be created at the next update.
  O::Adam c;
  Model m3;
  c.setup(m3.root);
  load(c, values, false);
  m3.set_grads(2);
  c.update();
  EXPECT_EQ(c.rule(m3.b)->state().size(), 2u);

  auto bad = save(a);
  bad["W/m"] = Array::zeros({2, 2});
  O::Adam d;
  Model m4;
  d.setup(m4.root);
  load(d, bad);
  m4.set_grads(2);
  expect_error<ShapeError>([&] { d.update(); }, {"Adam", "'m'", "(2, 2)", "(3, 4)"});

  O::SGD sgd;
  Model m5;
  sgd.setup(m5.root);
  auto no_t = save(sgd);
  no_t.erase("W/t");
  expect_error<IOError>([&] { load(sgd, no_t); }, {"W/t"});
}

// Through a file, into a model on the reference backend: the loaded (cpu) state follows the
// parameter to its device at the next update.
TEST(OptimizerSerialize, NpzFileRoundTripOntoAnotherDevice) {
  Model ma, mb(Device::reference());
  O::Adam a(0.01, 0.9, 0.99, 1e-8, 1.0, 0.0, true), b(0.01, 0.9, 0.99, 1e-8, 1.0, 0.0, true);
  a.setup(ma.root);
  b.setup(mb.root);
  for (int64_t t = 1; t <= 2; ++t) {
    ma.set_grads(t);
    a.update();
  }
  const std::string path = ::testing::TempDir() + "/rensa_optimizer_serialize.npz";
  S::save_npz(path, a);
  S::load_npz(path, b);
  std::remove(path.c_str());
  mb.copy_values_from(ma);
  ma.set_grads(3);
  mb.set_grads(3);
  a.update();
  b.update();
  EXPECT_EQ(b.rule(mb.W)->state()[0].second.device(), Device::reference());
  EXPECT_TRUE(allclose(ma.W.array(), mb.W.array().to(Device::cpu()), 1e-6, 1e-7));
  EXPECT_TRUE(allclose(ma.b.array(), mb.b.array().to(Device::cpu()), 1e-6, 1e-7));
}

}  // namespace
}  // namespace rensa
