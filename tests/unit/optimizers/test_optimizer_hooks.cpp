// Optimizer hooks: each one's effect on the gradients, their order and registration errors.
#include <cmath>
#include <memory>
#include <vector>

#include "rensa/links/link.h"
#include "rensa/optimizers/hooks.h"
#include "rensa/optimizers/sgd.h"
#include "tests/unit/test_util.h"

namespace rensa {
namespace {

namespace O = optimizers;
using test::expect_error;
using test::randn;
using Vec = std::vector<double>;

// Two parameters with gradients, and a third without one.
struct Model {
  Chain root;
  Link l1;
  Variable W, b, nograd;
  explicit Model(Dtype dtype = Dtype::float64, Device device = Device::cpu()) {
    W = root.add_param("W", randn({3, 4}, Dtype::float64, 1).astype(dtype).to(device));
    b = l1.add_param("b", randn({5}, Dtype::float64, 2).astype(dtype).to(device));
    nograd = l1.add_param("nograd", randn({2}, Dtype::float64, 3).astype(dtype).to(device));
    root.add_link("l1", l1);
    W.set_grad(Variable(randn({3, 4}, Dtype::float64, 4).astype(dtype).to(device)));
    b.set_grad(Variable(randn({5}, Dtype::float64, 5).astype(dtype).to(device)));
  }
};

Vec vec(const Variable& v) {
  return v.array().to_vector<double>();
}

// Runs only the hooks of `opt` (an SGD with lr 0 leaves the parameters alone).
void run_hooks(O::Optimizer& opt) {
  opt.set_hyperparam("lr", 0.0);
  opt.update();
}

TEST(OptimizerHooks, WeightDecayAddsRateTimesParam) {
  for (const Device device : {Device::cpu(), Device::reference()}) {
    Model m(Dtype::float64, device);
    const Vec w = vec(m.W), gw = vec(m.W.grad()), b = vec(m.b), gb = vec(m.b.grad());
    O::SGD opt;
    opt.setup(m.root);
    opt.add_hook(std::make_shared<O::WeightDecay>(0.3));
    run_hooks(opt);
    const Vec gw1 = vec(m.W.grad()), gb1 = vec(m.b.grad());
    for (std::size_t i = 0; i < w.size(); ++i) EXPECT_DOUBLE_EQ(gw1[i], gw[i] + 0.3 * w[i]);
    for (std::size_t i = 0; i < b.size(); ++i) EXPECT_DOUBLE_EQ(gb1[i], gb[i] + 0.3 * b[i]);
    EXPECT_TRUE(m.nograd.grad().is_null());
    EXPECT_EQ(vec(m.W), w);
  }
}

TEST(OptimizerHooks, LassoAddsRateTimesSign) {
  Model m;
  m.W.array().assign(Array::from_vector<double>({-2, 0, 3, -1, 1, 0.5, -0.5, 0, 4, -4, 2, 1}, {3, 4}));
  const Vec w = vec(m.W), gw = vec(m.W.grad());
  O::SGD opt;
  opt.setup(m.root);
  opt.add_hook(std::make_shared<O::Lasso>(0.1));
  run_hooks(opt);
  const Vec gw1 = vec(m.W.grad());
  for (std::size_t i = 0; i < w.size(); ++i) {
    const double sign = w[i] > 0 ? 1.0 : w[i] < 0 ? -1.0 : 0.0;
    EXPECT_DOUBLE_EQ(gw1[i], gw[i] + 0.1 * sign) << i;
  }
}

double global_norm(const Model& m) {
  double s = 0;
  for (const Variable& v : {m.W, m.b}) {
    for (double g : vec(v.grad())) s += g * g;
  }
  return std::sqrt(s);
}

TEST(OptimizerHooks, GradientClippingScalesByGlobalNorm) {
  Model m;
  const double norm = global_norm(m);
  const Vec gw = vec(m.W.grad()), gb = vec(m.b.grad());
  O::SGD opt;
  opt.setup(m.root);
  auto hook = std::make_shared<O::GradientClipping>(norm / 2);
  opt.add_hook(hook);
  run_hooks(opt);
  EXPECT_NEAR(hook->last_norm(), norm, 1e-12);
  EXPECT_NEAR(global_norm(m), norm / 2, 1e-12);
  const Vec gw1 = vec(m.W.grad()), gb1 = vec(m.b.grad());
  for (std::size_t i = 0; i < gw.size(); ++i) EXPECT_NEAR(gw1[i], gw[i] * 0.5, 1e-14);
  for (std::size_t i = 0; i < gb.size(); ++i) EXPECT_NEAR(gb1[i], gb[i] * 0.5, 1e-14);

  // Below the threshold nothing changes.
  Model m2;
  const Vec before = vec(m2.W.grad());
  O::SGD opt2;
  opt2.setup(m2.root);
  opt2.add_hook(std::make_shared<O::GradientClipping>(global_norm(m2) * 1.01));
  run_hooks(opt2);
  EXPECT_EQ(vec(m2.W.grad()), before);

  expect_error<ValueError>([] { O::GradientClipping bad(0.0); }, {"GradientClipping", "positive", "0"});
}

TEST(OptimizerHooks, GradientClippingSixteenBitDoesNotOverflow) {
  // Squares of 300 overflow float16; the norm is computed in float32.
  Link l;
  Variable w = l.add_param("w", Array::full({4}, 1.0, Dtype::float16));
  w.set_grad(Variable(Array::full({4}, 300.0, Dtype::float16)));
  O::SGD opt;
  opt.setup(l);
  auto hook = std::make_shared<O::GradientClipping>(60.0);
  opt.add_hook(hook);
  run_hooks(opt);
  EXPECT_NEAR(hook->last_norm(), 600.0, 1e-9);
  for (double g : vec(w.grad())) EXPECT_NEAR(g, 30.0, 0.05);
}

TEST(OptimizerHooks, GradientHardClippingClipsElements) {
  Model m;
  const Vec gw = vec(m.W.grad());
  O::SGD opt;
  opt.setup(m.root);
  opt.add_hook(std::make_shared<O::GradientHardClipping>(-0.5, 0.25));
  run_hooks(opt);
  const Vec gw1 = vec(m.W.grad());
  for (std::size_t i = 0; i < gw.size(); ++i) EXPECT_EQ(gw1[i], std::min(0.25, std::max(-0.5, gw[i])));
  expect_error<ValueError>([] { O::GradientHardClipping bad(1.0, -1.0); }, {"GradientHardClipping", "1", "-1"});
}

// Hooks run before the update, in the order added: decay then clipping differs from the reverse.
TEST(OptimizerHooks, RunBeforeUpdateInOrder) {
  Model m;
  const Vec w = vec(m.W), gw = vec(m.W.grad());
  O::SGD opt(0.1);
  opt.setup(m.root);
  opt.add_hook(std::make_shared<O::WeightDecay>(0.5));
  opt.add_hook(std::make_shared<O::GradientHardClipping>(-0.2, 0.2));
  ASSERT_EQ(opt.hooks().size(), 2u);
  EXPECT_STREQ(opt.hooks()[0]->name(), "WeightDecay");
  opt.update();
  const Vec w1 = vec(m.W);
  for (std::size_t i = 0; i < w.size(); ++i) {
    const double g = std::min(0.2, std::max(-0.2, gw[i] + 0.5 * w[i]));
    EXPECT_DOUBLE_EQ(w1[i], w[i] - 0.1 * g);
  }
}

TEST(OptimizerHooks, RegistrationErrors) {
  O::SGD opt;
  opt.add_hook(std::make_shared<O::WeightDecay>(0.1));
  expect_error<ValueError>([&] { opt.add_hook(std::make_shared<O::WeightDecay>(0.2)); },
                           {"SGD::add_hook", "'WeightDecay'", "already"});
  expect_error<ValueError>([&] { opt.add_hook(nullptr); }, {"SGD::add_hook", "null"});
  expect_error<ValueError>([&] { opt.remove_hook("Lasso"); }, {"SGD::remove_hook", "'Lasso'", "[WeightDecay]"});
  opt.remove_hook("WeightDecay");
  EXPECT_TRUE(opt.hooks().empty());
  opt.add_hook(std::make_shared<O::WeightDecay>(0.2));
  EXPECT_EQ(opt.hooks().size(), 1u);
}

}  // namespace
}  // namespace rensa
