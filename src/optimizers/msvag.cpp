// MSVAG: hyperparameters and the update math.
#include "rensa/optimizers/msvag.h"

#include <algorithm>
#include <cmath>

#include "src/optimizers/fused_rule.h"

namespace rensa::optimizers {
namespace {

// m += (1 - beta) (g - m);  v += (1 - beta) (g^2 - v);  with the bias-corrected moments mt, vt
// and the variance s = (vt - mt^2) / (1 - rho), the factor mt^2 / (mt^2 + rho s) clipped to
// [0, 1] (0 where both moments are zero, as Chainer);  p -= eta (lr mt factor + wd p)
template <class C>
struct MSVAGStep {
  static constexpr std::size_t n_state = 2;
  C lr, one_m_beta, one_m_bp, rho, one_m_rho, eta, wd;
  MSVAGStep(double lr, double beta, double bp, double rho, double eta, double wd)
      : lr(C(lr)), one_m_beta(C(1.0 - beta)), one_m_bp(C(1.0 - bp)), rho(C(rho)), one_m_rho(C(1.0 - rho)),
        eta(C(eta)), wd(C(wd)) {}
  template <class T>
  void operator()(T& p, const T& g, T& m, T& v) const {
    const C gc = C(g);
    const C mn = C(m) + one_m_beta * (gc - C(m));
    const C vn = C(v) + one_m_beta * (gc * gc - C(v));
    m = T(mn);
    v = T(vn);
    const C mt = mn / one_m_bp, vt = vn / one_m_bp, mt2 = mt * mt;
    const C s = (vt - mt2) / one_m_rho;
    C factor = mt2 / (mt2 + rho * s);
    factor = std::isnan(factor) ? C(0) : std::clamp(factor, C(0), C(1));
    const C pc = C(p);
    p = T(pc - eta * (lr * mt * factor + wd * pc));
  }
};

}  // namespace

MSVAG::MSVAG(double lr, double beta, double eta, double weight_decay_rate)
    : lr_(declare_hyperparam("lr", lr)),
      beta_(declare_hyperparam("beta", beta)),
      eta_(declare_hyperparam("eta", eta)),
      weight_decay_rate_(declare_hyperparam("weight_decay_rate", weight_decay_rate)) {
  optimizer_name_ = "MSVAG";
}

std::unique_ptr<UpdateRule> MSVAG::create_update_rule() {
  return std::make_unique<detail::FusedRule>(
      optimizer_name_, std::vector<std::string>{"m", "v"}, 2, nullptr,
      [this](const Array& param, const Array& grad, const Array* state, int64_t t) {
        const double beta = *beta_;
        const double bp = std::pow(beta, static_cast<double>(t));
        const double rho = std::min(
            0.9999, (1.0 - beta) * (1.0 - beta) * (1.0 - bp * bp) / ((1.0 - bp) * (1.0 - bp) * (1.0 - beta * beta)));
        backends::fused_update<MSVAGStep>(param, grad, state, optimizer_name_, *lr_, beta, bp, rho, *eta_,
                                          *weight_decay_rate_);
      });
}

}  // namespace rensa::optimizers
