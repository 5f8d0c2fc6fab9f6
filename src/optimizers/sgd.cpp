// SGD, MomentumSGD, CorrectedMomentumSGD and NesterovAG: hyperparameters and their update math.
#include "rensa/optimizers/sgd.h"

#include "src/optimizers/fused_rule.h"

namespace rensa::optimizers {
namespace {

// The steps, one element each (backends::fused_update), computing in C.

// p -= lr g
template <class C>
struct SGDStep {
  static constexpr std::size_t n_state = 0;
  C lr;
  explicit SGDStep(double lr) : lr(C(lr)) {}
  template <class T>
  void operator()(T& p, const T& g) const {
    p = T(C(p) - lr * C(g));
  }
};

// v = momentum v - lr g;  p += v
template <class C>
struct MomentumSGDStep {
  static constexpr std::size_t n_state = 1;
  C lr, momentum;
  MomentumSGDStep(double lr, double momentum) : lr(C(lr)), momentum(C(momentum)) {}
  template <class T>
  void operator()(T& p, const T& g, T& v) const {
    const C vn = momentum * C(v) - lr * C(g);
    v = T(vn);
    p = T(C(p) + vn);
  }
};

// v = momentum v - g;  p += lr v (the rate outside the velocity, so a change of lr takes effect at once)
template <class C>
struct CorrectedMomentumSGDStep {
  static constexpr std::size_t n_state = 1;
  C lr, momentum;
  CorrectedMomentumSGDStep(double lr, double momentum) : lr(C(lr)), momentum(C(momentum)) {}
  template <class T>
  void operator()(T& p, const T& g, T& v) const {
    const C vn = momentum * C(v) - C(g);
    v = T(vn);
    p = T(C(p) + lr * vn);
  }
};

// Chainer's NesterovAG: v = momentum v - lr g;  p += momentum^2 v - (1 + momentum) lr g
template <class C>
struct NesterovAGStep {
  static constexpr std::size_t n_state = 1;
  C lr, momentum, momentum2, grad_rate;
  NesterovAGStep(double lr, double momentum)
      : lr(C(lr)), momentum(C(momentum)), momentum2(this->momentum * this->momentum),
        grad_rate((C(1) + this->momentum) * this->lr) {}
  template <class T>
  void operator()(T& p, const T& g, T& v) const {
    const C gc = C(g);
    const C vn = momentum * C(v) - lr * gc;
    v = T(vn);
    p = T(C(p) + momentum2 * vn - grad_rate * gc);
  }
};

}  // namespace

SGD::SGD(double lr) : lr_(declare_hyperparam("lr", lr)) {
  optimizer_name_ = "SGD";
}

std::unique_ptr<UpdateRule> SGD::create_update_rule() {
  return std::make_unique<detail::FusedRule>(
      optimizer_name_, std::vector<std::string>{}, 0, nullptr,
      [this](const Array& param, const Array& grad, const Array* state, int64_t) {
        backends::fused_update<SGDStep>(param, grad, state, optimizer_name_, *lr_);
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
        backends::fused_update<MomentumSGDStep>(param, grad, state, optimizer_name_, *lr_, *momentum_);
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
        backends::fused_update<CorrectedMomentumSGDStep>(param, grad, state, optimizer_name_, *lr_, *momentum_);
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
        backends::fused_update<NesterovAGStep>(param, grad, state, optimizer_name_, *lr_, *momentum_);
      });
}

}  // namespace rensa::optimizers
