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
///
/// Float32 master weights (Chainer's use_fp32_update): with use_fp32_update on, a float16 or
/// bfloat16 parameter is updated through a float32 copy of it, the master, kept by the rule. Each
/// update converts the 16-bit gradient to float32, runs the rule's step on the master (its state
/// arrays are then float32 too), and writes the master, rounded to nearest even, back into the
/// parameter's own storage (views and the model see it). Steps too small for 16 bits accumulate in
/// the master. The master is made from the parameter at its first such update, is saved by the
/// optimizer beside the rule's state (key "fp32_param"), and refreshes the parameter when loaded.
/// float32 and float64 parameters ignore the flag.
class UpdateRule {
 public:
  virtual ~UpdateRule() = default;
  /// Updates `param` from its gradient (a null gradient or a disabled rule skips the parameter);
  /// through the float32 master when use_fp32_update is on and `param` is 16-bit.
  void update(const Variable& param);
  /// Saves/loads the state (moments, step count). The master is saved by Optimizer::serialize.
  virtual void serialize(serializers::Serializer& s) = 0;
  /// The state arrays by their serialized names ("m", "v", ...); empty before the first update.
  /// The float32 master is not among them (see fp32_param()).
  virtual std::vector<std::pair<std::string, Array>> state() const { return {}; }

  /// Turns float32 master weights on or off for this rule (16-bit parameters only; see above).
  /// Turning it off drops the master: later updates run in the parameter's dtype, and state arrays
  /// made in float32 are converted back at the next update.
  void use_fp32_update(bool flag = true);
  /// Whether use_fp32_update is on.
  bool uses_fp32_update() const { return use_fp32_update_; }
  /// The float32 master of a 16-bit parameter (same shape, contiguous), or nullptr when there is
  /// none: use_fp32_update is off, the parameter is float32 or float64, or no update (or load) has
  /// made it yet.
  const Array* fp32_param() const { return fp32_param_.is_null() ? nullptr : &fp32_param_; }

  /// Number of updates applied.
  int64_t t = 0;
  /// False to freeze the parameter.
  bool enabled = true;

 protected:
  /// One step of the rule on `param` in place. Under use_fp32_update, `param` is a float32
  /// Variable over the master, named like the parameter, with the float32 gradient; it is not the
  /// parameter's own Variable.
  virtual void update_core(const Variable& param) = 0;

 private:
  friend class Optimizer;
  // Saves the master under "fp32_param"; on load, adopts it (when the rule uses fp32 update and
  // `param` is an initialized 16-bit parameter of the same shape) and writes it, rounded, into
  // `param`; otherwise the master is dropped.
  void serialize_fp32_param(serializers::Serializer& s, const Variable& param);

  bool use_fp32_update_ = false;
  Array fp32_param_;
};

/// Runs on the whole model's gradients before the update (WeightDecay, GradientClipping, ...).
class OptimizerHook {
 public:
  virtual ~OptimizerHook() = default;
  /// The hook's name, unique among an optimizer's hooks (Chainer's hook.name).
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
  /// True when the optimizer declares hyperparameter `name`.
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
  /// Advances epoch() by one (the updater calls it when its iterator starts a new epoch).
  void new_epoch() { ++epoch_; }

  /// The rule of a parameter of the target (created on setup, or on first use for parameters
  /// added later); nullptr for a variable that is not a parameter of the target.
  UpdateRule* rule(const Variable& param);

  /// Saves/loads t, epoch, hyperparameters (child "hyperparam") and every rule's state, under the
  /// parameter's path ("l1/W/m" for Adam's first moment of parameter "/l1/W"; "l1/W/fp32_param"
  /// for its float32 master under use_fp32_update), the loss scaling
  /// state when loss scaling is on (child "loss_scaling"; loading it into an optimizer without loss
  /// scaling is a ValueError), then the stage's state.
  void serialize(serializers::Serializer& s);

