// pad_sequence (one recorded node over the list, gradients by get_item) and transpose_sequence (a
// composite of concat, a gather and split_axis).
#include "rensa/functions/sequence.h"

#include <algorithm>
#include <span>
#include <utility>

#include "rensa/core/function_node.h"
#include "rensa/functions/array_ops.h"
#include "src/functions/arg_checks.h"
#include "src/functions/gather.h"

namespace rensa::functions {
namespace {
using Grads = std::vector<Variable>;

// The trailing shape (after the time axis) every sequence shares.
Shape checked_unit(const char* op, const std::vector<Variable>& xs) {
  detail::check_operands(op, xs);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    RENSA_CHECK(xs[i].ndim() > 0, ShapeError, op, ": sequence ", i, " is 0-d; sequences need a time axis (shapes ",
                detail::shapes_text(xs), ")");
  }
  Shape unit(std::span<const int64_t>(xs[0].shape().begin() + 1, xs[0].shape().end()));
  for (const auto& x : xs) {
    bool same = x.shape().size() == unit.size() + 1;
    for (std::size_t d = 0; same && d < unit.size(); ++d) same = x.shape()[d + 1] == unit[d];
    RENSA_CHECK(same, ShapeError, op, ": sequences must share the shape after the time axis, got shapes ",
                detail::shapes_text(xs));
  }
  return unit;
}

}  // namespace

Variable pad_sequence(const std::vector<Variable>& xs, std::optional<int64_t> length, double padding) {
  rensa::detail::ForwardEntry entry("pad_sequence", xs);
  const Shape unit = checked_unit("pad_sequence", xs);
  int64_t longest = 0;
  for (const auto& x : xs) longest = std::max(longest, x.shape()[0]);
  RENSA_CHECK(!length || *length >= longest, ShapeError, "pad_sequence: length ", length.value_or(0),
              " is shorter than the longest sequence (", longest, "), shapes ", detail::shapes_text(xs));
  const int64_t l = length.value_or(longest);
  Shape shape = unit;
  shape.insert(0, l);
  shape.insert(0, static_cast<int64_t>(xs.size()));
  Array y = Array::full(shape, padding, xs[0].dtype(), xs[0].device());
  std::vector<int64_t> lengths;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const int64_t li = xs[i].shape()[0];
    lengths.push_back(li);
    if (li > 0) y.index({static_cast<int64_t>(i), Slice{0, li, 1}}).assign(xs[i].array());
  }
  std::vector<Array> outs{std::move(y)};
  return record("pad_sequence", xs, std::move(outs), [lengths](const BackwardContext& ctx) {
    Grads gxs;
    for (std::size_t i = 0; i < lengths.size(); ++i) {
      gxs.push_back(ctx.needs_grad(i)
                        ? get_item(ctx.grad_output(), {static_cast<int64_t>(i), Slice{0, lengths[i], 1}})
                        : Variable());
    }
    return gxs;
  })[0];
}

std::vector<Variable> transpose_sequence(const std::vector<Variable>& xs) {
  if (xs.empty()) return {};
  checked_unit("transpose_sequence", xs);
  for (std::size_t i = 1; i < xs.size(); ++i) {
    RENSA_CHECK(xs[i].shape()[0] <= xs[i - 1].shape()[0], ValueError,
                "transpose_sequence: sequences must be sorted longest first, but sequence ", i, " is longer than ",
                i - 1, " (shapes ", detail::shapes_text(xs), ")");
  }
  const int64_t steps = xs[0].shape()[0];
  if (steps == 0) return {};
  // All rows in one array, gathered into time-major order, then cut into steps (views): three
  // differentiable ops instead of a copy per row.
  std::vector<int64_t> start(xs.size(), 0);
  for (std::size_t i = 1; i < xs.size(); ++i) start[i] = start[i - 1] + xs[i - 1].shape()[0];
  std::vector<int64_t> order, bounds;
  for (int64_t t = 0; t < steps; ++t) {
    for (std::size_t i = 0; i < xs.size() && xs[i].shape()[0] > t; ++i) order.push_back(start[i] + t);
    if (t + 1 < steps) bounds.push_back(static_cast<int64_t>(order.size()));
  }
  const Variable rows = xs.size() == 1 ? xs[0] : concat(xs, 0);
  const Variable by_time = detail::take("transpose_sequence", rows, Array::from_vector(order, xs[0].device()), 0);
  return split_axis(by_time, bounds, 0);
}

}  // namespace rensa::functions
