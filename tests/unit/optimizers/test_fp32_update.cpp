// use_fp32_update (Chainer's float32 master weights): a 16-bit parameter is updated through a
// float32 master kept by its rule, which matches a float32 run fed the same gradients bit for bit;
// the parameter is the master rounded; steps too small for 16 bits accumulate; snapshots store the
// master; float32 parameters, loss scaling's skipped steps and turning it off.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "rensa/rensa.h"
#include "rensa/training.h"
#include "tests/unit/optimizers/ported_optimizers.h"
#include "tests/unit/test_util.h"

namespace rensa {
namespace {

namespace O = optimizers;
namespace S = serializers;
using test::randn;

// Two linear layers made under the default dtype `dtype`: "/l1/W", "/l1/b", "/l2/W", "/l2/b".
struct Model {
  Chain root;
  std::shared_ptr<links::Linear> l1, l2;
  explicit Model(Dtype dtype, uint64_t seed = 1) : l1(make(dtype, seed, 4, 3)), l2(make(dtype, seed + 1, 3, 2)) {
    root.add_link("l1", l1);
    root.add_link("l2", l2);
  }
  static std::shared_ptr<links::Linear> make(Dtype dtype, uint64_t seed, int64_t in, int64_t out) {
    auto g = using_config("dtype", dtype);
    auto l = std::make_shared<links::Linear>(in, out);
    // Non-zero biases, so every parameter starts somewhere the rounding shows.
    l->W().array().assign(randn(l->W().shape(), Dtype::float32, seed).astype(dtype));
    l->b().array().assign(randn(l->b().shape(), Dtype::float32, seed + 50).astype(dtype));
    return l;
  }
  std::vector<Variable> params() const { return root.params(); }
  // Random gradients of the parameters' own dtype.
  void set_grads(uint64_t seed) const {
    for (const Variable& p : params()) {
      p.set_grad(Variable(randn(p.shape(), Dtype::float32, seed++).astype(p.dtype())));
    }
  }
  // This model's gradients, converted, as `other`'s.
  void copy_grads_to(const Model& other) const {
    const auto a = params(), b = other.params();
    for (std::size_t i = 0; i < a.size(); ++i) b[i].set_grad(Variable(a[i].grad().array().astype(b[i].dtype())));
  }
  void copy_values_to(const Model& other) const {
    const auto a = params(), b = other.params();
    for (std::size_t i = 0; i < a.size(); ++i) b[i].array().assign(a[i].array());
  }
};

using Factory = std::function<std::unique_ptr<O::Optimizer>()>;

std::vector<std::pair<std::string, Factory>> factories() {
  std::vector<std::pair<std::string, Factory>> out = {
      {"SGD", [] { return std::make_unique<O::SGD>(0.1); }},
      {"MomentumSGD", [] { return std::make_unique<O::MomentumSGD>(0.1, 0.8); }},
      {"NesterovAG", [] { return std::make_unique<O::NesterovAG>(0.1, 0.8); }},
      {"Adam", [] { return std::make_unique<O::Adam>(0.01, 0.9, 0.99, 1e-8, 1.0, 0.01, true); }},
      {"AdaGrad", [] { return std::make_unique<O::AdaGrad>(0.1); }},
      {"RMSprop", [] { return std::make_unique<O::RMSprop>(0.01, 0.9); }},
      {"RMSpropWarmup", [] { return std::make_unique<O::RMSpropWarmup>(0.1, 3); }},
      {"LARS", [] { return std::make_unique<O::LARS>(1.0, 0.9, 1e-4); }},
      {"LAMB", [] { return std::make_unique<O::LAMB>(0.01); }},
  };
  for (auto& f : test::ported_optimizers()) out.push_back(std::move(f));
  return out;
}

const Array& master_of(O::Optimizer& opt, const Variable& p) {
  const Array* m = opt.rule(p)->fp32_param();
  if (m == nullptr) throw std::runtime_error("no float32 master for " + p.name());
  return *m;
}

// (a) and (b): the master follows the float32 run exactly, and the parameter is the master rounded.
TEST(Fp32Update, MasterMatchesFloat32RunAndParamIsItRounded) {
  for (const Dtype dtype : {Dtype::bfloat16, Dtype::float16}) {
    for (const auto& [name, make] : factories()) {
      const std::string what = name + " " + std::string(dtype_name(dtype));
      Model m16(dtype), m32(Dtype::float32);
      m16.copy_values_to(m32);
      auto o16 = make(), o32 = make();
      o16->setup(m16.root);
      o32->setup(m32.root);
      o16->use_fp32_update();
      EXPECT_TRUE(o16->uses_fp32_update());
      for (uint64_t step = 1; step <= 4; ++step) {
        m16.set_grads(100 * step);
        m16.copy_grads_to(m32);
        o16->update();
        o32->update();
        const auto p16 = m16.params(), p32 = m32.params();
        for (std::size_t i = 0; i < p16.size(); ++i) {
          ASSERT_EQ(p16[i].dtype(), dtype) << what;
          const Array& master = master_of(*o16, p16[i]);
          EXPECT_EQ(master.dtype(), Dtype::float32) << what;
          EXPECT_TRUE(array_equal(master, p32[i].array())) << what << " step " << step << " param " << i;
          EXPECT_TRUE(array_equal(p16[i].array(), master.astype(dtype))) << what << " step " << step;
          for (const auto& [sname, st] : o16->rule(p16[i])->state()) EXPECT_EQ(st.dtype(), Dtype::float32) << what;
          EXPECT_EQ(o16->rule(p16[i])->t, o32->rule(p32[i])->t) << what;
        }
      }
    }
  }
}

// Hooks run before the rules on the 16-bit gradients (as Chainer's optimizer-level hooks do): the
// master equals a float32 run fed the gradients the hooks left.
TEST(Fp32Update, HooksRunOnTheSixteenBitGradients) {
  Model m16(Dtype::bfloat16), m32(Dtype::float32);
  m16.copy_values_to(m32);
  O::MomentumSGD o16(0.1, 0.9), o32(0.1, 0.9);
  o16.setup(m16.root);
  o32.setup(m32.root);
  o16.use_fp32_update();
  o16.add_hook(std::make_shared<O::WeightDecay>(0.01));
  o16.add_hook(std::make_shared<O::GradientClipping>(1.0));
  for (uint64_t step = 1; step <= 3; ++step) {
    m16.set_grads(7 * step);
    o16.update();
    EXPECT_EQ(m16.l1->W().grad().dtype(), Dtype::bfloat16);
    m16.copy_grads_to(m32);  // what the hooks left
    o32.update();
    const auto p16 = m16.params(), p32 = m32.params();
    for (std::size_t i = 0; i < p16.size(); ++i) EXPECT_TRUE(array_equal(master_of(o16, p16[i]), p32[i].array()));
  }
}

// (c): steps below half an ulp of the 16-bit parameter are lost without a master and add up with it.
TEST(Fp32Update, TinyStepsAccumulateInTheMaster) {
  for (const Dtype dtype : {Dtype::bfloat16, Dtype::float16}) {
    for (const bool fp32 : {false, true}) {
      Link link;
      const Variable w = link.add_param("w", Array::full({3}, 1.0, dtype));
      O::SGD sgd(1.0);
      sgd.setup(link);
      sgd.use_fp32_update(fp32);
      // 1e-4 is below half an ulp of 1 in both (bfloat16: 2^-8, float16: 2^-11).
      for (int step = 0; step < 100; ++step) {
        w.set_grad(Variable(Array::full({3}, -1e-4, dtype)));
        sgd.update();
        if (!fp32) {
          EXPECT_EQ(w.array().to_vector<double>(), std::vector<double>(3, 1.0)) << dtype;
        }
      }
      if (fp32) {
        const double g = Array::full({1}, 1e-4, dtype).item<double>();  // the step, in 16 bits
        const double master = master_of(sgd, w).to_vector<double>()[0];
        EXPECT_NEAR(master, 1.0 + 100 * g, 1e-5) << dtype;
        EXPECT_GT(w.array().to_vector<double>()[0], 1.0) << dtype;
        EXPECT_TRUE(array_equal(w.array(), master_of(sgd, w).astype(dtype))) << dtype;
      } else {
        EXPECT_EQ(sgd.rule(w)->fp32_param(), nullptr);
      }
    }
  }
}

// (d): a snapshot stores the master; resuming in a fresh model and optimizer continues bit for bit.
TEST(Fp32Update, SnapshotResumesBitForBit) {
  for (const Dtype dtype : {Dtype::bfloat16, Dtype::float16}) {
    for (const auto& [name, make] : factories()) {
      const std::string what = name + " " + std::string(dtype_name(dtype));
      Model ma(dtype), mb(dtype, 77);
      auto a = make(), b = make();
      a->setup(ma.root);
      a->use_fp32_update();
      for (uint64_t step = 1; step <= 3; ++step) {
        ma.set_grads(10 * step);
        a->update();
      }
      const std::string dir = ::testing::TempDir();
      const std::string model_path = dir + "/rensa_fp32_update_model.npz";
      const std::string opt_path = dir + "/rensa_fp32_update_optimizer.npz";
      S::save_npz(model_path, ma.root);
      S::save_npz(opt_path, *a);
      const auto saved = S::read_npz(opt_path);
      ASSERT_EQ(saved.count("l1/W/fp32_param"), 1u) << what;
      EXPECT_EQ(saved.at("l1/W/fp32_param").dtype(), Dtype::float32) << what;

      b->setup(mb.root);
      b->use_fp32_update();  // before loading: a rule loads a master only when it uses one
      // The optimizer alone already refreshes the parameters from the masters.
      S::load_npz(opt_path, *b);
      const auto pa = ma.params(), pb = mb.params();
      for (std::size_t i = 0; i < pa.size(); ++i) {
        EXPECT_TRUE(array_equal(pa[i].array(), pb[i].array())) << what << " param " << i;
        EXPECT_TRUE(array_equal(master_of(*a, pa[i]), master_of(*b, pb[i]))) << what;
      }
      S::load_npz(model_path, mb.root);
      std::remove(model_path.c_str());
      std::remove(opt_path.c_str());
      for (uint64_t step = 4; step <= 6; ++step) {
        ma.set_grads(10 * step);
        mb.set_grads(10 * step);
        a->update();
        b->update();
        for (std::size_t i = 0; i < pa.size(); ++i) {
          EXPECT_TRUE(array_equal(pa[i].array(), pb[i].array())) << what << " step " << step;
          EXPECT_TRUE(array_equal(master_of(*a, pa[i]), master_of(*b, pb[i]))) << what << " step " << step;
        }
      }
    }
  }
}

// A snapshot without masters (taken without use_fp32_update) loads: the masters are made from the
// loaded parameters at the next update; a rule without use_fp32_update ignores a stored master.
TEST(Fp32Update, SnapshotsWithoutMastersAndRulesWithoutIt) {
  Model ma(Dtype::bfloat16), mb(Dtype::bfloat16);
  O::Adam a, b;
  a.setup(ma.root);
  b.setup(mb.root);
  ma.set_grads(1);
  a.update();
  S::DictionarySerializer plain;
  a.serialize(plain);
  b.use_fp32_update();
  S::DictionaryDeserializer d1(plain.target(), "memory", true);
  b.serialize(d1);
  EXPECT_EQ(b.rule(mb.l1->W())->fp32_param(), nullptr);
  mb.set_grads(2);
  b.update();
  ASSERT_NE(b.rule(mb.l1->W())->fp32_param(), nullptr);

  S::DictionarySerializer with_master;
  b.serialize(with_master);
  EXPECT_EQ(with_master.target().count("l1/W/fp32_param"), 1u);
  O::Adam c;
  Model mc(Dtype::bfloat16);
  c.setup(mc.root);
  S::DictionaryDeserializer d2(with_master.target(), "memory", true);
  c.serialize(d2);
  EXPECT_EQ(c.rule(mc.l1->W())->fp32_param(), nullptr);
}

// (e): float32 (and float64) parameters ignore the flag; in a mixed model only the 16-bit ones
// get a master.
TEST(Fp32Update, Float32ParamsAreUnaffected) {
  Model a(Dtype::float32), b(Dtype::float32);
  O::Adam oa, ob;
  oa.setup(a.root);
  ob.setup(b.root);
  ob.use_fp32_update();
  for (uint64_t step = 1; step <= 3; ++step) {
    a.set_grads(step);
    b.set_grads(step);
    oa.update();
    ob.update();
  }
  const auto pa = a.params(), pb = b.params();
  for (std::size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(array_equal(pa[i].array(), pb[i].array()));
    EXPECT_EQ(ob.rule(pb[i])->fp32_param(), nullptr);
  }
  S::DictionarySerializer s;
  ob.serialize(s);
  for (const auto& [key, value] : s.target()) EXPECT_EQ(key.find("fp32_param"), std::string::npos) << key;

  Chain mixed;
  Link half, single, dbl;
  const Variable h = half.add_param("w", Array::full({2}, 1.0, Dtype::bfloat16));
  const Variable f = single.add_param("w", Array::full({2}, 1.0, Dtype::float32));
  const Variable d = dbl.add_param("w", Array::full({2}, 1.0, Dtype::float64));
  mixed.add_link("half", half);
  mixed.add_link("single", single);
  mixed.add_link("dbl", dbl);
  O::SGD sgd(0.5);
  sgd.setup(mixed);
  sgd.use_fp32_update();
  for (const Variable& p : {h, f, d}) p.set_grad(Variable(Array::full({2}, 1.0, p.dtype())));
  sgd.update();
  ASSERT_NE(sgd.rule(h)->fp32_param(), nullptr);
  EXPECT_EQ(sgd.rule(f)->fp32_param(), nullptr);
  EXPECT_EQ(sgd.rule(d)->fp32_param(), nullptr);
  for (const Variable& p : {h, f, d}) EXPECT_EQ(p.array().to_vector<double>(), std::vector<double>(2, 0.5));
}

// (f): loss scaling composes: the master follows a float32 run fed the unscaled gradients, and a
// step with an inf gradient is skipped with master and parameter unchanged.
TEST(Fp32Update, LossScaling) {
  Model m16(Dtype::bfloat16), m32(Dtype::float32);
  m16.copy_values_to(m32);
  O::Adam o16(0.01), o32(0.01);
  o16.setup(m16.root);
  o32.setup(m32.root);
  o16.use_fp32_update();
  o16.loss_scaling();  // dynamic, from 1
  const Variable x(randn({5, 4}, Dtype::float32, 3).astype(Dtype::bfloat16));
  const auto loss_fn = [&] { return functions::sum((*m16.l2)((*m16.l1)(x))); };
  for (int step = 0; step < 3; ++step) {
    o16.update(loss_fn);
    ASSERT_TRUE(o16.is_safe_to_update());
    m16.copy_grads_to(m32);  // unscaled by now
    o32.update();
    const auto p16 = m16.params(), p32 = m32.params();
    for (std::size_t i = 0; i < p16.size(); ++i) {
      EXPECT_TRUE(array_equal(master_of(o16, p16[i]), p32[i].array())) << step;
      EXPECT_TRUE(array_equal(p16[i].array(), master_of(o16, p16[i]).astype(Dtype::bfloat16)));
    }
  }
  EXPECT_EQ(o16.loss_scale(), 8.0);

  const auto p16 = m16.params();
  std::vector<Array> params_before, masters_before;
  for (const Variable& p : p16) {
    params_before.push_back(p.array().copy());
    masters_before.push_back(master_of(o16, p).copy());
  }
  m16.set_grads(5);
  Array g = m16.l1->W().grad().array().astype(Dtype::float32);
  g.fill(std::numeric_limits<double>::infinity());
  m16.l1->W().set_grad(Variable(g.astype(Dtype::bfloat16)));
  o16.update();
  EXPECT_FALSE(o16.is_safe_to_update());
  EXPECT_EQ(o16.t(), 3);
  EXPECT_EQ(o16.loss_scale(), 4.0);
  for (std::size_t i = 0; i < p16.size(); ++i) {
    EXPECT_TRUE(array_equal(p16[i].array(), params_before[i]));
    EXPECT_TRUE(array_equal(master_of(o16, p16[i]), masters_before[i]));
  }
}

// (g): turning it off drops the masters; later steps run in 16 bits, their state converted back.
// The optimizer's flag reaches current rules and rules made later; a rule's own flag is its own.
TEST(Fp32Update, TurningItOffAndPerRule) {
  Model m(Dtype::bfloat16);
  O::Adam opt;
  opt.setup(m.root);
  opt.use_fp32_update();
  m.set_grads(1);
  opt.update();
  for (const Variable& p : m.params()) ASSERT_NE(opt.rule(p)->fp32_param(), nullptr);
  opt.use_fp32_update(false);
  EXPECT_FALSE(opt.uses_fp32_update());
  for (const Variable& p : m.params()) {
    EXPECT_EQ(opt.rule(p)->fp32_param(), nullptr);
    EXPECT_FALSE(opt.rule(p)->uses_fp32_update());
  }
  m.set_grads(2);
  opt.update();
  for (const Variable& p : m.params()) {
    EXPECT_EQ(opt.rule(p)->fp32_param(), nullptr);
    for (const auto& [name, st] : opt.rule(p)->state()) EXPECT_EQ(st.dtype(), Dtype::bfloat16) << name;
  }

  // Set before setup: the rules setup makes get it.
  Model m2(Dtype::bfloat16);
  O::SGD sgd(0.1);
  sgd.use_fp32_update();
  sgd.setup(m2.root);
  EXPECT_TRUE(sgd.rule(m2.l1->W())->uses_fp32_update());

  // One rule alone.
  Model m3(Dtype::float16);
  O::SGD one(0.1);
  one.setup(m3.root);
  one.rule(m3.l1->W())->use_fp32_update();
  m3.set_grads(3);
  one.update();
  EXPECT_NE(one.rule(m3.l1->W())->fp32_param(), nullptr);
  EXPECT_EQ(one.rule(m3.l1->b())->fp32_param(), nullptr);
}

// The parameter is written in place: a view of it and the model see the update.
TEST(Fp32Update, WritesTheParameterInPlace) {
  Link link;
  const Variable w = link.add_param("w", Array::full({2, 3}, 1.0, Dtype::bfloat16));
  const Array view = w.array().reshape({6});
  O::SGD sgd(0.5);
  sgd.setup(link);
  sgd.use_fp32_update();
  w.set_grad(Variable(Array::full({2, 3}, 1.0, Dtype::bfloat16)));
  sgd.update();
  EXPECT_EQ(view.to_vector<double>(), std::vector<double>(6, 0.5));
}

}  // namespace
}  // namespace rensa
