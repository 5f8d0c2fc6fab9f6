// Optimizer hooks. Each rewrites the gradients in place with array-level kernels (no graph is
// recorded): gradients are contiguous arrays owned by their parameters.
#include "rensa/optimizers/hooks.h"

#include <cmath>
#include <string>
#include <utility>

#include "rensa/core/config.h"

#include "src/functions/common.h"

namespace rensa::optimizers {
namespace {

namespace fd = rensa::functions::detail;

// Calls fn(param data, grad data) for every initialized parameter with a gradient.
template <class Fn>
void for_each_grad(Optimizer& optimizer, const char* hook, Fn&& fn) {
  RENSA_CHECK(optimizer.target() != nullptr, ValueError, hook, ": the optimizer has no target; call setup(link) first");
  for (const Variable& p : optimizer.target()->params(false)) {
    const Variable g = p.grad();
    if (g.is_null()) continue;
    fn(p.array(), g.array());
  }
}

}  // namespace

void WeightDecay::operator()(Optimizer& optimizer) {
  for_each_grad(optimizer, "WeightDecay", [&](const Array& p, const Array& g) {
    g.assign(fd::binary("WeightDecay", BinaryOp::add, g, fd::unary("WeightDecay", UnaryOp::affine, p, rate_, 0.0)));
  });
}

void Lasso::operator()(Optimizer& optimizer) {
  for_each_grad(optimizer, "Lasso", [&](const Array& p, const Array& g) {
    const Array sign = fd::unary("Lasso", UnaryOp::sign, p);
    g.assign(fd::binary("Lasso", BinaryOp::add, g, fd::unary("Lasso", UnaryOp::affine, sign, rate_, 0.0)));
  });
}

GradientClipping::GradientClipping(double threshold) : threshold_(threshold) {
  RENSA_CHECK(threshold > 0.0, ValueError, "GradientClipping: threshold must be positive, got ", threshold);
}

void GradientClipping::operator()(Optimizer& optimizer) {
  double sqnorm = 0.0;
  for_each_grad(optimizer, "GradientClipping", [&](const Array&, const Array& g) {
    if (g.size() == 0) return;
    // 16-bit gradients are squared in float32: their squares overflow float16 from 256 on.
    const Array gc = is_half(g.dtype()) ? g.astype(Dtype::float32) : g;
    const Array sq = fd::unary("GradientClipping", UnaryOp::square, gc);
    Shape axes;
    for (int64_t i = 0; i < sq.ndim(); ++i) axes.push_back(i);
    sqnorm +=
        fd::reduce("GradientClipping", ReduceOp::sum, sq, axes, false, Dtype::float64).to(Device::cpu()).item<double>();
  });
  last_norm_ = std::sqrt(sqnorm);
  if (!(last_norm_ > threshold_)) return;
  const double rate = threshold_ / last_norm_;
  for_each_grad(optimizer, "GradientClipping", [&](const Array&, const Array& g) {
    g.assign(fd::unary("GradientClipping", UnaryOp::affine, g, rate, 0.0));
  });
}

GradientHardClipping::GradientHardClipping(double lower, double upper) : lower_(lower), upper_(upper) {
  RENSA_CHECK(lower <= upper, ValueError, "GradientHardClipping: lower bound ", lower, " exceeds upper bound ", upper);
}

void GradientHardClipping::operator()(Optimizer& optimizer) {
  for_each_grad(optimizer, "GradientHardClipping", [&](const Array&, const Array& g) {
    g.assign(fd::unary("GradientHardClipping", UnaryOp::clip, g, lower_, upper_));
  });
}

Array GradientNoise::exponential_decay_noise(const Array& grad, const GradientNoise& hook, const UpdateRule& rule,
                                             Generator& gen) {
  const double stddev = std::sqrt(hook.eta() / std::pow(1.0 + static_cast<double>(rule.t), 0.55));
  return random::normal(grad.shape(), 0.0, stddev, grad.dtype(), grad.device(), &gen);
}

GradientNoise::GradientNoise(double eta, NoiseFunc noise_func, std::optional<uint64_t> seed)
    : eta_(eta), noise_func_(std::move(noise_func)), seed_(seed ? *seed : config().seed) {
  RENSA_CHECK(std::isfinite(eta) && eta >= 0.0, ValueError, "GradientNoise: eta must be finite and >= 0, got ", eta);
  RENSA_CHECK(noise_func_ != nullptr, ValueError, "GradientNoise: the noise function is empty");
}

void GradientNoise::operator()(Optimizer& optimizer) {
  RENSA_CHECK(optimizer.target() != nullptr, ValueError,
              "GradientNoise: the optimizer has no target; call setup(link) first");
  uint64_t index = 0;
  for (const auto& [path, p] : optimizer.target()->namedparams(false)) {
    const uint64_t position = index++;
    const Variable g = p.grad();
    if (g.is_null()) continue;
    const UpdateRule* rule = optimizer.rule(p);
    RENSA_CHECK(rule != nullptr, ValueError, "GradientNoise: parameter ", path, " has no update rule");
    const uint64_t t = static_cast<uint64_t>(rule->t);
    Generator gen(::rensa::detail::splitmix64(::rensa::detail::splitmix64(seed_ + position) + t));
    const Array noise = noise_func_(g.array(), *this, *rule, gen);
    RENSA_CHECK(noise.shape() == g.shape(), ShapeError, "GradientNoise: the noise function returned shape ",
                noise.shape(), " for parameter ", path, " of shape ", g.shape());
    RENSA_CHECK(noise.dtype() == g.dtype(), DtypeError, "GradientNoise: the noise function returned ", noise.dtype(),
                " for parameter ", path, " of dtype ", g.dtype());
    g.array().assign(fd::binary("GradientNoise", BinaryOp::add, g.array(), noise.to(g.device())));
  }
}

}  // namespace rensa::optimizers
