// Optimizer base: hyperparameters, hooks, per-parameter rules and their serialization; and the
// fused update rule the built-in optimizers share.
#include "rensa/optimizers/optimizer.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "rensa/core/config.h"
#include "rensa/core/timeline.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/reduction.h"
#include "src/optimizers/fused_rule.h"

namespace rensa::optimizers {
namespace {

// Loss scaling's upper bound, Chainer's: the largest float16.
constexpr double kLossScaleMax = 65504.0;

std::string join_names(const std::map<std::string, double>& m) {
  std::ostringstream os;
  bool first = true;
  for (const auto& [name, value] : m) {
    os << (first ? "" : ", ") << name;
    first = false;
  }
  return os.str();
}

}  // namespace

// ---- Optimizer ---------------------------------------------------------------------------------

void Optimizer::setup(Link& link) {
  target_ = &link;
  rules_.clear();
  for_each_param([](const std::string&, const Variable&, UpdateRule&) {});
  if (stage_) stage_->on_setup(*this);
}

void Optimizer::update() {
  RENSA_CHECK(target_ != nullptr, ValueError, optimizer_name_, "::update: no target; call setup(link) first");
  if (stage_ && !stage_->after_backward(*this)) return;
  if (!unscale_gradients()) {
    update_loss_scale();
    return;
  }
  for (const auto& hook : hooks_) (*hook)(*this);
  ++t_;
  // params() avoids building the path strings namedparams() would: update runs every iteration.
  for (const Variable& param : target_->params(false)) {
    if (param.array().is_null() || param.grad().is_null()) continue;
    auto& slot = rules_[param.id()];
    if (!slot) slot = make_rule();
    slot->update(param);
  }
  update_loss_scale();
}

void Optimizer::update(const std::function<Variable()>& loss_fn) {
  RENSA_CHECK(target_ != nullptr, ValueError, optimizer_name_, "::update: no target; call setup(link) first");
  const auto forward = [&] {
    timeline::Span span("forward", timeline::Category::forward);
    Variable loss = loss_fn();
    RENSA_CHECK(!loss.is_null(), ValueError, optimizer_name_, "::update: the loss function returned a null variable");
    return loss;
  };
  Variable loss = forward();
  if (stage_ && stage_->after_forward(*this)) {
    loss = Variable();  // free the first graph before building the second
    loss = forward();
  }
  target_->cleargrads();
  // Loss scaling seeds backward with the scale instead of 1, and the parameters' gradients record it.
  BackwardOptions options;
  options.loss_scale = loss_scale_;
  {
    timeline::Span span("backward", timeline::Category::backward);
    if (stage_) {
      stage_->around_backward(*this, [&] { loss.backward(options); });
    } else {
      loss.backward(options);
    }
    loss = Variable();  // the graph's memory goes back within the backward span
  }
  timeline::Span span("update", timeline::Category::update);
  update();
}

void Optimizer::add_hook(std::shared_ptr<OptimizerHook> hook) {
  RENSA_CHECK(hook != nullptr, ValueError, optimizer_name_, "::add_hook: null hook");
  for (const auto& h : hooks_) {
    RENSA_CHECK(std::string_view(h->name()) != hook->name(), ValueError, optimizer_name_, "::add_hook: a hook named '",
                hook->name(), "' is already registered");
  }
  hooks_.push_back(std::move(hook));
}

void Optimizer::remove_hook(const std::string& name) {
  std::string names;
  for (auto it = hooks_.begin(); it != hooks_.end(); ++it) {
    if (name == (*it)->name()) {
      hooks_.erase(it);
      return;
    }
    names += (names.empty() ? "" : ", ") + std::string((*it)->name());
  }
  RENSA_THROW(ValueError, optimizer_name_, "::remove_hook: no hook named '", name, "'; registered hooks: [", names,
              "]");
}

double Optimizer::hyperparam(const std::string& name) const {
  const auto it = hyperparams_.find(name);
  RENSA_CHECK(it != hyperparams_.end(), ValueError, optimizer_name_, "::hyperparam: unknown hyperparameter '", name,
              "'; valid names: ", join_names(hyperparams_));
  return it->second;
}

void Optimizer::set_hyperparam(const std::string& name, double value) {
  const auto it = hyperparams_.find(name);
  RENSA_CHECK(it != hyperparams_.end(), ValueError, optimizer_name_, "::set_hyperparam: unknown hyperparameter '", name,
              "'; valid names: ", join_names(hyperparams_));
  it->second = value;
}

bool Optimizer::has_hyperparam(const std::string& name) const {
  return hyperparams_.count(name) != 0;
}

double Optimizer::lr() const {
  const auto it = hyperparams_.find("lr");
  RENSA_CHECK(it != hyperparams_.end(), ValueError, optimizer_name_,
              "::lr: no hyperparameter 'lr'; hyperparameters: ", join_names(hyperparams_));
  return it->second;
}

UpdateRule* Optimizer::rule(const Variable& param) {
  if (target_ == nullptr || param.is_null()) return nullptr;
  const auto it = rules_.find(param.id());
  if (it != rules_.end()) return it->second.get();
  for (const Variable& p : target_->params()) {
    if (p.is(param)) {
      auto& slot = rules_[param.id()];
      slot = make_rule();
      return slot.get();
    }
  }
  return nullptr;
}

void Optimizer::loss_scaling(int64_t interval, std::optional<double> scale) {
  if (scale) {
    // As Chainer's: the scale only; a dynamic rule stays dynamic, from this scale on.
    RENSA_CHECK(*scale > 0 && std::isfinite(*scale), ValueError, optimizer_name_,
                "::loss_scaling: the scale must be a positive number, got ", *scale);
    loss_scale_ = *scale;
  } else {
    RENSA_CHECK(interval >= 1, ValueError, optimizer_name_, "::loss_scaling: interval must be at least 1, got ",
                interval);
    loss_scale_ = 1.0;
    loss_scaling_dynamic_ = true;
    loss_scaling_multiplier_ = std::pow(2.0, 1.0 / static_cast<double>(interval));
    loss_scaling_isnan_ever_ = false;
  }
  loss_scaling_isnan_ = false;
}

bool Optimizer::unscale_gradients() {
  auto guard = no_backprop_mode();
  const std::vector<Variable> params = target_->params(false);
  loss_scaling_isnan_ = false;
  if (loss_scale_ && loss_scaling_dynamic_) {
    for (const Variable& p : params) {
      const Variable g = p.grad();
      if (g.is_null() || g.size() == 0) continue;
      // A sum is inf or NaN when any element is (the reduction accumulates in double).
      if (!std::isfinite(functions::sum(g).array().item<double>())) {
        loss_scaling_isnan_ = loss_scaling_isnan_ever_ = true;
        return false;
      }
    }
  }
  // Each gradient is divided by the scale its backward applied (none: a backward without
  // loss_scale, as a hand-written loss.backward()), once.
  for (const Variable& p : params) {
    const std::optional<double> scale = p.grad_loss_scale();
    if (!scale) continue;
    const Variable g = p.grad();
    if (!g.is_null() && *scale != 1.0) g.array().assign(functions::mul(g, 1.0 / *scale).array());
    p.set_grad_loss_scale(std::nullopt);
  }
  return true;
}

void Optimizer::update_loss_scale() {
  if (!loss_scale_ || !loss_scaling_dynamic_) return;
  const double multiplier = loss_scaling_isnan_ ? 0.5 : loss_scaling_isnan_ever_ ? loss_scaling_multiplier_ : 2.0;
  loss_scale_ = std::clamp(*loss_scale_ * multiplier, 1.0, kLossScaleMax);
}

void Optimizer::serialize(serializers::Serializer& s) {
  s.scalar("t", t_);
  s.scalar("epoch", epoch_);
  serializers::Serializer& hs = s.child("hyperparam");
  for (auto& [name, value] : hyperparams_) {
    // Older snapshots (and Chainer's) carry no hyperparameters: keep the current ones then.
    if (s.is_loading() && !hs.contains(name)) continue;
    hs.scalar(name, value);
  }
  if (target_ != nullptr) serialize_rules(s);
  serializers::Serializer& ls = s.child("loss_scaling");
  if (s.is_loading() && !loss_scale_ && ls.contains("scale")) {
    double scale = 0;
    ls.scalar("scale", scale);
    RENSA_THROW(ValueError, optimizer_name_, "::serialize: the snapshot holds loss-scaling state (scale ", scale,
                ") but this optimizer has no loss scaling; call loss_scaling() (or set_loss_scale) before loading, "
                "as the run that wrote it did");
  }
  if (loss_scale_ && (!s.is_loading() || ls.contains("scale"))) {
    double scale = *loss_scale_;
    ls.scalar("scale", scale);
    ls.scalar("isnan_ever", loss_scaling_isnan_ever_);
    loss_scale_ = scale;
  }
  if (stage_) stage_->serialize(*this, s);
}

void Optimizer::serialize_rules(serializers::Serializer& s) {
  for_each_param([&](const std::string& path, const Variable& param, UpdateRule& rule) {
    // "/l1/W" is stored under child "l1", child "W", as Chainer's serializer["/l1/W"] does.
    serializers::Serializer* node = &s;
    std::size_t begin = 0;
    while (begin <= path.size()) {
      std::size_t end = path.find('/', begin);
      if (end == std::string::npos) end = path.size();
      if (end > begin) node = &node->child(std::string_view(path).substr(begin, end - begin));
      begin = end + 1;
    }
    rule.serialize(*node);
    rule.serialize_fp32_param(*node, param);
  });
}

std::unique_ptr<UpdateRule> Optimizer::make_rule() {
  std::unique_ptr<UpdateRule> rule = create_update_rule();
  rule->use_fp32_update(use_fp32_update_);
  return rule;
}

void Optimizer::use_fp32_update(bool flag) {
  use_fp32_update_ = flag;
  for (auto& [id, rule] : rules_) rule->use_fp32_update(flag);
}

void Optimizer::set_stage(std::unique_ptr<OptimizerStage> stage) {
  if (stage == nullptr) {
    stage_.reset();
    return;
  }
  RENSA_CHECK(stage_ == nullptr, ValueError, optimizer_name_, "::set_stage: a stage (", stage_->name(),
              ") is installed already; cannot add ", stage->name());
  stage_ = std::move(stage);
  if (target_ != nullptr) stage_->on_setup(*this);
}

const double* Optimizer::declare_hyperparam(const std::string& name, double value) {
  // std::map nodes never move, so the returned slot stays valid.
  auto [it, inserted] = hyperparams_.insert_or_assign(name, value);
  (void)inserted;
  return &it->second;
}

void Optimizer::for_each_param(const std::function<void(const std::string&, const Variable&, UpdateRule&)>& fn) {
  RENSA_CHECK(target_ != nullptr, ValueError, optimizer_name_, ": no target; call setup(link) first");
  for (const auto& [path, param] : target_->namedparams()) {
    auto& slot = rules_[param.id()];
    if (!slot) slot = make_rule();
    fn(path, param, *slot);
  }
}

// ---- UpdateRule --------------------------------------------------------------------------------

void UpdateRule::update(const Variable& param) {
  const bool via_master =
      use_fp32_update_ && enabled && !param.is_null() && !param.array().is_null() && is_half(param.dtype());
  if (!via_master || param.grad().is_null()) {
    update_core(param);
    return;
  }
  // Chainer's UpdateRule.update under use_fp32_update: the step runs on a float32 copy of the
  // parameter with the gradient converted, and the parameter takes the result rounded.
  const Array& p = param.array();
  if (fp32_param_.is_null()) {
    fp32_param_ = p.astype(Dtype::float32);
  } else {
    RENSA_CHECK(fp32_param_.shape() == p.shape(), ShapeError,
                "UpdateRule::update: the float32 master 'fp32_param' has shape ", fp32_param_.shape(),
                " but its parameter has shape ", p.shape());
    // A loaded master (or one of a parameter moved with to_device) follows the parameter.
    if (fp32_param_.device() != p.device()) fp32_param_ = fp32_param_.to(p.device());
  }
  Variable master(fp32_param_);
  master.set_name(param.name());
  master.set_grad(Variable(param.grad().array().astype(Dtype::float32)));
  update_core(master);
  p.assign(fp32_param_);
}

void UpdateRule::use_fp32_update(bool flag) {
  use_fp32_update_ = flag;
  if (!flag) fp32_param_ = Array();
}

void UpdateRule::serialize_fp32_param(serializers::Serializer& s, const Variable& param) {
  constexpr const char* kKey = "fp32_param";
  if (!s.is_loading()) {
    if (!fp32_param_.is_null()) s.array(kKey, fp32_param_);
    return;
  }
  fp32_param_ = Array();
  // A snapshot without a master (taken without use_fp32_update, or before the first update) leaves
  // the master to be made from the parameter at the next update.
  if (!use_fp32_update_ || param.is_null() || param.array().is_null() || !is_half(param.dtype()) || !s.contains(kKey)) {
    return;
  }
  Array loaded;
  s.array(kKey, loaded);
  const Array& p = param.array();
  RENSA_CHECK(loaded.shape() == p.shape(), ShapeError,
              "UpdateRule::serialize: the float32 master 'fp32_param' has shape ", loaded.shape(),
              " but its parameter has shape ", p.shape());
  // astype copies: the deserializer's values may be aliased otherwise, and updates write in place.
  fp32_param_ = loaded.astype(Dtype::float32).to(p.device());
  p.assign(fp32_param_);
}

// ---- FusedRule ---------------------------------------------------------------------------------

namespace detail {

FusedRule::FusedRule(const char* owner, std::vector<std::string> state_names, int n_required,
                     std::function<int()> n_state, StepFn step)
    : owner_(owner),
      state_names_(std::move(state_names)),
      n_required_(n_required),
      n_state_(std::move(n_state)),
      step_(std::move(step)) {
  RENSA_CHECK(state_names_.size() <= kMaxState, ValueError, owner_, ": at most ", kMaxState, " state arrays");
}

FusedRule::FusedRule(const char* owner, std::vector<std::string> state_names, int n_required,
                     std::function<int()> n_state, VariableStepFn step)
    : FusedRule(owner, std::move(state_names), n_required, std::move(n_state), StepFn()) {
  variable_step_ = std::move(step);
}

void FusedRule::set_initial_value(std::size_t i, double value) {
  RENSA_CHECK(i < state_names_.size(), ValueError, owner_, ": no state array ", i);
  initial_[i] = value;
}

void FusedRule::update_core(const Variable& param) {
  if (!enabled || param.is_null() || param.array().is_null()) return;
  const Variable grad = param.grad();
  if (grad.is_null()) return;
  const Array& p = param.array();
  const Array& g = grad.array();
  RENSA_CHECK(is_floating(p.dtype()), DtypeError, owner_, ": parameter ", p.shape(),
              " must have a floating dtype, got ", p.dtype());
  RENSA_CHECK(g.shape() == p.shape(), ShapeError, owner_, ": gradient shape ", g.shape(),
              " does not match parameter shape ", p.shape());
  RENSA_CHECK(g.dtype() == p.dtype(), DtypeError, owner_, ": gradient dtype ", g.dtype(),
              " does not match parameter dtype ", p.dtype(), " (shape ", p.shape(), ")");
  RENSA_CHECK(g.device() == p.device(), DeviceError, owner_, ": gradient on ", g.device(), " but parameter ", p.shape(),
              " on ", p.device());
  const int n_state = n_state_ ? n_state_() : static_cast<int>(state_names_.size());
  prepare_state(p, n_state);
  ++t;
  if (variable_step_) {
    variable_step_(param, g, state_.data(), t);
  } else {
    step_(p, g, state_.data(), t);
  }
}

void FusedRule::prepare_state(const Array& param, int n_state) {
  for (int i = 0; i < n_state; ++i) {
    Array& st = state_[static_cast<std::size_t>(i)];
    if (st.is_null()) {
      st = Array::full(param.shape(), initial_[static_cast<std::size_t>(i)], param.dtype(), param.device());
      continue;
    }
    RENSA_CHECK(st.shape() == param.shape(), ShapeError, owner_, ": state '", state_names_[static_cast<std::size_t>(i)],
                "' has shape ", st.shape(), " but its parameter has shape ", param.shape());
    // Loaded state (or state of a parameter moved with to_device) follows the parameter.
    if (st.device() != param.device()) st = st.to(param.device());
    if (st.dtype() != param.dtype()) st = st.astype(param.dtype());
  }
}

void FusedRule::serialize(serializers::Serializer& s) {
  s.scalar("t", t);
  for (std::size_t i = 0; i < state_names_.size(); ++i) {
    const std::string& name = state_names_[i];
    Array& st = state_[i];
    if (!s.is_loading()) {
      if (!st.is_null()) s.array(name, st);
      continue;
    }
    // State exists once a rule has taken a step; optional state may be absent at any time.
    const bool required = static_cast<int>(i) < n_required_ && t > 0;
    if (!required && !s.contains(name)) {
      st = Array();
      continue;
    }
    if (st.is_null()) {
      s.array(name, st);
      // Adopted arrays may alias the deserializer's values; updates write in place.
      if (!st.is_null()) st = st.copy();
    } else {
      s.array(name, st);
    }
  }
}

std::vector<std::pair<std::string, Array>> FusedRule::state() const {
  std::vector<std::pair<std::string, Array>> out;
  for (std::size_t i = 0; i < state_names_.size(); ++i) {
    if (!state_[i].is_null()) out.emplace_back(state_names_[i], state_[i]);
  }
  return out;
}

}  // namespace detail
}  // namespace rensa::optimizers
