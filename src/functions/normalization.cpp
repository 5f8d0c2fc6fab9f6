// Normalization functions, composed of differentiable functions (their backward is the chain rule
// through mean, sub, mul and pow, so double backprop works without a dedicated node). Batch
// normalization over the usual axes (every axis but 1, whole batch or ghost sub-batches) runs on
// fused kernels instead: the composite's dozen passes over a large batch and its saved
// intermediates cost more than the convolutions around it. Its double backprop differentiates the
// composite form.
#include "rensa/functions/normalization.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "rensa/core/config.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/convolution.h"
#include "rensa/functions/reduction.h"
#include "src/functions/common.h"

namespace rensa::functions {
namespace {

// The reduced axes of a batch normalization (every axis but 1 when none are given).
Shape bn_axes(const char* op, const Variable& x, const Shape& axes) {
  RENSA_CHECK(x.ndim() >= 2, ShapeError, op, ": x ", x.shape(), " must have at least 2 dimensions (N, C, ...)");
  if (!axes.empty()) return detail::normalize_axes(op, axes, x.ndim(), false);
  Shape out;
  for (int64_t i = 0; i < x.ndim(); ++i) {
    if (i != 1) out.push_back(i);
  }
  return out;
}

// x's shape without `axes` (the parameters' shape) and with them set to 1 (where they broadcast).
struct ParamShapes {
  Shape param, kept;
};
ParamShapes param_shapes(const Shape& shape, const Shape& axes) {
  ParamShapes s;
  s.kept = shape;
  for (int64_t a : axes) s.kept[static_cast<std::size_t>(a)] = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    bool reduced = false;
    for (int64_t a : axes) reduced = reduced || static_cast<std::size_t>(a) == i;
    if (!reduced) s.param.push_back(shape[i]);
  }
  return s;
}

// `float32_params`: float32 parameters may go with a 16-bit x (batch normalization's mixed form).
void check_inputs(const char* op, const Variable& x, const std::vector<std::pair<const char*, const Variable*>>& params,
                  const Shape& param_shape, double eps, bool float32_params = false) {
  detail::check_floating(op, x);
  RENSA_CHECK(eps > 0.0, ValueError, op, ": eps must be positive, got ", eps);
  for (const auto& [name, p] : params) {
    if (p->is_null()) continue;
    if (float32_params && is_half(x.dtype()) && p->dtype() == Dtype::float32) {
      detail::check_same_device(op, {&x, p});
    } else {
      detail::check_same_dtype_device(op, {&x, p});
    }
    RENSA_CHECK(p->shape() == param_shape, ShapeError, op, ": ", name, " ", p->shape(), " does not fit x ", x.shape(),
                " (expected ", param_shape, ")");
  }
}

// gamma * xhat + beta with the parameters reshaped to broadcast over the reduced axes.
Variable scale_shift(Variable xhat, const Variable& gamma, const Variable& beta, const Shape& kept) {
  if (!gamma.is_null()) xhat = mul(xhat, reshape(gamma, kept));
  if (!beta.is_null()) xhat = add(xhat, reshape(beta, kept));
  return xhat;
}

// The reducer's result for `partial`, checked: a bad one would otherwise surface as a confusing
// error in the arithmetic that follows.
Variable reduce_partial(const char* op, const BatchNormOptions& options, const Variable& partial) {
  Variable total = options.allreduce_sum(partial);
  RENSA_CHECK(
      !total.is_null() && total.shape() == partial.shape() && total.dtype() == partial.dtype(), ValueError, op,
      ": allreduce_sum returned ",
      total.is_null() ? std::string("a null variable") : ::rensa::detail::concat(total.shape(), " ", total.dtype()),
      " for partial sums ", partial.shape(), " ", partial.dtype());
  return total;
}

// Batch normalization with the statistics over every worker's batch: per-channel sums reduced by
// options.allreduce_sum in two passes (the mean, then the squared deviations from it), which keeps
// the variance as accurate as the single-process one. Differentiable through the reducer.
BatchNormResult batch_normalization_over_workers(const char* op, const Variable& x, const Variable& gamma,
                                                 const Variable& beta, const BatchNormOptions& options,
                                                 const Shape& axes, const ParamShapes& ps, int64_t m) {
  // 16-bit sums of a large batch overflow: the statistics are taken in float32.
  const bool half = is_half(x.dtype());
  const Variable xs = half ? cast(x, Dtype::float32) : x;
  const int64_t p = ps.param.numel();
  // Pass 1: the sums of x with the element count appended, in one reduction.
  const Variable count(Array::full({1}, static_cast<double>(m), xs.dtype(), xs.device()));
  const Variable first = reduce_partial(op, options, concat({reshape(sum(xs, axes), {p}), count}, 0));
  const std::vector<Variable> parts = split_axis(first, std::vector<int64_t>{p}, 0);
  const double total = std::round(parts[1].array().to(Device::cpu()).item<double>());
  RENSA_CHECK(total > 0.0, ValueError, op, ": the reduced axes of x ", x.shape(),
              " hold no element on any worker (elements over all workers: ", total, ")");
  const Variable mu = reshape(mul(parts[0], 1.0 / total), ps.kept);
  // Pass 2: the squared deviations from the global mean.
  const Variable xc = sub(xs, mu);
  const Variable second = reduce_partial(op, options, reshape(sum(square(xc), axes), {p}));
  const Variable var = reshape(mul(second, 1.0 / total), ps.kept);
  Variable xhat = mul(xc, pow(add(var, options.eps), -0.5));
  if (half) xhat = cast(xhat, x.dtype());
  BatchNormResult r;
  r.y = scale_shift(xhat, gamma, beta, ps.kept);
  r.mean = mu.array().reshape(ps.param).astype(x.dtype());
  r.var = var.array().reshape(ps.param).astype(x.dtype());
  r.count = static_cast<int64_t>(total);
  return r;
}

// The checks of ghost batch normalization's options against x and the axes.
void check_ghost(const char* op, const Variable& x, const BatchNormOptions& options, const Shape& axes) {
  RENSA_CHECK(options.ghost_batch_size.has_value(), ValueError, op, ": check_ghost needs ghost_batch_size set");
  const int64_t g = *options.ghost_batch_size;
  RENSA_CHECK(g > 0, ValueError, op, ": ghost_batch_size must be positive, got ", g);
  RENSA_CHECK(!options.allreduce_sum, ValueError, op,
              ": ghost_batch_size and allreduce_sum exclude each other (statistics over sub-batches or over workers)");
  RENSA_CHECK(!axes.empty() && axes[0] == 0, ValueError, op,
              ": ghost_batch_size needs axis 0 among the reduced axes, got ", axes);
  const int64_t n = x.shape()[0];
  RENSA_CHECK(n % g == 0, ShapeError, op, ": x ", x.shape(), " has ", n,
              " examples on axis 0, not a multiple of ghost_batch_size ", g);
  RENSA_CHECK(n > 0, ValueError, op, ": the reduced axes of x ", x.shape(), " hold no element");
}

// Ghost batch normalization: x (N, ...) viewed as (K, G, ...), each of the K sub-batches
// normalized over its own G examples (and the other reduced axes), then gamma and beta applied.
BatchNormResult ghost_batch_normalization(const Variable& x, const Variable& gamma,
                                          const Variable& beta, const BatchNormOptions& options, const Shape& axes,
                                          const ParamShapes& ps) {
  RENSA_CHECK(options.ghost_batch_size.has_value(), ValueError,
              "ghost_batch_normalization: ghost_batch_size is not set");
  const int64_t g = *options.ghost_batch_size, n = x.shape()[0];
  Shape split{n / g, g};
  for (std::size_t i = 1; i < x.shape().size(); ++i) split.push_back(x.shape()[i]);
  Shape sub_axes{1};
  for (std::size_t i = 1; i < axes.size(); ++i) sub_axes.push_back(axes[i] + 1);
  BatchNormOptions sub{options.eps};
  sub.axes = sub_axes;
  BatchNormResult r = batch_normalization(reshape(x, split), Variable(), Variable(), sub);
  r.y = scale_shift(reshape(r.y, x.shape()), gamma, beta, ps.kept);
  return r;
}

// x (N, C, S) as a view of a contiguous or 4-d channels-last array (the layouts the kernels take).
Array bn_view3(const Array& a) {
  const int64_t n = a.shape()[0], c = a.shape()[1], s = a.size() / std::max<int64_t>(1, n * c);
  if (a.suggest_memory_format() == MemoryFormat::channels_last) {
    return a.transpose({0, 2, 3, 1}).reshape({n, s, c}).transpose({0, 2, 1});
  }
  return a.reshape({n, c, s});
}

Array empty_like_layout(const Array& like) {
  return Array::empty(like.shape(), like.dtype(), like.device(), like.suggest_memory_format());
}

// The composite form of batch normalization over `axes` (ghost sub-batches when asked).
BatchNormResult composite_batch_normalization(const Variable& x, const Variable& gamma,
                                              const Variable& beta, const BatchNormOptions& options,
                                              const Shape& axes, const ParamShapes& ps) {
  const Variable& p = gamma.is_null() ? beta : gamma;
  if (!p.is_null() && p.dtype() != x.dtype()) {  // 16-bit x, float32 parameters: in float32
    BatchNormResult r = composite_batch_normalization(cast(x, p.dtype()), gamma, beta, options, axes, ps);
    r.y = cast(r.y, x.dtype());
    return r;
  }
  if (options.ghost_batch_size) return ghost_batch_normalization(x, gamma, beta, options, axes, ps);
  const Variable mu = mean(x, axes, true);
  const Variable xc = sub(x, mu);
  const Variable var = mean(square(xc), axes, true);
  const Variable xhat = mul(xc, pow(add(var, options.eps), -0.5));
  BatchNormResult r;
  r.y = scale_shift(xhat, gamma, beta, ps.kept);
  r.mean = mu.array().reshape(ps.param);
  r.var = var.array().reshape(ps.param);
  return r;
}

// Batch normalization over every axis but 1 on the fused kernels, in `groups` sub-batches of
// N / groups examples (1: the whole batch): statistics (C), or (groups, C) for ghost sub-batches.
BatchNormResult fused_batch_normalization(const char* op, const Variable& x, const Variable& gamma,
                                          const Variable& beta, const BatchNormOptions& options, const Shape& axes,
                                          const ParamShapes& ps, int64_t groups) {
  rensa::detail::ForwardEntry entry(op, x, gamma, beta);
  Array xa = x.array();
  if (!xa.is_contiguous() && !xa.is_channels_last()) xa = xa.contiguous();
  const int64_t c = xa.shape()[1];
  const Array y = empty_like_layout(xa);
  // Statistics of a 16-bit x in float32; the parameters' gradients in their own dtype.
  const Dtype stat = is_half(xa.dtype()) ? Dtype::float32 : xa.dtype();
  const Variable& p = gamma.is_null() ? beta : gamma;
  const Dtype param = p.is_null() ? stat : p.dtype();
  const Array mu = Array::empty({groups, c}, stat, xa.device());
  const Array var = Array::empty({groups, c}, stat, xa.device());
  const Array g = gamma.is_null() ? Array() : gamma.array().reshape({c});
  const Array b = beta.is_null() ? Array() : beta.array().reshape({c});
  const double eps = options.eps;
  RENSA_KERNEL(x.device(), batch_norm_forward, op)(bn_view3(xa), g, b, bn_view3(y), mu, var, eps);
  auto backward = [x, gamma, beta, xa, g, mu, var, param, options, axes, ps, groups, op](const BackwardContext& ctx) {
    if (config().enable_backprop) {
      return detail::recompute_grads(ctx, {x, gamma, beta}, [&](const std::vector<Variable>& in) {
        return std::vector<Variable>{composite_batch_normalization(in[0], in[1], in[2], options, axes, ps).y};
      });
    }
    const Array gy = ctx.grad_output(0).array().to_memory_format(xa.suggest_memory_format());
    const Array gx = empty_like_layout(xa);
    const int64_t ch = xa.shape()[1];
    // Ghost sub-batches' partial sums stay in float64 until they are summed, so the parameters'
    // gradients are rounded to their dtype once, as a whole batch's are.
    const Dtype partial = groups == 1 ? param : Dtype::float64;
    const Array gg = Array::empty({groups, ch}, partial, xa.device());
    const Array gb = Array::empty({groups, ch}, partial, xa.device());
    const auto kernel = RENSA_KERNEL(xa.device(), batch_norm_backward, op);
    kernel(bn_view3(xa), g, mu, var, bn_view3(gy), bn_view3(gx), gg, gb, options.eps);
    auto param_grad = [&](const Array& per_group) {
      const Array total =
          groups == 1 ? per_group : detail::reduce(op, ReduceOp::sum, per_group, Shape{0}, false, param);
      return Variable(total.reshape(ps.param));
    };
    std::vector<Variable> out(3);
    if (ctx.needs_grad(0)) out[0] = Variable(gx);
    if (ctx.needs_grad(1)) out[1] = param_grad(gg);
    if (ctx.needs_grad(2)) out[2] = param_grad(gb);
    return out;
  };
  BatchNormResult r;
  r.y = record(op, {x, gamma, beta}, {y}, std::move(backward))[0];
  r.mean = groups == 1 ? mu.reshape(ps.param) : mu;
  r.var = groups == 1 ? var.reshape(ps.param) : var;
  return r;
}

// Whether `axes` are batch normalization's usual ones: every axis but 1.
bool usual_axes(const Shape& axes, int64_t ndim) {
  if (static_cast<int64_t>(axes.size()) != ndim - 1) return false;
  for (int64_t a : axes) {
    if (a == 1) return false;
  }
  return true;
}

}  // namespace

