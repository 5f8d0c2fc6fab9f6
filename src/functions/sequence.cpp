// pad_sequence and transpose_sequence: one recorded node each over the whole list of sequences,
// with gradients written with get_item and transpose_sequence itself.
#include "rensa/functions/sequence.h"

#include <algorithm>
#include <span>
#include <utility>

#include "rensa/functions/array_ops.h"
#include "src/functions/arg_checks.h"
#include "src/functions/record_list.h"

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

// `count` outputs: output t holds row t of every sequence longer than t. Lengths non-increasing.
std::vector<Variable> transpose_n(const std::vector<Variable>& xs, int64_t count, const Shape& unit, Dtype dtype,
                                  Device device) {
  std::vector<Array> outs;
  for (int64_t t = 0; t < count; ++t) {
    int64_t rows = 0;
    while (rows < static_cast<int64_t>(xs.size()) && xs[static_cast<std::size_t>(rows)].shape()[0] > t) ++rows;
    Shape shape = unit;
    shape.insert(0, rows);
    Array y = Array::empty(shape, dtype, device);
    for (int64_t i = 0; i < rows; ++i) {
      y.slice(0, i, i + 1).assign(xs[static_cast<std::size_t>(i)].array().slice(0, t, t + 1));
    }
    outs.push_back(std::move(y));
  }
  if (outs.empty()) return {};
  const auto n_in = static_cast<int64_t>(xs.size());
  return detail::record_list("transpose_sequence", xs, std::move(outs),
                             [n_in, unit, dtype, device](const BackwardContext& ctx) {
                               std::vector<Variable> gys;
                               for (std::size_t t = 0; t < ctx.num_outputs(); ++t) gys.push_back(ctx.grad_output(t));
                               return transpose_n(gys, n_in, unit, dtype, device);
                             });
}

}  // namespace

Variable pad_sequence(const std::vector<Variable>& xs, std::optional<int64_t> length, double padding) {
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
  return detail::record_list("pad_sequence", xs, std::move(outs), [lengths](const BackwardContext& ctx) {
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
  const Shape unit = checked_unit("transpose_sequence", xs);
  for (std::size_t i = 1; i < xs.size(); ++i) {
    RENSA_CHECK(xs[i].shape()[0] <= xs[i - 1].shape()[0], ValueError,
                "transpose_sequence: sequences must be sorted longest first, but sequence ", i, " is longer than ",
                i - 1, " (shapes ", detail::shapes_text(xs), ")");
  }
  return transpose_n(xs, xs[0].shape()[0], unit, xs[0].dtype(), xs[0].device());
}

}  // namespace rensa::functions
