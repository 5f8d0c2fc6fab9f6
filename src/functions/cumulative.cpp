// cumsum and cumprod, and the differentiable scans behind them (src/functions/scan.h). Gradients
// are scans again: the reversed sum for a sum; for a product, the linear recurrence of Chainer's
// zero-safe formula, whose own gradient is a linear recurrence.
#include "rensa/functions/cumulative.h"

#include "rensa/functions/array_ops.h"
#include "src/functions/elementwise.h"
#include "src/functions/scan.h"

namespace rensa::functions {
namespace detail {
namespace {

Array run_scan(const char* op, ScanOp kop, const Array& x, const Array& a, int64_t axis, bool reverse) {
  Array out = Array::empty(x.shape(), x.dtype(), x.device());
  RENSA_KERNEL(x.device(), scan, op)(kop, x, a, axis, reverse, out);
  return out;
}

}  // namespace

Variable scan_sum(const Variable& x, int64_t axis, bool reverse) {
  rensa::detail::ForwardEntry entry("cumsum", x);
  return record1("cumsum", {x}, run_scan("cumsum", ScanOp::sum, x.array(), Array(), axis, reverse),
                 [axis, reverse](const BackwardContext& ctx) {
                   return std::vector<Variable>{scan_sum(ctx.grad_output(), axis, !reverse)};
                 });
}

Variable scan_prod(const Variable& x, int64_t axis, bool reverse) {
  rensa::detail::ForwardEntry entry("cumprod", x);
  return record1(
      "cumprod", {x}, run_scan("cumprod", ScanOp::prod, x.array(), Array(), axis, reverse),
      [x, axis, reverse](const BackwardContext& ctx) {
        // gx[i] = y[prev(i)] * z[i], z[i] = gy[i] + x[next(i)] * z[next(i)]: no division by x.
        const Variable z = scan_linear(ctx.grad_output(), shift_prev(x, axis, !reverse, 0.0), axis, !reverse);
        return std::vector<Variable>{mul(shift_prev(ctx.output(), axis, reverse, 1.0), z)};
      },
      true);
}

Variable scan_linear(const Variable& b, const Variable& a, int64_t axis, bool reverse) {
  rensa::detail::ForwardEntry entry("cumprodsum", b, a);
  return record1(
      "cumprodsum", {b, a}, run_scan("cumprodsum", ScanOp::linear, b.array(), a.array(), axis, reverse),
      [a, axis, reverse](const BackwardContext& ctx) {
        // The transposed recurrence runs the other way, each step scaled by the a of the step after.
        const Variable w = scan_linear(ctx.grad_output(), shift_prev(a, axis, !reverse, 0.0), axis, !reverse);
        return std::vector<Variable>{
            w, ctx.needs_grad(1) ? mul(w, shift_prev(ctx.output(), axis, reverse, 0.0)) : Variable()};
      },
      true);
}

Variable shift_prev(const Variable& x, int64_t axis, bool reverse, double fill) {
  const int64_t n = x.shape()[static_cast<std::size_t>(axis)];
  if (n == 0) return x;
  Shape edge_shape = x.shape();
  edge_shape[static_cast<std::size_t>(axis)] = 1;
  Variable edge(Array::full(edge_shape, fill, x.dtype(), x.device()));
  if (n == 1) return edge;
  if (reverse) return concat({split_axis(x, std::vector<int64_t>{1}, axis)[1], edge}, axis);
  return concat({edge, split_axis(x, std::vector<int64_t>{n - 1}, axis)[0]}, axis);
}

}  // namespace detail

namespace {

// x and the normalized axis a cumulative function runs along (x flattened without an axis).
std::pair<Variable, int64_t> scan_input(const char* op, const Variable& x, std::optional<int64_t> axis) {
  detail::check_floating(op, x);
  if (!axis) return {reshape(x, Shape{x.size()}), 0};
  return {x, normalize_axis(*axis, x.ndim(), op)};
}

}  // namespace

Variable cumsum(const Variable& x, std::optional<int64_t> axis) {
  const auto [v, a] = scan_input("cumsum", x, axis);
  return detail::scan_sum(v, a, false);
}

Variable cumprod(const Variable& x, std::optional<int64_t> axis) {
  const auto [v, a] = scan_input("cumprod", x, axis);
  return detail::scan_prod(v, a, false);
}

}  // namespace rensa::functions