BatchNormResult batch_normalization(const Variable& x, const Variable& gamma, const Variable& beta,
                                    const BatchNormOptions& options) {
  constexpr const char* op = "batch_normalization";
  RENSA_CHECK(!x.is_null(), ValueError, op, ": x is null");
  const Shape axes = bn_axes(op, x, options.axes);
  const ParamShapes ps = param_shapes(x.shape(), axes);
  check_inputs(op, x, {{"gamma", &gamma}, {"beta", &beta}}, ps.param, options.eps, true);
  RENSA_CHECK(gamma.is_null() || beta.is_null() || gamma.dtype() == beta.dtype(), DtypeError, op, ": gamma ",
              gamma.dtype(), " and beta ", beta.dtype(), " differ in dtype");
  const Variable& p = gamma.is_null() ? beta : gamma;
  const bool mixed = !p.is_null() && p.dtype() != x.dtype();
  int64_t m = 1;
  for (int64_t a : axes) m *= x.shape()[static_cast<std::size_t>(a)];
  if (options.allreduce_sum && !options.ghost_batch_size) {
    RENSA_CHECK(!mixed, DtypeError, op, ": ", x.dtype(), " x with ", p.dtype(),
                " parameters: statistics over workers need one dtype");
    return batch_normalization_over_workers(op, x, gamma, beta, options, axes, ps, m);
  }
  int64_t groups = 1;
  if (options.ghost_batch_size) {
    check_ghost(op, x, options, axes);
    groups = x.shape()[0] / *options.ghost_batch_size;
    m /= groups;
  }
  RENSA_CHECK(m > 0, ValueError, op, ": the reduced axes of x ", x.shape(), " hold no element");
  BatchNormResult r = usual_axes(axes, x.ndim())
                          ? fused_batch_normalization(op, x, gamma, beta, options, axes, ps, groups)
                          : composite_batch_normalization(x, gamma, beta, options, axes, ps);
  r.count = m;
  return r;
}

