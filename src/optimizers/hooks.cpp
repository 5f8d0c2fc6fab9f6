// Optimizer hooks. Each rewrites the gradients in place with array-level kernels (no graph is
// recorded): gradients are contiguous arrays owned by their parameters.
#include "rensa/optimizers/hooks.h"

#include <cmath>

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

}  // namespace rensa::optimizers
