// Adam (with AdamW's decoupled weight decay, AMSGrad and AdaBound): hyperparameters and the fused rule.
#include "rensa/optimizers/adam.h"

#include <algorithm>
#include <cmath>

#include "src/optimizers/fused_rule.h"

namespace rensa::optimizers {
namespace {

struct AdamHyper {
  double alpha_t, beta1, beta2, eps, eta, weight_decay_rate;
  bool bound;
  double lower = 0.0, upper = 0.0;  // AdaBound's bounds of the rate
};

// What Adam's two steps share, in C: the moments m += (1 - beta1) (g - m), v += (1 - beta2) (g^2 - v),
// and the update p -= eta (rate m + wd p) with rate = alpha_t / (sqrt(vhat) + eps), clipped to
// [lower, upper] under AdaBound. The decay term (AdamW's) is not scaled by the rate.
template <class C>
struct AdamMath {
  C alpha_t, one_m_beta1, one_m_beta2, eps, eta, wd, lower, upper;
  bool bound;
  explicit AdamMath(const AdamHyper& h)
      : alpha_t(C(h.alpha_t)), one_m_beta1(C(1.0 - h.beta1)), one_m_beta2(C(1.0 - h.beta2)), eps(C(h.eps)),
        eta(C(h.eta)), wd(C(h.weight_decay_rate)), lower(C(h.lower)), upper(C(h.upper)), bound(h.bound) {}
  template <class T>
  void moments(const T& g, T& m, T& v) const {
    const C gc = C(g), mc = C(m), vc = C(v);
    m = T(mc + one_m_beta1 * (gc - mc));
    v = T(vc + one_m_beta2 * (gc * gc - vc));
  }
  template <class T>
  void apply(T& p, C m, C vhat) const {
    const C pc = C(p);
    if (bound) {
      const C rate = std::max(std::min(alpha_t / (std::sqrt(vhat) + eps), upper), lower);
      p = T(pc - eta * (rate * m + wd * pc));
    } else {
      p = T(pc - eta * (alpha_t * m / (std::sqrt(vhat) + eps) + wd * pc));
    }
  }
};

// Adam: the moments, then the update with vhat = v.
template <class C>
struct AdamStep : AdamMath<C> {
  static constexpr std::size_t n_state = 2;
  using AdamMath<C>::AdamMath;
  template <class T>
  void operator()(T& p, const T& g, T& m, T& v) const {
    this->moments(g, m, v);
    this->apply(p, C(m), C(v));
  }
};

// AMSGrad: vhat is the running maximum of v.
template <class C>
struct AMSGradStep : AdamMath<C> {
  static constexpr std::size_t n_state = 3;
  using AdamMath<C>::AdamMath;
  template <class T>
  void operator()(T& p, const T& g, T& m, T& v, T& vhat) const {
    this->moments(g, m, v);
    const C vh = std::max(C(vhat), C(v));
    vhat = T(vh);
    this->apply(p, C(m), vh);
  }
};

}  // namespace

Adam::Adam(double alpha, double beta1, double beta2, double eps, double eta, double weight_decay_rate, bool amsgrad,
           bool adabound, double final_lr, double gamma)
    : alpha_(declare_hyperparam("alpha", alpha)),
      beta1_(declare_hyperparam("beta1", beta1)),
      beta2_(declare_hyperparam("beta2", beta2)),
      eps_(declare_hyperparam("eps", eps)),
      eta_(declare_hyperparam("eta", eta)),
      weight_decay_rate_(declare_hyperparam("weight_decay_rate", weight_decay_rate)),
      amsgrad_(declare_hyperparam("amsgrad", amsgrad ? 1.0 : 0.0)),
      adabound_(declare_hyperparam("adabound", adabound ? 1.0 : 0.0)),
      final_lr_(declare_hyperparam("final_lr", final_lr)),
      gamma_(declare_hyperparam("gamma", gamma)) {
  optimizer_name_ = "Adam";
}

double Adam::alpha_t(double alpha, double beta1, double beta2, int64_t t) {
  RENSA_CHECK(t >= 1, ValueError, "Adam: the learning rate alpha_t is undefined at step t = ", t,
              " (no update has been made yet)");
  const double td = static_cast<double>(t);
  return alpha * std::sqrt(1.0 - std::pow(beta2, td)) / (1.0 - std::pow(beta1, td));
}

double Adam::lr() const {
  return alpha_t(*alpha_, *beta1_, *beta2_, t_);
}

std::unique_ptr<UpdateRule> Adam::create_update_rule() {
  return std::make_unique<detail::FusedRule>(
      optimizer_name_, std::vector<std::string>{"m", "v", "vhat"}, 2, [this] { return *amsgrad_ != 0.0 ? 3 : 2; },
      [this, initial_alpha = *alpha_](const Array& param, const Array& grad, const Array* state, int64_t t) {
        // The bias correction uses the rule's own step count, as Chainer's AdamRule does.
        AdamHyper h{alpha_t(*alpha_, *beta1_, *beta2_, t), *beta1_, *beta2_, *eps_, *eta_, *weight_decay_rate_,
                    *adabound_ != 0.0};
        if (h.bound) {
          RENSA_CHECK(*gamma_ > 0.0 && initial_alpha != 0.0, ValueError, optimizer_name_,
                      ": AdaBound's bounds need gamma > 0 and a nonzero initial alpha, got gamma ", *gamma_,
                      " and alpha ", initial_alpha);
          const double f = *final_lr_ * *alpha_ / initial_alpha, td = static_cast<double>(t);
          h.lower = f * (1.0 - 1.0 / (*gamma_ * td + 1.0));
          h.upper = f * (1.0 + 1.0 / (*gamma_ * td));
        }
        if (*amsgrad_ != 0.0) {
          backends::fused_update<AMSGradStep>(param, grad, state, optimizer_name_, h);
        } else {
          backends::fused_update<AdamStep>(param, grad, state, optimizer_name_, h);
        }
      });
}

}  // namespace rensa::optimizers