Variable fixed_batch_normalization(const Variable& x, const Variable& gamma, const Variable& beta,
                                   const Variable& mean_, const Variable& var_, const BatchNormOptions& options) {
  constexpr const char* op = "fixed_batch_normalization";
  RENSA_CHECK(!x.is_null(), ValueError, op, ": x is null");
  RENSA_CHECK(!mean_.is_null() && !var_.is_null(), ValueError, op, ": mean and var are required");
  const Shape axes = bn_axes(op, x, options.axes);
  const ParamShapes ps = param_shapes(x.shape(), axes);
  check_inputs(op, x, {{"gamma", &gamma}, {"beta", &beta}, {"mean", &mean_}, {"var", &var_}}, ps.param, options.eps);
  const Variable inv_std = reshape(pow(add(var_, options.eps), -0.5), ps.kept);
  const Variable xhat = mul(sub(x, reshape(mean_, ps.kept)), inv_std);
  return scale_shift(xhat, gamma, beta, ps.kept);
}

Variable batch_renormalization(const Variable& x, const Variable& gamma, const Variable& beta, double rmax, double dmax,
                               Array* running_mean, Array* running_var, double decay, bool update_statistics,
                               const BatchNormOptions& options) {
  constexpr const char* op = "batch_renormalization";
  RENSA_CHECK(!x.is_null() && !gamma.is_null() && !beta.is_null(), ValueError, op, ": x, gamma and beta are required");
  RENSA_CHECK(rmax >= 1.0 && dmax >= 0.0, ValueError, op, ": need rmax >= 1 and dmax >= 0, got rmax ", rmax,
              " and dmax ", dmax);
  RENSA_CHECK(decay >= 0.0 && decay <= 1.0, ValueError, op, ": decay must be in [0, 1], got ", decay);
  RENSA_CHECK(!options.allreduce_sum, ValueError, op, ": allreduce_sum is not supported");
  RENSA_CHECK(!options.ghost_batch_size, ValueError, op, ": ghost_batch_size is not supported");
  const Shape axes = bn_axes(op, x, options.axes);
  const ParamShapes ps = param_shapes(x.shape(), axes);
  check_inputs(op, x, {{"gamma", &gamma}, {"beta", &beta}}, ps.param, options.eps);
  Array zeros, ones;
  Array& rm = running_mean != nullptr ? *running_mean : zeros;
  Array& rv = running_var != nullptr ? *running_var : ones;
  if (rm.is_null()) rm = Array::zeros(ps.param, x.dtype(), x.device());
  if (rv.is_null()) rv = Array::ones(ps.param, x.dtype(), x.device());
  for (const auto& [name, a] : {std::pair<const char*, const Array*>{"running_mean", &rm}, {"running_var", &rv}}) {
    RENSA_CHECK(a->shape() == ps.param && a->dtype() == x.dtype() && a->device() == x.device(), ShapeError, op, ": ",
                name, " ", a->shape(), " ", a->dtype(), " on ", a->device(), " must be ", ps.param, " ", x.dtype(),
                " on ", x.device());
  }
  const BatchNormResult b = batch_normalization(x, Variable(), Variable(), options);
  Array r, d;
  {
    auto guard = no_backprop_mode();
    const Variable sigma = sqrt(add(Variable(rv), options.eps));
    // rmax 1 / dmax 0 pin r to 1 / d to 0 (plain batch normalization), where clip has no range.
    r = rmax > 1.0 ? clip(div(sqrt(add(Variable(b.var), options.eps)), sigma), 1.0 / rmax, rmax).array()
                   : Array::ones(ps.param, x.dtype(), x.device());
    d = dmax > 0.0 ? clip(div(sub(Variable(b.mean), Variable(rm)), sigma), -dmax, dmax).array()
                   : Array::zeros(ps.param, x.dtype(), x.device());
    if (update_statistics) {
      const double adjust = static_cast<double>(b.count) / std::max(static_cast<double>(b.count) - 1.0, 1.0);
      rm.assign(add(mul(Variable(rm), decay), mul(Variable(b.mean), 1.0 - decay)).array());
      rv.assign(add(mul(Variable(rv), decay), mul(Variable(b.var), (1.0 - decay) * adjust)).array());
    }
  }
  const Variable renormed = add(mul(b.y, Variable(r.reshape(ps.kept))), Variable(d.reshape(ps.kept)));
  return scale_shift(renormed, gamma, beta, ps.kept);
}

