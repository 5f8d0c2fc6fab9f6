// OptimizerStage, the extension point of Optimizer between backward and the update rules: when each
// call comes, that the hooks and rules see the gradients the stage left, that a stage can rerun the
// forward or skip a step, and that the optimizer's own accessors and serialization are unchanged.
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "rensa/links/link.h"
#include "rensa/optimizers/adam.h"
#include "rensa/optimizers/hooks.h"
#include "rensa/optimizers/sgd.h"
#include "rensa/rensa.h"
#include "rensa/serializers/npz.h"
#include "tests/unit/test_util.h"

namespace rensa {
namespace {

namespace F = functions;
namespace O = optimizers;
using Log = std::vector<std::string>;

// Logs every call into a shared log and doubles the gradients in after_backward.
struct CountingStage : O::OptimizerStage {
  explicit CountingStage(std::shared_ptr<Log> log) : log(std::move(log)) {}
  ~CountingStage() override { log->push_back("destroyed"); }
  const char* name() const override { return "CountingStage"; }
  void on_setup(O::Optimizer&) override { log->push_back("on_setup"); }
  bool after_forward(O::Optimizer&) override {
    log->push_back("after_forward");
    return forwards_to_repeat-- > 0;
  }
  void around_backward(O::Optimizer&, const std::function<void()>& backward) override {
    log->push_back("backward>");
    backward();
    log->push_back("backward<");
  }
  bool after_backward(O::Optimizer& optimizer) override {
    log->push_back("after_backward");
    ++calls;
    if (!apply) return false;
    for (const Variable& p : optimizer.target()->params(false)) {
      if (!p.grad().is_null()) p.set_grad(Variable(F::mul(p.grad(), 2.0).array()));
    }
    return true;
  }
  void serialize(O::Optimizer&, serializers::Serializer& s) override { s.child("_counting").scalar("calls", calls); }

