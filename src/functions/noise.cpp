// Stochastic regularization.
#include "rensa/functions/noise.h"

#include <limits>

#include "rensa/core/config.h"
#include "rensa/functions/activation.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/linalg.h"
#include "rensa/functions/reduction.h"
#include "src/functions/common.h"

namespace rensa::functions {

Variable dropout(const Variable& x, double ratio, Generator* gen) {
  constexpr const char* op = "dropout";
  rensa::detail::ForwardEntry entry(op, x);
  detail::check_floating(op, x);
  RENSA_CHECK(ratio >= 0.0 && ratio < 1.0, ValueError, op, ": ratio must be in [0, 1), got ", ratio);
  if (!config().train || ratio == 0.0) return x;

  // 16-bit inputs draw in float32 so the kept fraction is not skewed by coarse rounding of u.
  const Dtype draw_dtype = x.dtype() == Dtype::float64 ? Dtype::float64 : Dtype::float32;
  Array u = random::uniform(x.shape(), 0.0, 1.0, draw_dtype, x.device(), gen);
  // mask = (u >= ratio) / (1 - ratio): a constant, so the backward is gy * mask.
  Array keep = detail::binary(op, BinaryOp::ge, u, detail::scalar_like(ratio, u));
  Array mask = detail::unary(op, UnaryOp::affine, keep, 1.0 / (1.0 - ratio), 0.0);
  if (mask.dtype() != x.dtype()) mask = mask.astype(x.dtype());

  Array y = detail::binary(op, BinaryOp::mul, x.array(), mask);
  return record1(op, {x}, std::move(y), [mask](const BackwardContext& ctx) {
    return std::vector<Variable>{mul(ctx.grad_output(), Variable(mask))};
  });
}

namespace {

void check_like(const char* op, const Variable& a, const char* na, const Variable& b, const char* nb) {
  detail::check_floating(op, a, na);
  detail::check_floating(op, b, nb);
  detail::check_same_dtype_device(op, {&a, &b});
  RENSA_CHECK(a.shape() == b.shape(), ShapeError, op, ": ", na, " ", a.shape(), " and ", nb, " ", b.shape(),
              " must have the same shape");
}

// A constant 0/1 array of `like`'s dtype: 1 where u ~ U(0, 1) < p.
Array bernoulli(const char* op, const Shape& shape, double p, const Variable& like, Generator* gen) {
  const Dtype draw = like.dtype() == Dtype::float64 ? Dtype::float64 : Dtype::float32;
  Array u = random::uniform(shape, 0.0, 1.0, draw, like.device(), gen);
  Array m = detail::binary(op, BinaryOp::lt, u, detail::scalar_like(p, u));
  return m.dtype() == like.dtype() ? m : m.astype(like.dtype());
}

}  // namespace

Variable gaussian(const Variable& mean, const Variable& ln_var, Array* eps, Generator* gen) {
  constexpr const char* op = "gaussian";
  check_like(op, mean, "mean", ln_var, "ln_var");
  Array e;
  if (eps != nullptr && !eps->is_null()) {
    RENSA_CHECK(eps->dtype() == mean.dtype(), DtypeError, op, ": eps has dtype ", eps->dtype(), ", mean ",
                mean.dtype());
    RENSA_CHECK(eps->shape() == mean.shape(), ShapeError, op, ": eps ", eps->shape(), " must have mean's shape ",
                mean.shape());
    e = eps->device() == mean.device() ? *eps : eps->to(mean.device());
  } else {
    e = random::normal(mean.shape(), 0.0, 1.0, mean.dtype(), mean.device(), gen);
    if (eps != nullptr) *eps = e;
  }
  return add(mean, mul(exp(mul(ln_var, 0.5)), Variable(e)));
}

Variable gumbel_softmax(const Variable& log_pi, double tau, int64_t axis, Generator* gen) {
  constexpr const char* op = "gumbel_softmax";
  detail::check_floating(op, log_pi, "log_pi");
  RENSA_CHECK(tau > 0.0, ValueError, op, ": tau must be positive, got ", tau);
  if (log_pi.ndim() == 0) return Variable(Array::ones({}, log_pi.dtype(), log_pi.device()));
  const int64_t ax = normalize_axis(axis, log_pi.ndim(), op);
  // u in [tiny, 1) so that g is finite.
  const double tiny = std::numeric_limits<float>::min();
  Array g = random::uniform(log_pi.shape(), tiny, 1.0, log_pi.dtype(), log_pi.device(), gen);
  for (UnaryOp k : {UnaryOp::log, UnaryOp::neg, UnaryOp::log, UnaryOp::neg}) {
    RENSA_KERNEL(g.device(), unary, op)(k, g, g, 0.0, 0.0);
  }
  return softmax(mul(add(log_pi, Variable(g)), 1.0 / tau), ax);
}

Variable zoneout(const Variable& h, const Variable& x, double ratio, Generator* gen) {
  constexpr const char* op = "zoneout";
  check_like(op, h, "h", x, "x");
  RENSA_CHECK(ratio >= 0.0 && ratio <= 1.0, ValueError, op, ": ratio must be in [0, 1], got ", ratio);
  if (!config().train) return x;
  const Array keep_h = bernoulli(op, h.shape(), ratio, h, gen);
  const Array keep_x = detail::unary(op, UnaryOp::affine, keep_h, -1.0, 1.0);
  return add(mul(h, Variable(keep_h)), mul(x, Variable(keep_x)));
}

Variable simplified_dropconnect(const Variable& x, const Variable& W, const Variable& b, double ratio,
                                const Array& mask, bool use_batchwise_mask, Generator* gen) {
  constexpr const char* op = "simplified_dropconnect";
  detail::check_floating(op, x);
  detail::check_floating(op, W, "W");
  detail::check_same_dtype_device(op, {&x, &W});
  RENSA_CHECK(ratio >= 0.0 && ratio < 1.0, ValueError, op, ": ratio must be in [0, 1), got ", ratio);
  RENSA_CHECK(x.ndim() >= 1 && W.ndim() == 2, ShapeError, op, ": x must be (N, ...) and W (out, in), got x ",
              x.shape(), " and W ", W.shape());
  const int64_t n = x.shape()[0], out = W.shape()[0], in = W.shape()[1];
  RENSA_CHECK(x.size() == n * in, ShapeError, op, ": x ", x.shape(), " does not flatten to (", n, ", ", in,
              ") for W ", W.shape());
  if (!config().train) ratio = 0.0;
  const Shape mask_shape = use_batchwise_mask ? Shape{n, out, in} : Shape{out, in};
  Array m;
  if (!mask.is_null()) {
    RENSA_CHECK(mask.shape() == mask_shape, ShapeError, op, ": mask ", mask.shape(), " must be ", mask_shape);
    RENSA_CHECK(mask.dtype() == Dtype::bool_ || mask.dtype() == W.dtype(), DtypeError, op,
                ": mask must be bool or W's dtype ", W.dtype(), ", got ", mask.dtype());
    m = mask.astype(W.dtype()).to(W.device());
  } else {
    m = bernoulli(op, mask_shape, 1.0 - ratio, W, gen);
  }
  m = detail::unary(op, UnaryOp::affine, m, 1.0 / (1.0 - ratio), 0.0);
  const Variable x2 = reshape(x, {n, in});
  Variable y;
  if (use_batchwise_mask) {
    // y[i, j] = sum_k W[j, k] mask[i, j, k] x[i, k]
    const Variable wm = mul(broadcast_to(reshape(W, {1, out, in}), mask_shape), Variable(m));
    y = sum(mul(wm, broadcast_to(reshape(x2, {n, 1, in}), mask_shape)), Shape{2});
  } else {
    y = matmul(x2, mul(W, Variable(m)), false, true);
  }
  if (b.is_null()) return y;
  detail::check_floating(op, b, "b");
  RENSA_CHECK(b.shape() == Shape{out}, ShapeError, op, ": b ", b.shape(), " must be (", out, ",) for W ", W.shape());
  return add(y, broadcast_to(reshape(b, {1, out}), y.shape()));
}

}  // namespace rensa::functions
