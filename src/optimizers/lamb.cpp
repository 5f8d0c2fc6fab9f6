// LAMB: hyperparameters and the update math (two fused passes around the norms).
#include "rensa/optimizers/lamb.h"

#include <array>
#include <cmath>
#include <utility>

#include "src/optimizers/fused_rule.h"
#include "src/optimizers/norm.h"

namespace rensa::optimizers {
namespace {

// Pass 1: m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2;
// r = m c1 / (sqrt(v c2) + eps) + wd p, with c1 and c2 the bias corrections; r is a scratch array
// in the third state's place (its norm is needed before any weight moves).
template <class C>
struct LAMBMomentsStep {
  static constexpr std::size_t n_state = 3;
  C beta1, one_m_beta1, beta2, one_m_beta2, eps, c1, c2, wd;
  LAMBMomentsStep(double beta1, double beta2, double eps, double c1, double c2, double wd)
      : beta1(C(beta1)), one_m_beta1(C(1.0 - beta1)), beta2(C(beta2)), one_m_beta2(C(1.0 - beta2)), eps(C(eps)),
        c1(C(c1)), c2(C(c2)), wd(C(wd)) {}
  template <class T>
  void operator()(const T& p, const T& g, T& m, T& v, T& r) const {
    const C gc = C(g);
    const C mn = beta1 * C(m) + one_m_beta1 * gc;
    const C vn = beta2 * C(v) + one_m_beta2 * gc * gc;
    m = T(mn);
    v = T(vn);
    r = T(mn * c1 / (std::sqrt(vn * c2) + eps) + wd * C(p));
  }
};

// Pass 2: p -= scale r, with r in the gradient's place and scale = lr times the norms' ratio.
template <class C>
struct LAMBApplyStep {
  static constexpr std::size_t n_state = 0;
  C scale;
  explicit LAMBApplyStep(double scale) : scale(C(scale)) {}
  template <class T>
  void operator()(T& p, const T& r) const {
    p = T(C(p) - scale * C(r));
  }
};

}  // namespace

LAMB::LAMB(double lr, double beta1, double beta2, double eps, double weight_decay_rate, ParamFilter exclude)
    : lr_(declare_hyperparam("lr", lr)),
      beta1_(declare_hyperparam("beta1", beta1)),
      beta2_(declare_hyperparam("beta2", beta2)),
      eps_(declare_hyperparam("eps", eps)),
      weight_decay_rate_(declare_hyperparam("weight_decay_rate", weight_decay_rate)),
      exclude_(std::move(exclude)) {
  optimizer_name_ = "LAMB";
  check_hyperparams();
}

void LAMB::check_hyperparams() const {
  for (const auto& [name, value] : {std::pair<const char*, double>{"lr", *lr_}, {"eps", *eps_},
                                    {"weight_decay_rate", *weight_decay_rate_}}) {
    RENSA_CHECK(std::isfinite(value) && value >= 0.0, ValueError, optimizer_name_, ": ", name,
                " must be finite and non-negative, got ", value);
  }
  for (const auto& [name, value] : {std::pair<const char*, double>{"beta1", *beta1_}, {"beta2", *beta2_}}) {
    RENSA_CHECK(value >= 0.0 && value < 1.0, ValueError, optimizer_name_, ": ", name, " must be in [0, 1), got ",
                value);
  }
}

std::unique_ptr<UpdateRule> LAMB::create_update_rule() {
  return std::make_unique<detail::FusedRule>(
      optimizer_name_, std::vector<std::string>{"m", "v"}, 2, nullptr,
      detail::FusedRule::VariableStepFn([this](const Variable& var, const Array& grad, const Array* state, int64_t t) {
        check_hyperparams();
        const Array& param = var.array();
        const bool skip = exclude_ && exclude_(var);
        const double td = static_cast<double>(t);
        const double c1 = 1.0 / (1.0 - std::pow(*beta1_, td)), c2 = 1.0 / (1.0 - std::pow(*beta2_, td));
        const std::array<Array, 3> moments_and_r{state[0], state[1],
                                                 Array::empty(param.shape(), param.dtype(), param.device())};
        const double wd = skip ? 0.0 : *weight_decay_rate_;
        backends::fused_update<LAMBMomentsStep>(param, grad, moments_and_r.data(), optimizer_name_, *beta1_, *beta2_,
                                                *eps_, c1, c2, wd);
        double ratio = 1.0;
        if (!skip) {
          const double w_norm = detail::l2_norm(param, optimizer_name_);
          const double r_norm = detail::l2_norm(moments_and_r[2], optimizer_name_);
          if (w_norm > 0.0 && r_norm > 0.0) ratio = w_norm / r_norm;
        }
        // Pass 2: w -= lr * ratio * r, with r in the gradient's place.
        backends::fused_update<LAMBApplyStep>(param, moments_and_r[2], nullptr, optimizer_name_, *lr_ * ratio);
      }));
}

}  // namespace rensa::optimizers
