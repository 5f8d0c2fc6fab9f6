#pragma once
/// \file
/// Optimizers (Chainer's model): an Optimizer holds named hyperparameters and one UpdateRule per
/// parameter (with its state), and runs hooks on the gradients before updating. A stage
/// (optimizer_stage.h) can run between backward and the update.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rensa/core/variable.h"
#include "rensa/links/link.h"
#include "rensa/optimizers/optimizer_stage.h"
#include "rensa/serializers/serializer.h"

namespace rensa::optimizers {

class Optimizer;

/// Per-parameter update: owns the parameter's state arrays (moments, ...). `update` applies one
/// step in place, in one fused pass over the parameter's buffer.
class UpdateRule {
 public:
  virtual ~UpdateRule() = default;
  /// Updates `param` from its gradient (a null gradient skips the parameter).
  virtual void update(const Variable& param) = 0;
  /// Saves/loads the state (moments, step count).
  virtual void serialize(serializers::Serializer& s) = 0;
  /// The state arrays by their serialized names ("m", "v", ...); empty before the first update.
  virtual std::vector<std::pair<std::string, Array>> state() const { return {}; }
  /// Number of updates applied.
  int64_t t = 0;
  /// False to freeze the parameter.
  bool enabled = true;
};

/// Runs on the whole model's gradients before the update (WeightDecay, GradientClipping, ...).
class OptimizerHook {
 public:
  virtual ~OptimizerHook() = default;
  virtual const char* name() const = 0;
  /// Called with the optimizer after gradients are computed, before any parameter is updated.
  virtual void operator()(Optimizer& optimizer) = 0;
};

/// Base of all optimizers. Subclasses declare hyperparameters and make update rules; other steps
/// of an update (averaging gradients over ranks, ...) plug in as a stage (set_stage).
class Optimizer {
 public:
  Optimizer() = default;
  virtual ~Optimizer() = default;
  // Rules refer back to their optimizer's hyperparameters: an optimizer stays where it was made.
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// Attaches the optimizer to `link` (kept by reference: it must outlive the optimizer) and
  /// creates a rule for each of its parameters; rules of a previous target are dropped.
  /// Then runs the stage's on_setup.
  void setup(Link& link);
  /// The link being optimized (nullptr before setup).
  Link* target() const { return target_; }

  /// Updates every parameter from its current gradient: the stage's after_backward (which may skip
  /// the step), loss scaling's unscale and check (which may skip it too), hooks, then t is
  /// incremented and each initialized parameter with a gradient goes through its rule (parameters
  /// without a gradient are left alone). ValueError before setup().
  void update();
  /// Computes the loss with `loss_fn`, clears gradients, backpropagates, then update(); a stage
  /// sees the forward and the backward (OptimizerStage). ValueError for a null loss.
  void update(const std::function<Variable()>& loss_fn);

  /// Adds a hook, run in the order added. ValueError for a null hook or a duplicate name.
  void add_hook(std::shared_ptr<OptimizerHook> hook);
  /// Removes the hook `name`; ValueError naming the registered hooks if there is none.
  void remove_hook(const std::string& name);
  /// The hooks in the order they run.
  const std::vector<std::shared_ptr<OptimizerHook>>& hooks() const { return hooks_; }

  /// Hyperparameter `name` ("lr", "alpha", "momentum", ...); ValueError naming the valid ones.
  /// Booleans (Adam's "amsgrad") read as 0 or 1.
  double hyperparam(const std::string& name) const;
  /// Changes hyperparameter `name` (extensions such as ExponentialShift use this); it takes effect
  /// at the next update. ValueError naming the valid ones for an unknown name.
  void set_hyperparam(const std::string& name, double value);
  bool has_hyperparam(const std::string& name) const;
  /// All hyperparameters by name.
  const std::map<std::string, double>& hyperparams() const { return hyperparams_; }
  /// The learning rate in effect (Adam's depends on t); what observe_lr reports. ValueError for an
  /// optimizer without "lr" that does not override it.
  virtual double lr() const;

