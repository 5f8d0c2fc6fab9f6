// LARS and Chainer's GradientLARS hook: hyperparameters, the local rate and the update math.
#include "rensa/optimizers/lars.h"

#include <cmath>

#include "src/functions/common.h"
#include "src/optimizers/fused_rule.h"
#include "src/optimizers/norm.h"

namespace rensa::optimizers {
namespace {

// v = momentum v - scale (g + wd p);  p += v, where scale is lr times the local rate
template <class C>
struct LARSStep {
  static constexpr std::size_t n_state = 1;
  C scale, wd, momentum;
  LARSStep(double scale, double wd, double momentum) : scale(C(scale)), wd(C(wd)), momentum(C(momentum)) {}
  template <class T>
  void operator()(T& p, const T& g, T& v) const {
    const C pc = C(p);
    const C vn = momentum * C(v) - scale * (C(g) + wd * pc);
    v = T(vn);
    p = T(pc + vn);
  }
};

}  // namespace
namespace {

void check_nonnegative(const char* owner, const char* name, double value) {
  RENSA_CHECK(std::isfinite(value) && value >= 0.0, ValueError, owner, ": ", name,
              " must be finite and non-negative, got ", value);
}

}  // namespace

bool exclude_bias_and_normalization(const Variable& param) {
  return param.ndim() <= 1;
}

// ---- LARS --------------------------------------------------------------------------------------

LARS::LARS(double lr, double momentum, double weight_decay_rate, double eta, double eps, ParamFilter exclude)
    : lr_(declare_hyperparam("lr", lr)),
      momentum_(declare_hyperparam("momentum", momentum)),
      weight_decay_rate_(declare_hyperparam("weight_decay_rate", weight_decay_rate)),
      eta_(declare_hyperparam("eta", eta)),
      eps_(declare_hyperparam("eps", eps)),
      exclude_(std::move(exclude)) {
  optimizer_name_ = "LARS";
  check_hyperparams();
}

void LARS::check_hyperparams() const {
  check_nonnegative(optimizer_name_, "lr", *lr_);
  check_nonnegative(optimizer_name_, "weight_decay_rate", *weight_decay_rate_);
  check_nonnegative(optimizer_name_, "eta", *eta_);
  check_nonnegative(optimizer_name_, "eps", *eps_);
  RENSA_CHECK(*momentum_ >= 0.0 && *momentum_ < 1.0, ValueError, optimizer_name_, ": momentum must be in [0, 1), got ",
              *momentum_);
}

double LARS::local_rate(const Variable& param) const {
  RENSA_CHECK(!param.is_null() && !param.grad().is_null(), ValueError, optimizer_name_,
              "::local_rate: the parameter has no gradient");
  if (excluded(param)) return 1.0;
  const double w = detail::l2_norm(param.array(), optimizer_name_);
  const double g = detail::l2_norm(param.grad().array(), optimizer_name_);
  // A zero norm (a zero-initialized weight, a weight without gradient signal) gives no ratio.
  if (w == 0.0 || g == 0.0) return 1.0;
  return *eta_ * w / (g + *weight_decay_rate_ * w + *eps_);
}

std::unique_ptr<UpdateRule> LARS::create_update_rule() {
  return std::make_unique<detail::FusedRule>(
      optimizer_name_, std::vector<std::string>{"v"}, 1, nullptr,
      detail::FusedRule::VariableStepFn([this](const Variable& var, const Array& grad, const Array* state, int64_t) {
        check_hyperparams();
        const bool skip = excluded(var);
        const double scale = *lr_ * local_rate(var);
        const double wd = skip ? 0.0 : *weight_decay_rate_;
        backends::fused_update<LARSStep>(var.array(), grad, state, optimizer_name_, scale, wd, *momentum_);
      }));
}

// ---- GradientLARS ------------------------------------------------------------------------------

GradientLARS::GradientLARS(double threshold, double weight_decay, double eps, ParamFilter exclude)
    : threshold_(threshold), weight_decay_(weight_decay), eps_(eps), exclude_(std::move(exclude)) {
  check_nonnegative("GradientLARS", "threshold", threshold_);
  check_nonnegative("GradientLARS", "weight_decay", weight_decay_);
  check_nonnegative("GradientLARS", "eps", eps_);
}

void GradientLARS::operator()(Optimizer& optimizer) {
  namespace fd = rensa::functions::detail;
  RENSA_CHECK(optimizer.target() != nullptr, ValueError, "GradientLARS: the optimizer has no target; call setup(link) first");
  for (const Variable& param : optimizer.target()->params(false)) {
    const Variable grad = param.grad();
    if (param.array().is_null() || grad.is_null()) continue;
    if (exclude_ && exclude_(param)) continue;
    const Array& p = param.array();
    const Array& g = grad.array();
    const double p_norm = detail::l2_norm(p, "GradientLARS");
    const double g_norm = detail::l2_norm(g, "GradientLARS");
    const double rate = p_norm > threshold_ ? p_norm / (eps_ + g_norm + weight_decay_ * p_norm) : 1.0;
    // g = (g + weight_decay * p) * rate, with the decay term computed from the norms' p.
    if (weight_decay_ != 0.0) {
      g.assign(fd::binary("GradientLARS", BinaryOp::add, g,
                          fd::unary("GradientLARS", UnaryOp::affine, p, weight_decay_, 0.0)));
    }
    if (rate != 1.0) g.assign(fd::unary("GradientLARS", UnaryOp::affine, g, rate, 0.0));
  }
}

}  // namespace rensa::optimizers