  std::shared_ptr<Log> log;
  int forwards_to_repeat = 0;
  bool apply = true;
  int64_t calls = 0;
};

// Logs its call and the gradient of `w` it sees.
struct GradLogHook : O::OptimizerHook {
  GradLogHook(std::shared_ptr<Log> log, Variable w) : log(std::move(log)), w(std::move(w)) {}
  const char* name() const override { return "GradLogHook"; }
  void operator()(O::Optimizer&) override {
    log->push_back("hook");
    seen = w.grad().array().to_vector<double>();
  }
  std::shared_ptr<Log> log;
  Variable w;
  std::vector<double> seen;
};

struct Model {
  Chain root;
  Variable w = root.add_param("w", Array::full({2}, 1.0, Dtype::float32));
  Variable loss() const { return F::sum(w * 3.0); }
};

struct Fixture {
  std::shared_ptr<Log> log = std::make_shared<Log>();
  Model model;
  O::SGD opt{1.0};
  CountingStage* stage = nullptr;
  std::shared_ptr<GradLogHook> hook = std::make_shared<GradLogHook>(log, model.w);
  Fixture() {
    auto s = std::make_unique<CountingStage>(log);
    stage = s.get();
    opt.set_stage(std::move(s));
    opt.add_hook(hook);
    opt.setup(model.root);
  }
  std::function<Variable()> logged_loss() {
    return [this] {
      log->push_back("forward");
      return model.loss();
    };
  }
};

TEST(OptimizerStage, CallsComeInOrderAndHooksSeeTheStagesGradients) {
  Fixture f;
  EXPECT_EQ(*f.log, (Log{"on_setup"}));
  f.log->clear();
  f.opt.update(f.logged_loss());
  EXPECT_EQ(*f.log, (Log{"forward", "after_forward", "backward>", "backward<", "after_backward", "hook"}));
  // d(sum(3 w))/dw = 3, doubled by the stage before the hook and the rule (lr 1).
  EXPECT_EQ(f.hook->seen, (std::vector<double>{6, 6}));
  EXPECT_EQ(f.model.w.array().to_vector<double>(), (std::vector<double>{-5, -5}));
  EXPECT_EQ(f.opt.t(), 1);
  EXPECT_EQ(f.opt.rule(f.model.w)->t, 1);

  // update() after the caller's own backward: only after_backward, then the update.
  f.log->clear();
  f.model.root.cleargrads();
  f.model.loss().backward();
  f.opt.update();
  EXPECT_EQ(*f.log, (Log{"after_backward", "hook"}));
  EXPECT_EQ(f.model.w.array().to_vector<double>(), (std::vector<double>{-11, -11}));
  EXPECT_EQ(f.opt.t(), 2);
}

TEST(OptimizerStage, AfterForwardCanRunTheForwardAgain) {
  Fixture f;
  f.stage->forwards_to_repeat = 1;
  f.log->clear();
  f.opt.update(f.logged_loss());
  // Asked once: the forward runs twice, after_forward is not asked again.
  EXPECT_EQ(*f.log, (Log{"forward", "after_forward", "forward", "backward>", "backward<", "after_backward", "hook"}));
  EXPECT_EQ(f.opt.t(), 1);
}

TEST(OptimizerStage, AfterBackwardCanSkipTheStep) {
  Fixture f;
  f.stage->apply = false;
  f.log->clear();
  f.opt.update(f.logged_loss());
  EXPECT_EQ(f.log->back(), "after_backward");  // no hook
  EXPECT_EQ(f.model.w.array().to_vector<double>(), (std::vector<double>{1, 1}));
  EXPECT_EQ(f.opt.t(), 0);
  EXPECT_EQ(f.opt.rule(f.model.w)->t, 0);
}

TEST(OptimizerStage, BackwardErrorsPassThroughTheStage) {
  Fixture f;
  f.log->clear();
  // A loss of two elements has no implicit gradient: backward throws inside around_backward.
  EXPECT_THROW(f.opt.update([&] { return f.model.w * 3.0; }), ShapeError);
  EXPECT_EQ(*f.log, (Log{"after_forward", "backward>"}));
  EXPECT_EQ(f.opt.t(), 0);
}

TEST(OptimizerStage, SetStage) {
  auto log = std::make_shared<Log>();
  Model model;
  O::SGD opt(0.1);
  EXPECT_EQ(opt.stage(), nullptr);
  opt.setup(model.root);
  // On an optimizer set up already, on_setup runs at once.
  auto owned = std::make_unique<CountingStage>(log);
  CountingStage* stage = owned.get();
  opt.set_stage(std::move(owned));
  EXPECT_EQ(opt.stage(), stage);
  EXPECT_EQ(*log, (Log{"on_setup"}));
  log->clear();
  rensa::test::expect_error<ValueError>([&] { opt.set_stage(std::make_unique<CountingStage>(log)); },
                                        {"SGD::set_stage", "CountingStage", "installed already"});
  // The refused stage was destroyed; removing the installed one destroys it too.
  EXPECT_EQ(*log, (Log{"destroyed"}));
  opt.set_stage(nullptr);
  EXPECT_EQ(opt.stage(), nullptr);
  EXPECT_EQ(*log, (Log{"destroyed", "destroyed"}));
  // Without a stage the optimizer is as before.
  opt.update([&] { return model.loss(); });
  for (double v : model.w.array().to_vector<double>()) EXPECT_NEAR(v, 1 - 0.3, 1e-6);
}

// Hyperparameters, hooks, lr(), t, epoch and serialization are the optimizer's own with a stage:
// nothing is forwarded, so a subclass's override (Adam's lr, which depends on t) holds too.
TEST(OptimizerStage, TheOptimizersStateIsItsOwn) {
  auto log = std::make_shared<Log>();
  Model model, plain_model;
  O::Adam opt(0.01), plain(0.01);
  opt.set_stage(std::make_unique<CountingStage>(log));
  opt.setup(model.root);
  plain.setup(plain_model.root);
  opt.set_hyperparam("beta1", 0.8);
  plain.set_hyperparam("beta1", 0.8);
  EXPECT_DOUBLE_EQ(opt.hyperparam("beta1"), 0.8);
  EXPECT_TRUE(opt.has_hyperparam("eps"));
  EXPECT_EQ(opt.hyperparams(), plain.hyperparams());
  opt.add_hook(std::make_shared<O::WeightDecay>(1e-3));
  EXPECT_EQ(opt.hooks().size(), 1u);
  opt.remove_hook("WeightDecay");
  EXPECT_TRUE(opt.hooks().empty());
  for (int i = 0; i < 3; ++i) {
    opt.update([&] { return model.loss(); });
    plain.update([&] { return F::sum(plain_model.w * 6.0); });  // the gradient the stage makes
  }
  opt.new_epoch();
  EXPECT_EQ(opt.t(), 3);
  EXPECT_EQ(opt.epoch(), 1);
  EXPECT_DOUBLE_EQ(opt.lr(), plain.lr());
  EXPECT_EQ(model.w.array().to_vector<double>(), plain_model.w.array().to_vector<double>());

  // The stage's keys come beside the optimizer's, which are those of the optimizer alone.
  serializers::DictionarySerializer saved, saved_plain;
  opt.serialize(saved);
  plain.serialize(saved_plain);
  std::set<std::string> keys, plain_keys;
  for (const auto& [k, v] : saved.target()) keys.insert(k);
  for (const auto& [k, v] : saved_plain.target()) plain_keys.insert(k);
  plain_keys.insert("_counting/calls");
  EXPECT_EQ(keys, plain_keys);

  // A round trip restores the optimizer and the stage.
  std::map<std::string, Array> values;
  for (const auto& [k, v] : saved.target()) values[k] = v.copy();
  Model model2;
  O::Adam opt2(0.01);
  auto owned = std::make_unique<CountingStage>(log);
  CountingStage* stage2 = owned.get();
  opt2.set_stage(std::move(owned));
  opt2.setup(model2.root);
  serializers::DictionaryDeserializer d(std::move(values), "memory");
  opt2.serialize(d);
  EXPECT_EQ(opt2.t(), 3);
  EXPECT_EQ(opt2.epoch(), 1);
  EXPECT_DOUBLE_EQ(opt2.hyperparam("beta1"), 0.8);
  EXPECT_EQ(stage2->calls, 3);
  EXPECT_EQ(opt2.rule(model2.w)->t, 3);
}

}  // namespace
}  // namespace rensa
