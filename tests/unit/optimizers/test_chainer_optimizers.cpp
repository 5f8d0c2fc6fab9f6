// The optimizers ported last (AdaDelta, CorrectedMomentumSGD, MSVAG, RMSpropGraves, SMORMS3,
// AdaBound, AMSBound) step by step against Chainer 7.8.1's updates of the same parameter and
// gradients (its values as literals), their defaults, loss scaling; and the GradientNoise hook.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rensa/rensa.h"
#include "rensa/training.h"
#include "tests/unit/test_util.h"

namespace rensa {
namespace {

namespace F = functions;
namespace O = optimizers;
namespace S = serializers;
using test::expect_error;
using Vec = std::vector<double>;

const Vec kP0 = {0.5, -1.25, 2.0, 0.0, -0.3, 1.7};
// Step 4's gradient is small, so AMSBound's running maximum differs from AdaBound's v.
const std::vector<Vec> kGrads = {{0.1, -0.2, 0.3, 0.0, 1.5, -0.7},
                                 {-0.4, 0.25, 0.05, 0.0, 1.1, 0.9},
                                 {0.2, -0.6, -0.35, 0.0, -0.8, 0.45},
                                 {0.01, 0.02, -0.01, 0.0, 0.05, -0.03}};

struct One : Link {
  Variable W;
  One() { W = add_param("W", Array::from_vector<double>(kP0)); }
};

struct Case {
  std::string name;
  std::function<std::unique_ptr<O::Optimizer>()> make;
  std::vector<Vec> steps;            // the parameter after each of Chainer's updates
  std::map<std::string, Vec> state;  // the rule's state after the last
};

// Chainer 7.8.1, float64, on kP0 and kGrads; before step 4 of AdaBound and AMSBound, alpha = 0.005
// (a schedule that moves the bounds).
std::vector<Case> chainer_cases() {
  return {
      {"AdaDelta",
       [] { return std::make_unique<O::AdaDelta>(0.9, 1e-4); },
       {
           {0.46984886554222366, -1.2187652476222788, 1.9685514548983425, 0.0, -0.3316157516595552, 1.7315905577684567},
           {0.5122374423507255, -1.2539925225959598, 1.9608803090279512, 0.0, -0.3589593198880007, 1.695637643212123},
           {0.4848726974781077, -1.2040210309851953, 1.9955479921313493, 0.0, -0.3371208535008372, 1.6735914786958084},
           {0.48333719034034867, -1.2063308150493344, 1.9968546500044313, 0.0, -0.33864144167766574, 1.675203558624782},
       },
       {
           {"msdx",
            {0.0002794432460165219, 0.0003969167921720094, 0.0001852025440329667, 0.0, 0.0001765828371074044,
             0.00022145598822658275}},
           {"msg", {0.017299, 0.04041849999999999, 0.017798499999999995, 0.0, 0.319885, 0.119646}},
       }},
      {"CorrectedMomentumSGD",
       [] { return std::make_unique<O::CorrectedMomentumSGD>(0.1, 0.8); },
       {
           {0.49, -1.23, 1.97, 0.0, -0.45, 1.77},
           {0.522, -1.2389999999999999, 1.941, 0.0, -0.68, 1.736},
           {0.5276000000000001, -1.1862, 1.9528, 0.0, -0.784, 1.6638},
           {0.5310800000000001, -1.1459599999999999, 1.96324, 0.0, -0.8722000000000001, 1.60904},
       },
       {
           {"v", {0.0348, 0.40240000000000004, 0.10439999999999999, 0.0, -0.8820000000000003, -0.5476000000000001}},
       }},
      {"MSVAG",
       [] { return std::make_unique<O::MSVAG>(0.2, 0.8, 0.9, 0.01); },
       {
           {0.4775, -1.20275, 1.928, 0.0, -0.5673, 1.8107},
           {0.48386222674040336, -1.1923438546511629, 1.8926287905430366, 0.0, -0.7866280047148234, 1.7926290928119921},
           {0.4795650723427415, -1.1658849841926375, 1.8761004059720476, 0.0, -0.7983299535449085, 1.7605278493441145},
           {0.475266165440681, -1.1470332030510488, 1.8596428845186943, 0.0, -0.8046464352737299, 1.7362348892115063},
       },
       {
           {"m",
            {-0.006960000000000007, -0.08048, -0.020879999999999992, 0.0, 0.17640000000000003, 0.10951999999999998}},
           {"v", {0.027924000000000004, 0.06977599999999998, 0.029155999999999998, 0.0, 0.48817999999999995, 0.186436}},
       }},
      {"RMSpropGraves",
       [] { return std::make_unique<O::RMSpropGraves>(0.01, 0.9, 0.8, 1e-3); },
       {
           {0.47705842661294384, -1.2205116087690207, 1.9685514548983425, 0.0, -0.3332513323891104, 1.7329617126543608},
           {0.4894389570434481, -1.2209760433620098, 1.9379129816709582, 0.0, -0.3812418854761351, 1.7339129312448287},
           {0.4852531396716955, -1.1924067314334443, 1.937713293048893, 0.0, -0.40584142437832815, 1.722146691242723},
           {0.4811644890799267, -1.1705605076204113, 1.9382837375777455, 0.0, -0.4264284891973718, 1.713610303330297},
       },
       {
           {"delta",
            {-0.004088650591768748, 0.021846223813032924, 0.0005704445288525669, 0.0, -0.020587064819043672,
             -0.00853638791242607}},
           {"g",
            {-0.006109999999999997, -0.04632999999999998, -0.006579999999999995, 0.0, 0.13144999999999998,
             0.05936999999999999}},
           {"n", {0.017299, 0.04041849999999999, 0.017798499999999995, 0.0, 0.319885, 0.119646}},
       }},
      {"SMORMS3",
       [] { return std::make_unique<O::SMORMS3>(0.05, 1e-10); },
       {
           {0.42928932198134523, -1.1792893219313452, 1.9292893219146785, 0.0, -0.3707106781119881, 1.7707106781043689},
           {0.5065560630231212, -1.235492050575006, 1.9143489643089429, 0.0, -0.4217989216484827, 1.7080646318953083},
           {0.498186803804373, -1.1526141652021884, 1.975286729687582, 0.0, -0.3846900527832935, 1.6721590596296103},
           {0.4979133949543652, -1.1557976367482232, 1.9769950564392549, 0.0, -0.38704620386501387, 1.6749131121238874},
       },
       {
           {"g",
            {-0.01592426005625172, -0.10511659684298642, -0.04035288962891772, 0.0, 0.1610264401479905,
             0.17193280040130993}},
           {"g2",
            {0.0441438935180158, 0.09867293690763952, 0.04495578208848626, 0.0, 0.6714919884558299,
             0.2966457222403541}},
           {"mem",
            {4.082386618646497, 3.6971777526459797, 3.671658947114054, 5.0, 3.3152018249862683, 3.7726363811301704}},
       }},
      {"AdaBound",
       [] { return std::make_unique<O::AdaBound>(0.01, 0.9, 0.99, 0.05, 0.1); },
       {
           {0.4945, -1.2400000049999975, 1.9900000033333323, 0.0, -0.3099999993333334, 1.7099999985714287},
           {0.5000839026257838, -1.241626519616236, 1.982149906114806, 0.0, -0.31981109803379376, 1.708238488982833},
           {0.5011849394280927, -1.2365972745855833, 1.9830038523675504, 0.0, -0.32425468785646283, 1.704621580260039},
           {0.5015732549185107, -1.2346190541012672, 1.9834171243499692, 0.0, -0.32615033164630003, 1.703208676682088},
       },
       {
           {"m",
            {-0.006110000000000001, -0.04632999999999999, -0.006579999999999991, 0.0, 0.13145, 0.059370000000000006}},
           {"v",
            {0.0020621899000000023, 0.004568682100000004, 0.002111521600000002, 0.0, 0.04005193750000004,
             0.014707025100000012}},
       }},
      {"AMSBound",
       [] { return std::make_unique<O::AMSBound>(0.01, 0.9, 0.99, 0.05, 0.1); },
       {
           {0.4945, -1.2400000049999975, 1.9900000033333323, 0.0, -0.3099999993333334, 1.7099999985714287},
           {0.5000839026257838, -1.241626519616236, 1.982149906114806, 0.0, -0.31981109803379376, 1.708238488982833},
           {0.5011849394280927, -1.2365972745855833, 1.9830038523675504, 0.0, -0.32425468785646283, 1.704621580260039},
           {0.501571402176488, -1.2346281078374135, 1.9834151502038349, 0.0, -0.32614141854370804, 1.70321532860417},
       },
       {
           {"m",
            {-0.006110000000000001, -0.04632999999999999, -0.006579999999999991, 0.0, 0.13145, 0.059370000000000006}},
           {"v",
            {0.0020621899000000023, 0.004568682100000004, 0.002111521600000002, 0.0, 0.04005193750000004,
             0.014707025100000012}},
           {"vhat",
            {0.002082010000000002, 0.004610790000000004, 0.002131840000000002, 0.0, 0.04043125000000004,
             0.014846490000000013}},
       }},
  };
}

TEST(ChainerOptimizers, StepsAndStateMatchChainer) {
  for (const Case& c : chainer_cases()) {
    One m;
    auto opt = c.make();
    opt->setup(m);
    for (std::size_t t = 0; t < kGrads.size(); ++t) {
      m.W.set_grad(Variable(Array::from_vector<double>(kGrads[t])));
      if (t == 3 && opt->has_hyperparam("adabound")) opt->set_hyperparam("alpha", 0.005);
      opt->update();
      const Vec got = m.W.array().to_vector<double>();
      for (std::size_t i = 0; i < got.size(); ++i) {
        EXPECT_NEAR(got[i], c.steps[t][i], 1e-14 * (1.0 + std::abs(c.steps[t][i])))
            << c.name << " step " << t + 1 << " element " << i;
      }
    }
    std::map<std::string, Vec> state;
    for (const auto& [name, a] : opt->rule(m.W)->state()) state[name] = a.to_vector<double>();
    ASSERT_EQ(state.size(), c.state.size()) << c.name;
    for (const auto& [name, want] : c.state) {
      ASSERT_TRUE(state.count(name)) << c.name << " has no state '" << name << "'";
      for (std::size_t i = 0; i < want.size(); ++i) {
        EXPECT_NEAR(state[name][i], want[i], 1e-14 * (1.0 + std::abs(want[i]))) << c.name << " " << name << " " << i;
      }
    }
  }
}

TEST(ChainerOptimizers, DefaultsAreChainers) {
  const std::map<std::string, std::map<std::string, double>> want = {
      {"AdaDelta", {{"rho", 0.95}, {"eps", 1e-6}}},
      {"CorrectedMomentumSGD", {{"lr", 0.01}, {"momentum", 0.9}}},
      {"MSVAG", {{"lr", 0.1}, {"beta", 0.9}, {"eta", 1.0}, {"weight_decay_rate", 0.0}}},
      {"RMSpropGraves", {{"lr", 1e-4}, {"alpha", 0.95}, {"momentum", 0.9}, {"eps", 1e-4}}},
      {"SMORMS3", {{"lr", 0.001}, {"eps", 1e-16}}},
      {"AdaBound",
       {{"alpha", 0.001},
        {"beta1", 0.9},
        {"beta2", 0.999},
        {"final_lr", 0.1},
        {"gamma", 1e-3},
        {"eps", 1e-8},
        {"eta", 1.0},
        {"weight_decay_rate", 0.0},
        {"amsgrad", 0.0},
        {"adabound", 1.0}}},
      {"AMSBound", {{"final_lr", 0.1}, {"gamma", 1e-3}, {"amsgrad", 1.0}, {"adabound", 1.0}}},
      {"Adam", {{"adabound", 0.0}, {"final_lr", 0.1}, {"gamma", 1e-3}}},
  };
  std::map<std::string, std::unique_ptr<O::Optimizer>> opts;
  opts["AdaDelta"] = std::make_unique<O::AdaDelta>();
  opts["CorrectedMomentumSGD"] = std::make_unique<O::CorrectedMomentumSGD>();
  opts["MSVAG"] = std::make_unique<O::MSVAG>();
  opts["RMSpropGraves"] = std::make_unique<O::RMSpropGraves>();
  opts["SMORMS3"] = std::make_unique<O::SMORMS3>();
  opts["AdaBound"] = std::make_unique<O::AdaBound>();
  opts["AMSBound"] = std::make_unique<O::AMSBound>();
  opts["Adam"] = std::make_unique<O::Adam>();
  for (const auto& [name, hp] : want) {
    for (const auto& [k, v] : hp) EXPECT_EQ(opts.at(name)->hyperparam(k), v) << name << " " << k;
  }
}

// SMORMS3's memory starts at 1 (Chainer's ones_like), so an element whose gradient stays zero
// counts its steps: mem = 1 + mem after each.
TEST(ChainerOptimizers, Smorms3MemoryStartsAtOne) {
  One m;
  O::SMORMS3 opt;
  opt.setup(m);
  for (int t = 1; t <= 3; ++t) {
    m.W.set_grad(Variable(Array::zeros({6}, Dtype::float64)));
    opt.update();
    EXPECT_EQ(opt.rule(m.W)->state()[0].first, "mem");
    EXPECT_EQ(opt.rule(m.W)->state()[0].second.to_vector<double>(), Vec(6, 1.0 + t));
  }
  EXPECT_EQ(m.W.array().to_vector<double>(), kP0);
}

TEST(ChainerOptimizers, AdaBoundErrors) {
  One m;
  O::AdaBound opt(0.01, 0.9, 0.999, 0.1, 0.0);
  opt.setup(m);
  m.W.set_grad(Variable(Array::from_vector<double>(kGrads[0])));
  expect_error<ValueError>([&] { opt.update(); }, {"AdaBound", "gamma", "0"});
  O::AMSBound zero(0.0);
  zero.setup(m);
  expect_error<ValueError>([&] { zero.update(); }, {"AMSBound", "initial alpha"});
}

// A static loss scale changes nothing but the scale of backward's seed, for each of them.
TEST(ChainerOptimizers, StaticLossScaleGivesTheSameUpdate) {
  for (const Case& c : chainer_cases()) {
    One a, b;
    auto plain = c.make(), scaled = c.make();
    plain->setup(a);
    scaled->setup(b);
    scaled->set_loss_scale(1024.0);
    for (const Vec& g : kGrads) {
      const Variable x(Array::from_vector<double>(g));
      plain->update([&] { return F::sum(F::mul(a.W, x)); });
      scaled->update([&] { return F::sum(F::mul(b.W, x)); });
    }
    EXPECT_EQ(a.W.array().to_vector<double>(), b.W.array().to_vector<double>()) << c.name;
  }
}

// GradientNoise: zero gradients of 40,000 elements show the noise itself.
struct Wide : Link {
  Variable A, B;
  Wide() {
    A = add_param("A", Array::zeros({200, 200}, Dtype::float64));
    B = add_param("B", Array::zeros({200, 200}, Dtype::float64));
  }
  void zero_grads() const {
    A.set_grad(Variable(Array::zeros({200, 200}, Dtype::float64)));
    B.set_grad(Variable(Array::zeros({200, 200}, Dtype::float64)));
  }
};

double stddev_of(const Array& a) {
  const Vec v = a.to_vector<double>();
  double s = 0.0, s2 = 0.0;
  for (double x : v) {
    s += x;
    s2 += x * x;
  }
  const double n = static_cast<double>(v.size()), mean = s / n;
  return std::sqrt(s2 / n - mean * mean);
}

// The noise's standard deviation is sqrt(eta / (1 + t)^0.55), t the updates made before (Chainer's
// exponential_decay_noise at the 'pre' timing); SGD with lr 1 moves the parameter by minus it.
TEST(GradientNoise, AnnealedStandardDeviation) {
  Wide m;
  O::SGD opt(1.0);
  opt.setup(m);
  auto hook = std::make_shared<O::GradientNoise>(0.3, O::GradientNoise::exponential_decay_noise, 5);
  opt.add_hook(hook);
  EXPECT_STREQ(hook->name(), "GradientNoise");
  Array before = m.A.array().copy();
  for (int t = 0; t < 4; ++t) {
    m.zero_grads();
    opt.update();
    const double want = std::sqrt(0.3 / std::pow(1.0 + t, 0.55));
    EXPECT_NEAR(stddev_of(m.A.grad().array()), want, 0.02 * want) << "t " << t;
    EXPECT_TRUE(allclose(F::sub(Variable(before), m.A).array(), m.A.grad().array(), 1e-15, 1e-15)) << "t " << t;
    before = m.A.array().copy();
  }
  // Each parameter has its own stream.
  EXPECT_FALSE(array_equal(m.A.grad().array(), m.B.grad().array()));
}

// The noise is a function of the seed, the parameter's position and t: the same on every replica
// and after a resume, different for another seed.
TEST(GradientNoise, SameSeedSameNoiseAndResumeExact) {
  const auto run = [](uint64_t seed, int steps, Wide& m, O::SGD& opt) {
    opt.add_hook(std::make_shared<O::GradientNoise>(0.01, O::GradientNoise::exponential_decay_noise, seed));
    for (int t = 0; t < steps; ++t) {
      m.zero_grads();
      opt.update();
    }
  };
  Wide a, b, c;
  O::SGD oa(0.1), ob(0.1), oc(0.1);
  oa.setup(a);
  ob.setup(b);
  oc.setup(c);
  run(7, 3, a, oa);
  run(7, 1, b, ob);
  // b resumes from a snapshot of a after one step and takes two more.
  Wide r;
  O::SGD orr(0.1);
  orr.setup(r);
  S::DictionarySerializer s;
  ob.serialize(s);
  b.serialize(s);
  S::DictionaryDeserializer d(s.target(), "memory");
  orr.serialize(d);
  r.serialize(d);
  run(7, 2, r, orr);
  EXPECT_TRUE(array_equal(a.A.array(), r.A.array()));
  EXPECT_TRUE(array_equal(a.B.array(), r.B.array()));
  run(8, 3, c, oc);
  EXPECT_FALSE(array_equal(a.A.array(), c.A.array()));
}

TEST(GradientNoise, CustomNoiseAndErrors) {
  One m;
  O::SGD opt(1.0);
  opt.setup(m);
  // A noise function sees the rule's step count.
  opt.add_hook(std::make_shared<O::GradientNoise>(
      2.0, [](const Array& g, const O::GradientNoise& hook, const O::UpdateRule& rule, Generator&) {
        return Array::full(g.shape(), hook.eta() * static_cast<double>(rule.t + 1), g.dtype());
      }));
  m.W.set_grad(Variable(Array::zeros({6}, Dtype::float64)));
  opt.update();
  m.W.set_grad(Variable(Array::zeros({6}, Dtype::float64)));
  opt.update();
  for (std::size_t i = 0; i < kP0.size(); ++i) EXPECT_EQ(m.W.array().to_vector<double>()[i], kP0[i] - 2.0 - 4.0);

  expect_error<ValueError>([] { O::GradientNoise(-1.0); }, {"GradientNoise", "eta", "-1"});
  expect_error<ValueError>([] { O::GradientNoise(std::nan("")); }, {"GradientNoise", "eta", "nan"});
  expect_error<ValueError>([] { O::GradientNoise(1.0, nullptr); }, {"GradientNoise", "empty"});
  O::SGD bad(1.0);
  bad.setup(m);
  bad.add_hook(std::make_shared<O::GradientNoise>(1.0, [](const Array&, const O::GradientNoise&, const O::UpdateRule&,
                                                          Generator&) { return Array::zeros({2}, Dtype::float64); }));
  m.W.set_grad(Variable(Array::zeros({6}, Dtype::float64)));
  expect_error<ShapeError>([&] { bad.update(); }, {"GradientNoise", "/W", "(2,)", "(6,)"});
  O::SGD unset(1.0);
  expect_error<ValueError>([&] { O::GradientNoise(1.0)(unset); }, {"GradientNoise", "setup"});
}

}  // namespace
}  // namespace rensa
