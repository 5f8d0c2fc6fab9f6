#pragma once
/// \file
/// OptimizerStage: the extension point of Optimizer::update between the gradients and the update
/// rules, plus the moment before the first forward (rensa::mn's gradient averaging is a stage).

#include <functional>

namespace rensa::serializers {
class Serializer;
}

namespace rensa::optimizers {

class Optimizer;

/// A step that an Optimizer runs inside its own setup, update and serialize, so that the optimizer
/// object stays the user's (its hyperparameters, hooks, rules and counters need no forwarding). An
/// optimizer holds at most one stage (Optimizer::set_stage). The calls, in order:
///
///     setup(link):     rules are created, then on_setup
///     update(loss_fn): loss_fn(), after_forward (true: loss_fn() once more), gradients cleared,
///                      around_backward(backward), then what update() does
///     update():        after_backward (false: nothing more this step), hooks, t + 1, rules
///     serialize(s):    the optimizer's own state, then serialize(s)
///
/// So the optimizer's hooks (WeightDecay, GradientClipping, ...) see the gradients the stage left.
/// Every method gets the optimizer that runs it; a stage does not outlive its optimizer.
class OptimizerStage {
 public:
  virtual ~OptimizerStage() = default;
  /// The stage's class name, for messages ("MultiNodeStage").
  virtual const char* name() const = 0;

  /// After Optimizer::setup(link) has made the rules, before any forward; also from set_stage when
  /// the optimizer is set up already. The multi-node stage broadcasts rank 0's parameters here.
  virtual void on_setup(Optimizer& optimizer) { (void)optimizer; }
  /// update(loss_fn) only: after the forward, before backward. Return true to run the forward once
  /// more (for instance, parameters that this forward initialized lazily were replaced).
  virtual bool after_forward(Optimizer& optimizer) {
    (void)optimizer;
    return false;
  }
  /// update(loss_fn) only: runs `backward` (gradients are cleared already). A stage may arm gradient
  /// hooks (GradHook) for just this backward; it must call `backward` once and let its exceptions
  /// through.
  virtual void around_backward(Optimizer& optimizer, const std::function<void()>& backward) {
    (void)optimizer;
    backward();
  }
  /// Between backward and the update rules, in update() and update(loss_fn). The stage may replace
  /// the gradients (average them over ranks, apply last step's). Return false to skip this step's
  /// update: no hook, no rule, t unchanged.
  virtual bool after_backward(Optimizer& optimizer) {
    (void)optimizer;
    return true;
  }
  /// Saves or loads the stage's own state, after the optimizer's, with the same serializer; a stage
  /// puts its keys under a child of its own so they cannot meet the optimizer's.
  virtual void serialize(Optimizer& optimizer, serializers::Serializer& s) {
    (void)optimizer;
    (void)s;
  }
};

}  // namespace rensa::optimizers
