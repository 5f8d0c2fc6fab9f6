// Adam (with AdamW's decoupled weight decay, AMSGrad and AdaBound): hyperparameters and the fused rule.
#include "rensa/optimizers/adam.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "src/optimizers/fused_rule.h"

namespace rensa::optimizers {

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
        const double lr = alpha_t(*alpha_, *beta1_, *beta2_, t);
        const bool bound = *adabound_ != 0.0;
        double lower = 0.0, upper = 0.0;
        if (bound) {
          RENSA_CHECK(*gamma_ > 0.0 && initial_alpha != 0.0, ValueError, optimizer_name_,
                      ": AdaBound's bounds need gamma > 0 and a nonzero initial alpha, got gamma ", *gamma_,
                      " and alpha ", initial_alpha);
          const double f = *final_lr_ * *alpha_ / initial_alpha, td = static_cast<double>(t);
          lower = f * (1.0 - 1.0 / (*gamma_ * td + 1.0));
          upper = f * (1.0 + 1.0 / (*gamma_ * td));
        }
        const auto make = [lr, b1 = *beta1_, b2 = *beta2_, eps = *eps_, eta = *eta_, wd = *weight_decay_rate_, bound,
                           lower, upper]<class T>() {
          using C = compute_t<T>;
          const C alpha_t = C(lr), one_m_b1 = C(1.0 - b1), one_m_b2 = C(1.0 - b2), eps_c = C(eps);
          const C eta_c = C(eta), wd_c = C(wd), lo = C(lower), hi = C(upper);
          // Decoupled weight decay (AdamW): the decay term is not scaled by the adaptive step.
          const auto apply = [=](T& p, C m, C vh) {
            const C pc = C(p);
            if (bound) {
              const C step = std::max(std::min(alpha_t / (std::sqrt(vh) + eps_c), hi), lo);
              p = T(pc - eta_c * (step * m + wd_c * pc));
            } else {
              p = T(pc - eta_c * (alpha_t * m / (std::sqrt(vh) + eps_c) + wd_c * pc));
            }
          };
          const auto moments = [=](const T& g, T& m, T& v) {
            const C gc = C(g), mc = C(m), vc = C(v);
            m = T(mc + one_m_b1 * (gc - mc));
            v = T(vc + one_m_b2 * (gc * gc - vc));
          };
          return std::make_pair(apply, moments);
        };
        if (*amsgrad_ != 0.0) {
          backends::fused_update<3>(param, grad, state, [&]<class T>() {
            using C = compute_t<T>;
            const auto fns = make.template operator()<T>();
            const auto apply = fns.first;
            const auto moments = fns.second;
            return [=](T& p, const T& g, T& m, T& v, T& vhat) {
              moments(g, m, v);
              // AMSGrad: the running maximum of the stored second moments.
              const C vh = std::max(C(vhat), C(v));
              vhat = T(vh);
              apply(p, C(m), vh);
            };
          }, optimizer_name_);
        } else {
          backends::fused_update<2>(param, grad, state, [&]<class T>() {
            using C = compute_t<T>;
            const auto fns = make.template operator()<T>();
            const auto apply = fns.first;
            const auto moments = fns.second;
            return [=](T& p, const T& g, T& m, T& v) {
              moments(g, m, v);
              apply(p, C(m), C(v));
            };
          }, optimizer_name_);
        }
      });
}

}  // namespace rensa::optimizers
