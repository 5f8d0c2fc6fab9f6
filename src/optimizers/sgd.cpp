// SGD, MomentumSGD, CorrectedMomentumSGD and NesterovAG: hyperparameters and their update math.
#include "rensa/optimizers/sgd.h"

#include "src/optimizers/fused_rule.h"

namespace rensa::optimizers {

SGD::SGD(double lr) : lr_(declare_hyperparam("lr", lr)) {
  optimizer_name_ = "SGD";
}

std::unique_ptr<UpdateRule> SGD::create_update_rule() {
  return std::make_unique<detail::FusedRule>(
      optimizer_name_, std::vector<std::string>{}, 0, nullptr,
      [this](const Array& param, const Array& grad, const Array* state, int64_t) {
        backends::fused_update<0>(param, grad, state, [lr = *lr_]<class T>() {
          using C = compute_t<T>;
          return [lr = C(lr)](T& p, const T& g) { p = T(C(p) - lr * C(g)); };
        }, optimizer_name_);
      });
}

MomentumSGD::MomentumSGD(double lr, double momentum)
    : lr_(declare_hyperparam("lr", lr)), momentum_(declare_hyperparam("momentum", momentum)) {
  optimizer_name_ = "MomentumSGD";
}

std::unique_ptr<UpdateRule> MomentumSGD::create_update_rule() {
  return std::make_unique<detail::FusedRule>(
      optimizer_name_, std::vector<std::string>{"v"}, 1, nullptr,
      [this](const Array& param, const Array& grad, const Array* state, int64_t) {
        backends::fused_update<1>(param, grad, state, [lr = *lr_, momentum = *momentum_]<class T>() {
          using C = compute_t<T>;
          return [lr = C(lr), mom = C(momentum)](T& p, const T& g, T& v) {
            const C vn = mom * C(v) - lr * C(g);
            v = T(vn);
            p = T(C(p) + vn);
          };
        }, optimizer_name_);
      });
}

CorrectedMomentumSGD::CorrectedMomentumSGD(double lr, double momentum)
    : lr_(declare_hyperparam("lr", lr)), momentum_(declare_hyperparam("momentum", momentum)) {
  optimizer_name_ = "CorrectedMomentumSGD";
}

std::unique_ptr<UpdateRule> CorrectedMomentumSGD::create_update_rule() {
  return std::make_unique<detail::FusedRule>(
      optimizer_name_, std::vector<std::string>{"v"}, 1, nullptr,
      [this](const Array& param, const Array& grad, const Array* state, int64_t) {
        backends::fused_update<1>(param, grad, state, [lr = *lr_, momentum = *momentum_]<class T>() {
          using C = compute_t<T>;
          return [lr = C(lr), mom = C(momentum)](T& p, const T& g, T& v) {
            const C vn = mom * C(v) - C(g);
            v = T(vn);
            p = T(C(p) + lr * vn);
          };
        }, optimizer_name_);
      });
}

NesterovAG::NesterovAG(double lr, double momentum)
    : lr_(declare_hyperparam("lr", lr)), momentum_(declare_hyperparam("momentum", momentum)) {
  optimizer_name_ = "NesterovAG";
}

std::unique_ptr<UpdateRule> NesterovAG::create_update_rule() {
  return std::make_unique<detail::FusedRule>(
      optimizer_name_, std::vector<std::string>{"v"}, 1, nullptr,
      [this](const Array& param, const Array& grad, const Array* state, int64_t) {
        backends::fused_update<1>(param, grad, state, [lr = *lr_, momentum = *momentum_]<class T>() {
          using C = compute_t<T>;
          // Chainer's NesterovAG: v = mom v - lr g; p += mom^2 v - (1 + mom) lr g.
          const C mom = C(momentum), lrc = C(lr), mom2 = mom * mom, glr = (C(1) + mom) * lrc;
          return [=](T& p, const T& g, T& v) {
            const C gc = C(g);
            const C vn = mom * C(v) - lrc * gc;
            v = T(vn);
            p = T(C(p) + mom2 * vn - glr * gc);
          };
        }, optimizer_name_);
      });
}

}  // namespace rensa::optimizers
