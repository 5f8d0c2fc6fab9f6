// Loss functions. softmax_cross_entropy and sigmoid_cross_entropy are fused: one recorded node
// each, forward on Arrays, backward written with differentiable functions (softmax_cross_entropy
// also has a plain Array path for the common case where the backward itself is not recorded).
#include "rensa/functions/loss.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include "rensa/core/config.h"
#include "rensa/functions/activation.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/reduction.h"
#include "src/functions/common.h"

namespace rensa::functions {
namespace {

using Grads = std::vector<Variable>;

enum class Reduce : uint8_t { mean, no };

Reduce parse_reduce(const char* op, std::string_view reduce) {
  return detail::parse_choice(op, "reduce", reduce, {"mean", "no"}) == 0 ? Reduce::mean : Reduce::no;
}

void check_labels(const char* op, const Variable& x, const Array& t) {
  RENSA_CHECK(!t.is_null(), ValueError, op, ": t is null");
  RENSA_CHECK(t.dtype() == Dtype::int32 || t.dtype() == Dtype::int64, DtypeError, op,
              ": t must have dtype int32 or int64, got ", t.dtype(), " with shape ", t.shape());
  RENSA_CHECK(t.device() == x.device(), DeviceError, op, ": x is on ", x.device(), " but t is on ", t.device());
}

// cond ? a : 0 elementwise (cond bool of a's shape).
Array where_or_zero(const char* op, const Array& cond, const Array& a) {
  Array out = Array::empty(a.shape(), a.dtype(), a.device());
  RENSA_KERNEL(a.device(), where, op)(cond, a, detail::scalar_like(0.0, a).broadcast_to(a.shape()), out);
  return out;
}

// sum(values) / divisor as 0-d arrays of values' dtype, divisor = max(sum(mask), 1), or
// max(batch, 1) when `batch` is set (Chainer's normalize=false); also returns the divisor.
Array reduce_mean(const char* op, const Array& values, const Array& mask_f, std::optional<int64_t> batch,
                  Array& divisor) {
  Array total =
      detail::reduce(op, ReduceOp::sum, values, detail::normalize_axes(op, {}, values.ndim()), false, values.dtype());
  if (batch) {
    divisor = Array::scalar(static_cast<double>(std::max<int64_t>(*batch, 1)), values.dtype(), values.device());
  } else {
    Array count = detail::reduce(op, ReduceOp::sum, mask_f, detail::normalize_axes(op, {}, mask_f.ndim()), false,
                                 mask_f.dtype());
    // With every label ignored the sum is 0 and the result 0 (not 0/0).
    divisor = detail::binary(op, BinaryOp::maximum, count, detail::scalar_like(1.0, count));
  }
  return detail::binary(op, BinaryOp::div, total, divisor);
}

// z = x - max(x) along axis 1 (a row of infinities gives no inf - inf).
Array shifted_logits(const char* op, const Array& xa) {
  if (xa.size() == 0) return Array::empty(xa.shape(), xa.dtype(), xa.device());
  Array mx = detail::reduce(op, ReduceOp::max, xa, Shape{1}, true, xa.dtype());
  RENSA_KERNEL(xa.device(), unary, op)(UnaryOp::finite_or_zero, mx, mx, 0.0, 0.0);
  return detail::binary(op, BinaryOp::sub, xa, mx);
}

// e = exp(e) in place; returns its sum along axis 1 (kept; ones for an empty x).
Array exp_and_sum(const char* op, Array& e) {
  Shape kept = e.shape();
  kept[1] = 1;
  if (e.size() == 0) return Array::ones(kept, e.dtype(), e.device());
  RENSA_KERNEL(e.device(), unary, op)(UnaryOp::exp, e, e, 0.0, 0.0);
  return detail::reduce(op, ReduceOp::sum, e, Shape{1}, true, e.dtype());
}

// The coefficient each element's gradient is scaled by: gy / divisor ("mean", a 0-d variable) or
// gy reshaped to `shape` ("no").
Variable grad_coefficient(Reduce reduce, const Variable& gy, const Array& divisor, const Shape& shape) {
  if (reduce == Reduce::mean) return div(gy, Variable(divisor));
  return reshape(gy, shape);
}

// Soft targets: t a distribution over axis 1 for each sample, of x's shape.
Variable soft_target_cross_entropy(const char* op, const Variable& x, const Array& t, Reduce mode, bool kl,
                                   bool cache_score) {
  RENSA_CHECK(t.shape() == x.shape(), ShapeError, op, ": t ", t.shape(), " of dtype ", t.dtype(),
              " is taken as soft targets, which must have x's shape ", x.shape(),
              "; integer labels must be int32 or int64");
  RENSA_CHECK(t.device() == x.device(), DeviceError, op, ": x is on ", x.device(), " but t is on ", t.device());
  RENSA_CHECK(x.ndim() >= 2, ShapeError, op, ": x ", x.shape(), " must have a class axis 1");
  const Array& xa = x.array();
  const Array tx = t.dtype() == x.dtype() ? t : t.astype(x.dtype());
  // log softmax(x) = z - log(sum(exp(z))).
  const Array z = shifted_logits(op, xa);
  Array e = z.copy();
  Array sum_e = exp_and_sum(op, e);
  const Array log_y = detail::binary(op, BinaryOp::sub, z, detail::unary(op, UnaryOp::log, sum_e));
  Array term;
  if (kl) {
    const Array log_t =
        detail::unary(op, UnaryOp::log, detail::binary(op, BinaryOp::add, tx, detail::scalar_like(1e-7, tx)));
    term = detail::binary(op, BinaryOp::mul, tx, detail::binary(op, BinaryOp::sub, log_t, log_y));
  } else {
    term = detail::unary(op, UnaryOp::neg, detail::binary(op, BinaryOp::mul, tx, log_y));
  }
  Array per = detail::reduce(op, ReduceOp::sum, term, Shape{1}, false, x.dtype());
  Array y, divisor;
  if (mode == Reduce::mean) {
    y = reduce_mean(op, per, Array(), per.size(), divisor);
  } else {
    y = per;
  }
  Shape kept = x.shape();
  kept[1] = 1;
  Array sum_t = detail::reduce(op, ReduceOp::sum, tx, Shape{1}, true, x.dtype());
  if (!cache_score) e = Array(), sum_e = Array();
  return record1(op, {x}, std::move(y), [x, tx, sum_t, e, sum_e, divisor, mode, kept](const BackwardContext& ctx) {
    // d/dx of -sum t log softmax(x) = softmax(x) sum(t) - t (the KL term's log t is constant).
    const Variable w = grad_coefficient(mode, ctx.grad_output(), divisor, kept);
    const Variable sm = config().enable_backprop || e.is_null()
                            ? softmax(x, 1)
                            : Variable(detail::binary("softmax_cross_entropy", BinaryOp::div, e, sum_e));
    return Grads{mul(sub(mul(sm, Variable(sum_t)), Variable(tx)), w)};
  });
}

}  // namespace

Variable softmax_cross_entropy(const Variable& x, const Array& t, int64_t ignore_label, std::string_view reduce) {
  SoftmaxCrossEntropyOptions options;
  options.ignore_label = ignore_label;
  options.reduce = std::string(reduce);
  return softmax_cross_entropy(x, t, options);
}

Variable softmax_cross_entropy(const Variable& x, const Array& t, const SoftmaxCrossEntropyOptions& options) {
  constexpr const char* op = "softmax_cross_entropy";
  rensa::detail::ForwardEntry entry(op, x);
  detail::check_floating(op, x);
  // Losses of 16-bit inputs are computed and returned in float32 (docs/mixed_precision.md).
  if (is_half(x.dtype())) return softmax_cross_entropy(cast(x, Dtype::float32), t, options);
  const Reduce mode = parse_reduce(op, options.reduce);
  const bool kl = detail::parse_choice(op, "soft_target_loss", options.soft_target_loss,
                                       {"cross-entropy", "kl-divergence"}) == 1;
  RENSA_CHECK(!t.is_null(), ValueError, op, ": t is null");
  if (is_floating(t.dtype())) return soft_target_cross_entropy(op, x, t, mode, kl, options.cache_score);
  check_labels(op, x, t);
  const int64_t ignore_label = options.ignore_label;
  const Shape& xs = x.shape();
  const Shape& ts = t.shape();
  bool fits = x.ndim() >= 2 && t.ndim() == x.ndim() - 1 && ts[0] == xs[0];
  for (int64_t i = 1; fits && i < t.ndim(); ++i) {
    fits = ts[static_cast<std::size_t>(i)] == xs[static_cast<std::size_t>(i + 1)];
  }
  RENSA_CHECK(fits, ShapeError, op, ": x ", xs, " and t ", ts,
              " do not fit; expected x (N, C) or (N, C, d1, ...) and t (N,) or (N, d1, ...), or soft targets of x's "
              "shape and a floating dtype");
  const int64_t n = xs[0], classes = xs[1], m = t.size(), inner = n == 0 ? 0 : m / n;
  RENSA_CHECK(classes > 0 || m == 0, ShapeError, op, ": x ", xs, " has no classes for t ", ts);
  const Array& cw = options.class_weight;
  if (!cw.is_null()) {
    RENSA_CHECK(is_floating(cw.dtype()), DtypeError, op, ": class_weight must be floating, got ", cw.dtype());
    RENSA_CHECK(cw.shape() == Shape{classes}, ShapeError, op, ": class_weight ", cw.shape(), " must be (C,) = (",
                classes, ",) for x ", xs);
  }
  const Device dev = x.device();
  const Array& xa = x.array();

  // Ignored labels become 0 so the kernel can read them; the mask removes them afterwards.
  Array tf = t.reshape(Shape{m});
  Array keep = detail::binary(op, BinaryOp::ne, tf, detail::scalar_like(static_cast<double>(ignore_label), tf), true);
  Array safe_t = where_or_zero(op, keep, tf);

  // -log softmax(x)[t] = log(sum(exp(z))) - z[t] with z = x - max(x): one exp pass, whose result
  // the backward reuses for softmax(x) = exp(z) / sum(exp(z)).
  Shape kept = xs;
  kept[1] = 1;
  Array e = shifted_logits(op, xa);
  Array picked = Array::empty(Shape{m}, x.dtype(), dev);
  auto select = RENSA_KERNEL(dev, select_item, op);
  // Picks rows[i, t[i]] for each sample; the (C, d1, ...) block of a sample read as (D, C) through
  // strides: no transposed copy.
  const auto pick = [&](const Array& source, Array& out) {
    try {
      if (x.ndim() == 2) {
        select(source, safe_t, out);
      } else {
        for (int64_t i = 0; i < n; ++i) {
          Array rows = source.index({i}).reshape(Shape{classes, inner}).transpose();
          select(rows, safe_t.slice(0, i * inner, (i + 1) * inner), out.slice(0, i * inner, (i + 1) * inner));
        }
      }
    } catch (const IndexError& err) {
      std::string_view why = err.what();
      if (why.starts_with("select_item: ")) why.remove_prefix(13);
      RENSA_THROW(IndexError, op, ": x ", xs, ", t ", ts, ", ignore_label ", ignore_label, ": ", why);
    }
  };
  if (xa.size() != 0) pick(e, picked);
  Array sum_e = exp_and_sum(op, e);
  Array log_sum = detail::unary(op, UnaryOp::log, sum_e).reshape(Shape{m});
  Array nll = where_or_zero(op, keep, detail::binary(op, BinaryOp::sub, log_sum, picked));
  Array mask_f = keep.astype(x.dtype()).reshape(kept);  // (N, 1, d1, ...): broadcasts over classes
  // class_weight[t] per label, as the mask's shape.
  Array weight_t;
  if (!cw.is_null() && m != 0) {
    weight_t = Array::empty(Shape{m}, x.dtype(), dev);
    const Array cwx = (cw.dtype() == x.dtype() ? cw : cw.astype(x.dtype())).to(dev);
    select(cwx.reshape(Shape{1, classes}).broadcast_to(Shape{m, classes}), safe_t, weight_t);
    nll = detail::binary(op, BinaryOp::mul, nll, weight_t);
    weight_t = weight_t.reshape(kept);
  }

  Array y, divisor;
  if (mode == Reduce::mean) {
    y = reduce_mean(op, nll, mask_f, options.normalize ? std::nullopt : std::optional<int64_t>(n), divisor);
  } else {
    y = nll.reshape(ts);
  }
  if (!options.cache_score) e = Array(), sum_e = Array();

  return record1(op, {x}, std::move(y),
                 [x, e, sum_e, safe_t, mask_f, weight_t, divisor, mode](const BackwardContext& ctx) {
    // gx = (softmax(x) - onehot(t)) * w with w = mask * coefficient (* class_weight[t]), shaped
    // (N, 1, d1, ...).
    Variable w = mul(grad_coefficient(mode, ctx.grad_output(), divisor, mask_f.shape()), Variable(mask_f));
    if (!weight_t.is_null()) w = mul(w, Variable(weight_t));
    const Shape& shape = x.shape();
    const int64_t c = shape[1];
    // onehot(t) scaled by `scale` (M,), in x's layout.
    auto onehot = [&](const Array& scale) {
      Array out = Array::empty(Shape{safe_t.size(), c}, x.dtype(), x.device());
      RENSA_KERNEL(x.device(), scatter_item, "softmax_cross_entropy")(scale, safe_t, out);
      if (x.ndim() == 2) return out;
      Shape last = mask_f.shape();
      last.erase(1);
      last.push_back(c);
      Shape perm{0, x.ndim() - 1};
      for (int64_t i = 1; i < x.ndim() - 1; ++i) perm.push_back(i);
      return out.reshape(last).transpose(perm);
    };
    if (config().enable_backprop) {
      // Double backprop: differentiate through softmax(x) and the coefficient.
      Array ones = Array::full(Shape{1}, 1.0, x.dtype(), x.device()).broadcast_to(safe_t.shape());
      return Grads{mul(sub(softmax(x, 1), Variable(onehot(ones))), w)};
    }
    // Plain backward: exp(z) from the forward (or again, without cache_score);
    // e * (w / sum_e) - onehot(t) * w.
    Array ez = e, sum_ez = sum_e;
    if (ez.is_null()) {
      ez = shifted_logits("softmax_cross_entropy", x.array());
      sum_ez = exp_and_sum("softmax_cross_entropy", ez);
    }
    const Array& wa = w.array();
    Array gx = detail::binary("softmax_cross_entropy", BinaryOp::mul, ez,
                              detail::binary("softmax_cross_entropy", BinaryOp::div, wa, sum_ez));
    const Array hot = onehot(wa.contiguous().reshape(Shape{safe_t.size()}));
    RENSA_KERNEL(x.device(), binary, "softmax_cross_entropy")(BinaryOp::sub, gx, hot, gx);
    return Grads{Variable(gx)};
  });
}

Variable sigmoid_cross_entropy(const Variable& x, const Array& t, std::string_view reduce) {
  SigmoidCrossEntropyOptions options;
  options.reduce = std::string(reduce);
  return sigmoid_cross_entropy(x, t, options);
}

Variable sigmoid_cross_entropy(const Variable& x, const Array& t, const SigmoidCrossEntropyOptions& options) {
  constexpr const char* op = "sigmoid_cross_entropy";
  rensa::detail::ForwardEntry entry(op, x);
  detail::check_floating(op, x);
  if (is_half(x.dtype())) return sigmoid_cross_entropy(cast(x, Dtype::float32), t, options);
  check_labels(op, x, t);
  const Reduce mode = parse_reduce(op, options.reduce);
  RENSA_CHECK(x.shape() == t.shape(), ShapeError, op, ": x ", x.shape(), " and t ", t.shape(),
              " must have the same shape");

  const Array& xa = x.array();
  Array keep = detail::binary(op, BinaryOp::ne, t, detail::scalar_like(-1.0, t), true);
  Array tx = t.astype(x.dtype());
  // softplus(x) - x t = max(x, 0) - x t + log(1 + exp(-|x|)), stable for any x.
  Array loss = detail::binary(op, BinaryOp::sub, detail::unary(op, UnaryOp::softplus, xa),
                              detail::binary(op, BinaryOp::mul, xa, tx));
  loss = where_or_zero(op, keep, loss);
  Array mask_f = keep.astype(x.dtype());

  Array y, divisor;
  if (mode == Reduce::mean) {
    const std::optional<int64_t> batch =
        options.normalize ? std::nullopt : std::optional<int64_t>(x.ndim() == 0 ? 1 : x.shape()[0]);
    y = reduce_mean(op, loss, mask_f, batch, divisor);
  } else {
    y = loss;
  }
  return record1(op, {x}, std::move(y), [x, tx, mask_f, divisor, mode](const BackwardContext& ctx) {
    Variable coeff = mul(grad_coefficient(mode, ctx.grad_output(), divisor, x.shape()), Variable(mask_f));
    return Grads{mul(sub(sigmoid(x), Variable(tx)), coeff)};
  });
}

Variable mean_squared_error(const Variable& a, const Variable& b) {
  constexpr const char* op = "mean_squared_error";
  detail::check_floating(op, a, "a");
  detail::check_floating(op, b, "b");
  RENSA_CHECK(a.shape() == b.shape(), ShapeError, op, ": a ", a.shape(), " and b ", b.shape(),
              " must have the same shape");
  // A 16-bit operand (a prediction under a mixed policy, say, against float32 targets) is compared
  // in float32.
  if (is_half(a.dtype()) || is_half(b.dtype())) {
    const auto f32 = [](const Variable& v) { return v.dtype() == Dtype::float32 ? v : cast(v, Dtype::float32); };
    return mean_squared_error(f32(a), f32(b));
  }
  detail::check_same_dtype_device(op, {&a, &b});
  return mean(square(sub(a, b)));
}

}  // namespace rensa::functions
