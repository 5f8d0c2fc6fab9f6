// Normalization functions, composed of differentiable functions (their backward is the chain rule
// through mean, sub, mul and pow, so double backprop works without a dedicated node).
#include "rensa/functions/normalization.h"

#include <vector>

#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
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

void check_inputs(const char* op, const Variable& x, const std::vector<std::pair<const char*, const Variable*>>& params,
                  const Shape& param_shape, double eps) {
  detail::check_floating(op, x);
  RENSA_CHECK(eps > 0.0, ValueError, op, ": eps must be positive, got ", eps);
  for (const auto& [name, p] : params) {
    if (p->is_null()) continue;
    detail::check_same_dtype_device(op, {&x, p});
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

}  // namespace

BatchNormResult batch_normalization(const Variable& x, const Variable& gamma, const Variable& beta,
                                    const BatchNormOptions& options) {
  constexpr const char* op = "batch_normalization";
  RENSA_CHECK(!x.is_null(), ValueError, op, ": x is null");
  const Shape axes = bn_axes(op, x, options.axes);
  const ParamShapes ps = param_shapes(x.shape(), axes);
  check_inputs(op, x, {{"gamma", &gamma}, {"beta", &beta}}, ps.param, options.eps);
  int64_t m = 1;
  for (int64_t a : axes) m *= x.shape()[static_cast<std::size_t>(a)];
  RENSA_CHECK(m > 0, ValueError, op, ": the reduced axes of x ", x.shape(), " hold no element");
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

}  // namespace rensa::functions