Variable fixed_batch_renormalization(const Variable& x, const Variable& gamma, const Variable& beta,
                                     const Variable& mean_, const Variable& var_, const BatchNormOptions& options) {
  return fixed_batch_normalization(x, gamma, beta, mean_, var_, options);
}

Variable group_normalization(const Variable& x, int64_t groups, const Variable& gamma, const Variable& beta,
                             double eps) {
  constexpr const char* op = "group_normalization";
  RENSA_CHECK(!x.is_null(), ValueError, op, ": x is null");
  RENSA_CHECK(groups > 0, ValueError, op, ": groups must be positive, got ", groups);
  RENSA_CHECK(x.ndim() >= 2, ShapeError, op, ": x ", x.shape(), " must have at least 2 dimensions (N, C, ...)");
  const int64_t n = x.shape()[0], c = x.shape()[1];
  RENSA_CHECK(c % groups == 0, ShapeError, op, ": groups ", groups, " does not divide the ", c, " channels of x ",
              x.shape());
  check_inputs(op, x, {{"gamma", &gamma}, {"beta", &beta}}, Shape{c}, eps);
  Shape kept(static_cast<std::size_t>(x.ndim()), 1);
  kept[1] = c;
  const int64_t per_group = n * groups > 0 ? x.size() / (n * groups) : 0;
  const Variable xg = reshape(x, {n, groups, per_group});
  const Variable xc = sub(xg, mean(xg, Shape{2}, true));
  const Variable xhat = mul(xc, pow(add(mean(square(xc), Shape{2}, true), eps), -0.5));
  return scale_shift(reshape(xhat, x.shape()), gamma, beta, kept);
}