  /// Loss scaling (Chainer's Optimizer.loss_scaling), for 16-bit gradients that would underflow:
  /// update(loss_fn) runs backward with BackwardOptions::loss_scale (the seed is the scale instead of
  /// 1), and update() divides each gradient by the scale its backward recorded
  /// (Variable::grad_loss_scale) before the hooks and rules; a gradient of a backward without
  /// loss_scale (a hand-written `loss.backward(); optimizer.update()`) is taken as it is. To scale a
  /// hand-written backward: `loss.backward({.loss_scale = optimizer.loss_scale()})`.
  /// `scale` set: sets the scale only (ValueError unless positive): static when the rule was not
  /// dynamic, else the dynamic rule goes on from it, as Chainer's set_loss_scale. `scale` unset:
  /// Chainer's dynamic rule, starting at 1: after each update the scale
  /// doubles until the first step with an inf or NaN gradient, then grows by 2^(1/interval) per good
  /// step; a step with an inf or NaN gradient is skipped (no hooks, no rules, t unchanged) and halves
  /// the scale; the scale stays within [1, 65504]. ValueError unless interval >= 1. Under a
  /// multi-node stage the check runs on the averaged gradients, so every rank decides alike.
  void loss_scaling(int64_t interval = 1000, std::optional<double> scale = std::nullopt);
  /// loss_scaling with a scale (StandardUpdater's loss_scale: a static one).
  void set_loss_scale(double scale) { loss_scaling(1000, scale); }
  /// The current scale, or unset when loss scaling is off.
  std::optional<double> loss_scale() const { return loss_scale_; }
  /// False when the last update() found an inf or NaN gradient under dynamic loss scaling (and so
  /// skipped the step).
  bool is_safe_to_update() const { return !loss_scaling_isnan_; }

  /// Float32 master weights (Chainer's use_fp32_update) for every 16-bit parameter: sets the flag
  /// on every current rule and on those made later (setup, parameters added later); `false` turns
  /// it off and drops the masters. See UpdateRule. The order of a step is unchanged: the stage,
  /// loss scaling's unscale and check, and the hooks run first, on the 16-bit gradients; then each
  /// rule converts its gradient and updates its master. Set it before loading a snapshot: a
  /// rule loads a saved master only when it uses fp32 update.
  void use_fp32_update(bool flag = true);
  /// Whether use_fp32_update was last set on (individual rules may differ).
  bool uses_fp32_update() const { return use_fp32_update_; }

  /// Installs `stage` (null removes the current one, which is then destroyed). On an optimizer set
  /// up already, the stage's on_setup runs now. ValueError when a stage is installed already.
  void set_stage(std::unique_ptr<OptimizerStage> stage);
  /// The installed stage, or nullptr.
  OptimizerStage* stage() const { return stage_.get(); }

 protected:
  /// Declares a hyperparameter with its default; returns its slot, which stays valid for the
  /// optimizer's lifetime (rules read hyperparameters through it at each update).
  const double* declare_hyperparam(const std::string& name, double value);
  /// Makes the UpdateRule of one parameter (called once per parameter, on setup or first use).
  virtual std::unique_ptr<UpdateRule> create_update_rule() = 0;
  /// Calls fn(path, param, rule) for each parameter, creating rules as needed.
  void for_each_param(const std::function<void(const std::string&, const Variable&, UpdateRule&)>& fn);

  /// Hyperparameter values by name; rules read them through declare_hyperparam's slots.
  std::map<std::string, double> hyperparams_;
  /// The class name used in error messages ("Adam", ...).
  const char* optimizer_name_ = "Optimizer";
  /// The link whose parameters are updated (set by setup); null before.
  Link* target_ = nullptr;
  /// Number of updates applied.
  int64_t t_ = 0;
  /// Epochs seen.
  int64_t epoch_ = 0;

 private:
  void serialize_rules(serializers::Serializer& s);
  // create_update_rule, with this optimizer's use_fp32_update.
  std::unique_ptr<UpdateRule> make_rule();

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
  bool use_fp32_update_ = false;
};

}  // namespace rensa::optimizers
