// RMSprop warm-up: hyperparameters, the transition and the update math.
#include "rensa/optimizers/rmsprop_warmup.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "src/optimizers/fused_rule.h"

namespace rensa::optimizers {
namespace {

// ms = alpha ms + (1 - alpha) g^2;  v = momentum v - (sgd + rms / (sqrt(ms) + eps)) g;  p += v,
// where sgd and rms are the two parts of the rate at this step of the transition.
template <class C>
struct RMSpropWarmupStep {
  static constexpr std::size_t n_state = 2;
  C sgd, rms, momentum, alpha, one_m_alpha, eps;
  RMSpropWarmupStep(double sgd, double rms, double momentum, double alpha, double eps)
      : sgd(C(sgd)), rms(C(rms)), momentum(C(momentum)), alpha(C(alpha)), one_m_alpha(C(1.0 - alpha)), eps(C(eps)) {}
  template <class T>
  void operator()(T& p, const T& g, T& v, T& ms) const {
    const C gc = C(g);
    const C msn = alpha * C(ms) + one_m_alpha * gc * gc;
    ms = T(msn);
    const C vn = momentum * C(v) - (sgd + rms / (std::sqrt(msn) + eps)) * gc;
    v = T(vn);
    p = T(C(p) + vn);
  }
};

}  // namespace

RMSpropWarmup::RMSpropWarmup(double lr, int64_t transition_end, int64_t transition_begin, double rmsprop_scale,
                             double momentum, double alpha, double eps)
    : lr_(declare_hyperparam("lr", lr)),
      transition_begin_(declare_hyperparam("transition_begin", static_cast<double>(transition_begin))),
      transition_end_(declare_hyperparam("transition_end", static_cast<double>(transition_end))),
      rmsprop_scale_(declare_hyperparam("rmsprop_scale", rmsprop_scale)),
      momentum_(declare_hyperparam("momentum", momentum)),
      alpha_(declare_hyperparam("alpha", alpha)),
      eps_(declare_hyperparam("eps", eps)) {
  optimizer_name_ = "RMSpropWarmup";
  check_hyperparams();
}

void RMSpropWarmup::check_hyperparams() const {
  for (const auto& [name, value] : {std::pair<const char*, double>{"lr", *lr_}, {"rmsprop_scale", *rmsprop_scale_},
                                    {"eps", *eps_}}) {
    RENSA_CHECK(std::isfinite(value) && value >= 0.0, ValueError, optimizer_name_, ": ", name,
                " must be finite and non-negative, got ", value);
  }
  for (const auto& [name, value] : {std::pair<const char*, double>{"momentum", *momentum_}, {"alpha", *alpha_}}) {
    RENSA_CHECK(value >= 0.0 && value < 1.0, ValueError, optimizer_name_, ": ", name, " must be in [0, 1), got ",
                value);
  }
  RENSA_CHECK(std::isfinite(*transition_begin_) && *transition_begin_ >= 0.0, ValueError, optimizer_name_,
              ": transition_begin must be finite and non-negative, got ", *transition_begin_);
  RENSA_CHECK(std::isfinite(*transition_end_) && *transition_end_ >= *transition_begin_, ValueError, optimizer_name_,
              ": transition_end ", *transition_end_, " must not be less than transition_begin ", *transition_begin_);
}

double RMSpropWarmup::transition(int64_t t) const {
  const double td = static_cast<double>(t), begin = *transition_begin_, end = *transition_end_;
  if (td >= end) return 1.0;
  if (td <= begin) return 0.0;
  return (td - begin) / (end - begin);
}

std::unique_ptr<UpdateRule> RMSpropWarmup::create_update_rule() {
  return std::make_unique<detail::FusedRule>(
      optimizer_name_, std::vector<std::string>{"v", "ms"}, 2, nullptr,
      [this](const Array& param, const Array& grad, const Array* state, int64_t t) {
        check_hyperparams();
        const double s = transition(t);
        // The two parts of the coefficient of g: lr * s (SGD) and lr * (1 - s) * scale (RMSprop).
        const double sgd = *lr_ * s, rms = *lr_ * (1.0 - s) * *rmsprop_scale_;
        backends::fused_update<RMSpropWarmupStep>(param, grad, state, optimizer_name_, sgd, rms, *momentum_, *alpha_,
                                                  *eps_);
      });
}

}  // namespace rensa::optimizers
