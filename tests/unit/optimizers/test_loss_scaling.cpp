// Loss scaling (Chainer's Optimizer.loss_scaling): a static scale changes nothing but the scale of
// backward's seed; the dynamic rule doubles the scale, skips a step with an inf or NaN gradient and
// halves it, then grows by 2^(1/interval); hooks see unscaled gradients; the state is saved.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "rensa/rensa.h"
#include "rensa/training.h"
#include "tests/unit/test_util.h"

namespace rensa {
namespace {

namespace F = functions;
using test::expect_error;

struct Model : Link {
  Variable W;
  Model() { W = add_param("W", Array::from_vector<double>({0.5, -1.0, 2.0})); }
};

// sum(W * x): the gradient of W is x.
Variable loss_of(Model& m, const std::vector<double>& x) {
  return F::sum(F::mul(m.W, Variable(Array::from_vector<double>(x))));
}

TEST(LossScaling, StaticScaleGivesTheSameUpdate) {
  Model a, b;
  optimizers::SGD plain(0.1), scaled(0.1);
  plain.setup(a);
  scaled.setup(b);
  scaled.set_loss_scale(1024.0);
  for (int step = 0; step < 3; ++step) {
    plain.update([&] { return loss_of(a, {1.0, 2.0, -3.0}); });
    scaled.update([&] { return loss_of(b, {1.0, 2.0, -3.0}); });
  }
  EXPECT_EQ(a.W.array().to_vector<double>(), b.W.array().to_vector<double>());
  EXPECT_EQ(b.W.grad().array().to_vector<double>(), (std::vector<double>{1.0, 2.0, -3.0}));  // unscaled
  EXPECT_EQ(scaled.loss_scale(), 1024.0);
  EXPECT_EQ(scaled.t(), 3);
}

TEST(LossScaling, DynamicRuleSkipsAndRescales) {
  Model m;
  optimizers::SGD opt(0.1);
  opt.setup(m);
  opt.loss_scaling(4);
  EXPECT_EQ(opt.loss_scale(), 1.0);
  const double inf = std::numeric_limits<double>::infinity();
  for (int step = 0; step < 3; ++step) opt.update([&] { return loss_of(m, {1.0, 1.0, 1.0}); });
  EXPECT_EQ(opt.loss_scale(), 8.0);  // doubled after each good step
  EXPECT_TRUE(opt.is_safe_to_update());
  const std::vector<double> before = m.W.array().to_vector<double>();
  // A forced overflow: the step is skipped and the scale halves.
  opt.update([&] { return loss_of(m, {1.0, inf, 1.0}); });
  EXPECT_FALSE(opt.is_safe_to_update());
  EXPECT_EQ(m.W.array().to_vector<double>(), before);
  EXPECT_EQ(opt.t(), 3);
  EXPECT_EQ(opt.loss_scale(), 4.0);
  // After an overflow the scale grows by 2^(1/interval) per good step.
  opt.update([&] { return loss_of(m, {1.0, 1.0, 1.0}); });
  EXPECT_TRUE(opt.is_safe_to_update());
  EXPECT_NEAR(*opt.loss_scale(), 4.0 * std::pow(2.0, 0.25), 1e-12);
  EXPECT_EQ(opt.t(), 4);
  // NaN too; the scale never goes below 1.
  for (int step = 0; step < 5; ++step) opt.update([&] { return loss_of(m, {std::nan(""), 1.0, 1.0}); });
  EXPECT_EQ(opt.loss_scale(), 1.0);
}

TEST(LossScaling, ScaleStaysBelowTheLargestFloat16) {
  Model m;
  optimizers::SGD opt(0.0);
  opt.setup(m);
  opt.loss_scaling();
  for (int step = 0; step < 20; ++step) opt.update([&] { return loss_of(m, {1.0, 1.0, 1.0}); });
  EXPECT_EQ(opt.loss_scale(), 65504.0);
}

struct RecordGrad : optimizers::OptimizerHook {
  const char* name() const override { return "record_grad"; }
  void operator()(optimizers::Optimizer& o) override {
    for (const Variable& p : o.target()->params()) seen = p.grad().array().to_vector<double>();
  }
  std::vector<double> seen;
};

TEST(LossScaling, HooksSeeUnscaledGradients) {
  Model m;
  optimizers::SGD opt(0.1);
  opt.setup(m);
  auto hook = std::make_shared<RecordGrad>();
  opt.add_hook(hook);
  opt.set_loss_scale(256.0);
  opt.update([&] { return loss_of(m, {1.0, -2.0, 0.5}); });
  EXPECT_EQ(hook->seen, (std::vector<double>{1.0, -2.0, 0.5}));
}

TEST(LossScaling, StateIsSaved) {
  Model m;
  optimizers::SGD opt(0.1);
  opt.setup(m);
  opt.loss_scaling(10);
  opt.update([&] { return loss_of(m, {1.0, 1.0, 1.0}); });
  opt.update([&] { return loss_of(m, {1.0, std::nan(""), 1.0}); });
  serializers::DictionarySerializer s;
  opt.serialize(s);
  Model m2;
  optimizers::SGD again(0.1);
  again.setup(m2);
  again.loss_scaling(10);
  serializers::DictionaryDeserializer d(s.target(), "the saved optimizer");
  again.serialize(d);
  EXPECT_EQ(again.loss_scale(), opt.loss_scale());
  // Both continue alike: isnan_ever came back too (growth by 2^(1/10), not 2).
  opt.update([&] { return loss_of(m, {1.0, 1.0, 1.0}); });
  again.update([&] { return loss_of(m2, {1.0, 1.0, 1.0}); });
  EXPECT_EQ(again.loss_scale(), opt.loss_scale());
}

TEST(LossScaling, BadArgumentsAndTheUpdaterOption) {
  Model m;
  optimizers::SGD opt(0.1);
  opt.setup(m);
  expect_error<ValueError>([&] { opt.loss_scaling(0); }, {"SGD", "interval", "0"});
  expect_error<ValueError>([&] { opt.set_loss_scale(-1.0); }, {"SGD", "positive", "-1"});
  expect_error<ValueError>([&] { opt.set_loss_scale(std::nan("")); }, {"SGD", "positive"});
  EXPECT_FALSE(opt.loss_scale().has_value());
  auto data = std::make_shared<datasets::TupleDataset>(std::vector<Array>{Array::zeros({4, 3}, Dtype::float64)});
  iterators::SerialIterator it(data, 2);
  training::StandardUpdater updater(it, opt, {.loss_scale = 128.0});
  EXPECT_EQ(opt.loss_scale(), 128.0);
  expect_error<ValueError>([&] { training::StandardUpdater(it, opt, {.loss_scale = 0.0}); }, {"positive"});
}

// The programs below ran under Chainer 7.8.1 (numpy float32); the expected values are its.
struct Pair : Link {
  Variable p;
  Pair() { p = add_param("p", Array::from_vector<float>({1.0f, 2.0f})); }
};

std::vector<float> values(const Variable& v) { return v.array().to_vector<float>(); }

// Regression: a hand-written backward was divided by the scale it never applied (1/scale too small).
TEST(LossScaling, AHandWrittenBackwardIsNotUnscaled) {
  Pair m;
  optimizers::SGD opt(0.1);
  opt.setup(m);
  opt.loss_scaling();
  const std::vector<std::vector<float>> chainer = {
      {0.800000011920929f, 1.600000023841858f}, {0.6399999856948853f, 1.2799999713897705f},
      {0.5119999647140503f, 1.0239999294281006f}};
  for (std::size_t step = 0; step < 3; ++step) {
    Variable loss = F::sum(F::mul(m.p, m.p));
    m.cleargrads();
    loss.backward();
    EXPECT_FALSE(m.p.grad_loss_scale().has_value());
    opt.update();
    EXPECT_EQ(values(m.p), chainer[step]) << "step " << step;
    EXPECT_EQ(opt.loss_scale(), std::pow(2.0, static_cast<double>(step + 1)));  // still dynamic
  }
}

TEST(LossScaling, AHandWrittenScaledBackwardIsUnscaledOnce) {
  Pair m;
  optimizers::SGD opt(0.1);
  opt.setup(m);
  opt.set_loss_scale(8.0);
  Variable loss = F::sum(F::mul(m.p, m.p));
  loss.backward({.loss_scale = opt.loss_scale()});
  EXPECT_EQ(values(m.p.grad()), (std::vector<float>{16.0f, 32.0f}));  // 8 * 2p
  EXPECT_EQ(m.p.grad_loss_scale(), 8.0);
  opt.update();
  EXPECT_EQ(values(m.p), (std::vector<float>{0.800000011920929f, 1.600000023841858f}));
  EXPECT_FALSE(m.p.grad_loss_scale().has_value());  // divided once: a second update sees none
  EXPECT_EQ(opt.loss_scale(), 8.0);                 // static
  // A gradient set by hand is not multiplied; a bad scale is refused.
  Variable y = F::sum(m.p);
  y.set_grad(Variable(Array::scalar(1.0f)));
  m.cleargrads();
  y.backward({.loss_scale = 4.0});
  EXPECT_EQ(values(m.p.grad()), (std::vector<float>{1.0f, 1.0f}));
  EXPECT_EQ(m.p.grad_loss_scale(), 4.0);
  expect_error<ValueError>([&] { F::sum(m.p).backward({.loss_scale = 0.0}); }, {"backward", "loss_scale", "0"});
  expect_error<ValueError>([&] { m.p.set_grad_loss_scale(-1.0); }, {"set_grad_loss_scale", "-1"});
}

// Regression: set_loss_scale after loss_scaling() made the rule static, so an overflow reached the
// parameters; Chainer stays dynamic, skips the step and halves the scale.
TEST(LossScaling, SetLossScaleKeepsTheRuleDynamic) {
  Pair m;
  optimizers::SGD opt(0.1);
  opt.setup(m);
  opt.loss_scaling();
  opt.set_loss_scale(1024.0);
  const Variable big(Array::scalar(1e36f));
  opt.update([&] { return F::sum(F::mul(m.p, big)); });  // 1024 * 1e36 overflows float32
  EXPECT_FALSE(opt.is_safe_to_update());
  EXPECT_EQ(values(m.p), (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(opt.loss_scale(), 512.0);
  opt.update([&] { return F::sum(F::mul(m.p, m.p)); });
  EXPECT_EQ(values(m.p), (std::vector<float>{0.800000011920929f, 1.600000023841858f}));
  EXPECT_NEAR(*opt.loss_scale(), 512.3550143808413, 1e-9);
}

// Regression: the state was dropped without a word, and the resumed run trained unscaled.
TEST(LossScaling, LoadingItsStateIntoAnOptimizerWithoutItIsAnError) {
  Model m;
  optimizers::SGD opt(0.1);
  opt.setup(m);
  opt.loss_scaling();
  opt.update([&] { return loss_of(m, {1.0, 1.0, 1.0}); });
  serializers::DictionarySerializer s;
  opt.serialize(s);
  Model m2;
  optimizers::SGD plain(0.1);
  plain.setup(m2);
  serializers::DictionaryDeserializer d(s.target(), "the saved optimizer");
  expect_error<ValueError>([&] { plain.serialize(d); }, {"SGD", "loss-scaling state", "scale 2", "loss_scaling()"});
}

}  // namespace
}  // namespace rensa
