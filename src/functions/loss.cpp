// Loss functions. softmax_cross_entropy and sigmoid_cross_entropy are fused: one recorded node
// each, forward on Arrays, backward written with differentiable functions (softmax_cross_entropy
// also has a plain Array path for the common case where the backward itself is not recorded).
#include "rensa/functions/loss.h"

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

// sum(values) / max(sum(mask), 1) as 0-d arrays of values' dtype; also returns the divisor.
Array masked_mean(const char* op, const Array& values, const Array& mask_f, Array& divisor) {
  Array total =
      detail::reduce(op, ReduceOp::sum, values, detail::normalize_axes(op, {}, values.ndim()), false, values.dtype());
  Array count =
      detail::reduce(op, ReduceOp::sum, mask_f, detail::normalize_axes(op, {}, mask_f.ndim()), false, mask_f.dtype());
  // With every label ignored the sum is 0 and the result 0 (not 0/0).
  divisor = detail::binary(op, BinaryOp::maximum, count, detail::scalar_like(1.0, count));
  return detail::binary(op, BinaryOp::div, total, divisor);
}

// The coefficient each element's gradient is scaled by: gy / divisor ("mean", a 0-d variable) or
// gy reshaped to `shape` ("no").
Variable grad_coefficient(Reduce reduce, const Variable& gy, const Array& divisor, const Shape& shape) {
  if (reduce == Reduce::mean) return div(gy, Variable(divisor));
  return reshape(gy, shape);
}

}  // namespace

Variable softmax_cross_entropy(const Variable& x, const Array& t, int64_t ignore_label, std::string_view reduce) {
  constexpr const char* op = "softmax_cross_entropy";
  rensa::detail::ForwardEntry entry(op, x);
  detail::check_floating(op, x);
  // Losses of 16-bit inputs are computed and returned in float32 (docs/mixed_precision.md).
  if (is_half(x.dtype())) return softmax_cross_entropy(cast(x, Dtype::float32), t, ignore_label, reduce);
  check_labels(op, x, t);
  const Reduce mode = parse_reduce(op, reduce);
  const Shape& xs = x.shape();
  const Shape& ts = t.shape();
  bool fits = x.ndim() >= 2 && t.ndim() == x.ndim() - 1 && ts[0] == xs[0];
  for (int64_t i = 1; fits && i < t.ndim(); ++i) {
    fits = ts[static_cast<std::size_t>(i)] == xs[static_cast<std::size_t>(i + 1)];
  }
  RENSA_CHECK(fits, ShapeError, op, ": x ", xs, " and t ", ts,
              " do not fit; expected x (N, C) or (N, C, d1, ...) and t (N,) or (N, d1, ...)");
  const int64_t n = xs[0], classes = xs[1], m = t.size(), inner = n == 0 ? 0 : m / n;
  RENSA_CHECK(classes > 0 || m == 0, ShapeError, op, ": x ", xs, " has no classes for t ", ts);
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
  Array e, sum_e;
  Array picked = Array::empty(Shape{m}, x.dtype(), dev);
  if (xa.size() == 0) {
    e = Array::empty(xs, x.dtype(), dev);
    sum_e = Array::ones(kept, x.dtype(), dev);
  } else {
    Array mx = detail::reduce(op, ReduceOp::max, xa, Shape{1}, true, x.dtype());
    RENSA_KERNEL(dev, unary, op)(UnaryOp::finite_or_zero, mx, mx, 0.0, 0.0);  // no inf - inf
    e = detail::binary(op, BinaryOp::sub, xa, mx);
    auto select = RENSA_KERNEL(dev, select_item, op);
    try {
      if (x.ndim() == 2) {
        select(e, safe_t, picked);
      } else {
        // Per sample, the (C, d1, ...) block read as (D, C) through strides: no transposed copy.
        for (int64_t i = 0; i < n; ++i) {
          Array rows = e.index({i}).reshape(Shape{classes, inner}).transpose();
          select(rows, safe_t.slice(0, i * inner, (i + 1) * inner), picked.slice(0, i * inner, (i + 1) * inner));
        }
      }
    } catch (const IndexError& err) {
      std::string_view why = err.what();
      if (why.starts_with("select_item: ")) why.remove_prefix(13);
      RENSA_THROW(IndexError, op, ": x ", xs, ", t ", ts, ", ignore_label ", ignore_label, ": ", why);
    }
    RENSA_KERNEL(dev, unary, op)(UnaryOp::exp, e, e, 0.0, 0.0);
    sum_e = detail::reduce(op, ReduceOp::sum, e, Shape{1}, true, x.dtype());
  }
  Array log_sum = detail::unary(op, UnaryOp::log, sum_e).reshape(Shape{m});
  Array nll = where_or_zero(op, keep, detail::binary(op, BinaryOp::sub, log_sum, picked));
  Array mask_f = keep.astype(x.dtype()).reshape(kept);  // (N, 1, d1, ...): broadcasts over classes

  Array y, divisor;
  if (mode == Reduce::mean) {
    y = masked_mean(op, nll, mask_f, divisor);
  } else {
    y = nll.reshape(ts);
  }

  return record1(op, {x}, std::move(y), [x, e, sum_e, safe_t, mask_f, divisor, mode](const BackwardContext& ctx) {
    // gx = (softmax(x) - onehot(t)) * w with w = mask * coefficient, shaped (N, 1, d1, ...).
    const Variable w = mul(grad_coefficient(mode, ctx.grad_output(), divisor, mask_f.shape()), Variable(mask_f));
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
    // Plain backward: reuse exp(z) from the forward; e * (w / sum_e) - onehot(t) * w.
    const Array& wa = w.array();
    Array gx = detail::binary("softmax_cross_entropy", BinaryOp::mul, e,
                              detail::binary("softmax_cross_entropy", BinaryOp::div, wa, sum_e));
    const Array hot = onehot(wa.contiguous().reshape(Shape{safe_t.size()}));
    RENSA_KERNEL(x.device(), binary, "softmax_cross_entropy")(BinaryOp::sub, gx, hot, gx);
    return Grads{Variable(gx)};
  });
}

Variable sigmoid_cross_entropy(const Variable& x, const Array& t, std::string_view reduce) {
  constexpr const char* op = "sigmoid_cross_entropy";
  rensa::detail::ForwardEntry entry(op, x);
  detail::check_floating(op, x);
  if (is_half(x.dtype())) return sigmoid_cross_entropy(cast(x, Dtype::float32), t, reduce);
  check_labels(op, x, t);
  const Reduce mode = parse_reduce(op, reduce);
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
    y = masked_mean(op, loss, mask_f, divisor);
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