Variable normalize(const Variable& x, double eps, const Shape& axes_in) {
  constexpr const char* op = "normalize";
  rensa::detail::ForwardEntry entry(op, x);
  detail::check_floating(op, x);
  RENSA_CHECK(eps > 0.0, ValueError, op, ": eps must be positive, got ", eps);
  const Shape axes = detail::normalize_axes(op, axes_in, x.ndim(), false);
  Array y;
  {
    auto guard = no_backprop_mode();
    y = div(x, add(sqrt(sum(square(x), axes, true)), eps)).array();
  }
  return record1(op, {x}, std::move(y), [x, eps, axes](const BackwardContext& ctx) {
    // gx = (gy n - (sum(x gy) / ||x||) x) / n^2 with n = ||x|| + eps; the middle term is 0 where
    // ||x|| = 0, and the square root never sees 0, so every order stays finite.
    const Variable& gy = ctx.grad_output();
    const Variable sq = sum(square(x), axes, true);
    const Array nonzero = detail::binary(op, BinaryOp::ne, sq.array(), detail::scalar_like(0.0, sq.array()), true);
    const Variable one(Array::ones(sq.shape(), sq.dtype(), sq.device()));
    const Variable zero(Array::zeros(sq.shape(), sq.dtype(), sq.device()));
    const Variable len = sqrt(where(nonzero, sq, one));
    const Variable norm = add(where(nonzero, len, zero), eps);
    const Variable along = where(nonzero, div(sum(mul(x, gy), axes, true), len), zero);
    return std::vector<Variable>{div(sub(mul(gy, norm), mul(along, x)), square(norm))};
  });
}