  /// Number of updates applied so far (a step that the stage skips does not count).
  int64_t t() const { return t_; }
  /// Epochs seen (advanced by new_epoch()).
  int64_t epoch() const { return epoch_; }
  void new_epoch() { ++epoch_; }

  /// The rule of a parameter of the target (created on setup, or on first use for parameters
  /// added later); nullptr for a variable that is not a parameter of the target.
  UpdateRule* rule(const Variable& param);

  /// Saves/loads t, epoch, hyperparameters (child "hyperparam") and every rule's state, under the
  /// parameter's path ("l1/W/m" for Adam's first moment of parameter "/l1/W"), the loss scaling
  /// state when loss scaling is on (child "loss_scaling"), then the stage's state.
  void serialize(serializers::Serializer& s);

  /// Loss scaling (Chainer's Optimizer.loss_scaling), for 16-bit gradients that would underflow:
  /// update(loss_fn) seeds backward with the scale instead of 1, and update() divides every
  /// gradient by it before the hooks and rules. `scale` set: a static scale (ValueError unless
  /// positive). `scale` unset: Chainer's dynamic rule, starting at 1: after each update the scale
  /// doubles until the first step with an inf or NaN gradient, then grows by 2^(1/interval) per good
  /// step; a step with an inf or NaN gradient is skipped (no hooks, no rules, t unchanged) and halves
  /// the scale; the scale stays within [1, 65504]. ValueError unless interval >= 1. Under a
  /// multi-node stage the check runs on the averaged gradients, so every rank decides alike.
  void loss_scaling(int64_t interval = 1000, std::optional<double> scale = std::nullopt);
  /// loss_scaling with a static scale (StandardUpdater's loss_scale).
  void set_loss_scale(double scale) { loss_scaling(1000, scale); }
  /// The current scale, or unset when loss scaling is off.
  std::optional<double> loss_scale() const { return loss_scale_; }
  /// False when the last update() found an inf or NaN gradient under dynamic loss scaling (and so
  /// skipped the step).
  bool is_safe_to_update() const { return !loss_scaling_isnan_; }

  /// Installs `stage` (null removes the current one, which is then destroyed). On an optimizer set
  /// up already, the stage's on_setup runs now. ValueError when a stage is installed already.
  void set_stage(std::unique_ptr<OptimizerStage> stage);
  /// The installed stage, or nullptr.
  OptimizerStage* stage() const { return stage_.get(); }

 protected:
  /// Declares a hyperparameter with its default; returns its slot, which stays valid for the
  /// optimizer's lifetime (rules read hyperparameters through it at each update).
  const double* declare_hyperparam(const std::string& name, double value);
  virtual std::unique_ptr<UpdateRule> create_update_rule() = 0;
  /// Calls fn(path, param, rule) for each parameter, creating rules as needed.
  void for_each_param(const std::function<void(const std::string&, const Variable&, UpdateRule&)>& fn);

  std::map<std::string, double> hyperparams_;
  /// The class name used in error messages ("Adam", ...).
  const char* optimizer_name_ = "Optimizer";
  Link* target_ = nullptr;
  int64_t t_ = 0;
  int64_t epoch_ = 0;

 private:
  void serialize_rules(serializers::Serializer& s);

  // Divides the gradients by the loss scale; under the dynamic rule first checks them, and returns
  // false (the step is skipped) when one is not finite.
  bool unscale_gradients();
  void update_loss_scale();

  std::vector<std::shared_ptr<OptimizerHook>> hooks_;
  std::map<VariableId, std::unique_ptr<UpdateRule>> rules_;
  std::optional<double> loss_scale_;
  bool loss_scaling_dynamic_ = false, loss_scaling_isnan_ = false, loss_scaling_isnan_ever_ = false;
  double loss_scaling_multiplier_ = 2.0;
  std::unique_ptr<OptimizerStage> stage_;
};

}  // namespace rensa::optimizers