Variable layer_normalization(const Variable& x, const Variable& gamma, const Variable& beta, double eps) {
  constexpr const char* op = "layer_normalization";
  RENSA_CHECK(!x.is_null(), ValueError, op, ": x is null");
  RENSA_CHECK(x.ndim() >= 1, ShapeError, op, ": x ", x.shape(), " must have at least 1 dimension");
  const Shape axes{x.ndim() - 1};
  const Shape param{x.shape().back()};
  check_inputs(op, x, {{"gamma", &gamma}, {"beta", &beta}}, param, eps);
  RENSA_CHECK(x.shape().back() > 0, ValueError, op, ": the last axis of x ", x.shape(), " is empty");
  const Variable mu = mean(x, axes, true);
  const Variable xc = sub(x, mu);
  const Variable var = mean(square(xc), axes, true);
  Variable y = mul(xc, pow(add(var, eps), -0.5));
  if (!gamma.is_null()) y = mul(y, gamma);  // (D,) broadcasts along the last axis
  if (!beta.is_null()) y = add(y, beta);
  return y;
}

Variable local_response_normalization(const Variable& x, int64_t n, double k, double alpha, double beta) {
  constexpr const char* op = "local_response_normalization";
  detail::check_floating(op, x);
  RENSA_CHECK(x.ndim() >= 2, ShapeError, op, ": x ", x.shape(), " must have at least 2 dimensions (N, C, ...)");
  RENSA_CHECK(n >= 1, ValueError, op, ": n must be at least 1, got ", n, " (x ", x.shape(), ")");
  RENSA_CHECK(std::isfinite(k) && k > 0.0, ValueError, op, ": k must be positive, got ", k);
  RENSA_CHECK(std::isfinite(alpha) && alpha >= 0.0, ValueError, op, ": alpha must be at least 0, got ", alpha);
  RENSA_CHECK(std::isfinite(beta) && beta >= 0.0, ValueError, op, ": beta must be at least 0, got ", beta);
  const int64_t half = n / 2, window = 2 * half + 1;
  const Variable x2 = square(x);
  // The windowed sum over channels is an average pooling of x2 viewed as (N, 1, C, rest) with a
  // (window, 1) kernel and zero padding: one pass, and its backward is differentiable again.
  // alpha * sum = (alpha * window) * average.
  Variable s = x2;
  double scale = alpha;
  if (half > 0 && x.size() > 0) {
    const int64_t N = x.shape()[0], C = x.shape()[1];
    const Variable planes = reshape(x2, {N, 1, C, x.size() / (N * C)});
    s = reshape(average_pooling_2d(planes, Int2(window, 1), Int2(1, 1), Int2(half, 0)), x.shape());
    scale = alpha * static_cast<double>(window);
  }
  return mul(x, pow(add(mul(s, scale), k), -beta));
}

}  // namespace rensa::functions
