#pragma once
/// \file
/// Reductions over axes. `axes` empty means all axes; negative axes count from the end; repeated
/// or out-of-range axes throw IndexError naming the function. `keepdims` keeps reduced axes as 1.

#include <optional>

#include "rensa/core/variable.h"

namespace rensa::functions {

/// Sum over `axes` (all axes when empty); `keepdims` keeps them with extent 1.
Variable sum(const Variable& x, const Shape& axes = {}, bool keepdims = false);
/// Mean over `axes` (all axes when empty); `keepdims` keeps them with extent 1.
Variable mean(const Variable& x, const Shape& axes = {}, bool keepdims = false);
/// Maximum; every element equal to the maximum receives the full gradient (as Chainer).
/// ValueError when a reduced axis has size 0.
Variable max(const Variable& x, const Shape& axes = {}, bool keepdims = false);
/// Minimum; every element equal to the minimum receives the full gradient (as Chainer). ValueError when a reduced axis has size 0.
Variable min(const Variable& x, const Shape& axes = {}, bool keepdims = false);
/// Index of the maximum along `axis` (over the flattened array when axis is nullopt); int64,
/// not differentiable.
Variable argmax(const Variable& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false);
/// Index of the minimum along `axis` (over the flattened array when axis is nullopt); int64, not differentiable.
Variable argmin(const Variable& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false);
/// log(sum(exp(x))) computed stably (max subtracted).
Variable logsumexp(const Variable& x, const Shape& axes = {}, bool keepdims = false);
/// Sums x down to `shape`, undoing broadcasting (ShapeError if `shape` does not broadcast to x).
Variable sum_to(const Variable& x, const Shape& shape);
/// Product over `axes` (1 over an empty axis); x floating (DtypeError). The gradient is the product
/// of the other elements, computed without dividing by x, so it is exact where x has zeros (as
/// Chainer's); double backprop works.
Variable prod(const Variable& x, const Shape& axes = {}, bool keepdims = false);
/// Chainer's average: mean(x, axes, keepdims) without weights; with weights (x's dtype and device),
/// sum(x * weights, axes, keepdims) / sum(weights). With no axes, weights has x's shape; with one
/// axis, weights is 1-d of that axis's extent (ShapeError naming both shapes otherwise); several axes
/// with weights throw ValueError. x and weights are both differentiated.
Variable average(const Variable& x, const Shape& axes = {}, const Variable& weights = Variable(),
                 bool keepdims = false);
/// The squared L2 norm of each x[i] over all axes but the first: shape (N,) for x (N, ...). x floating
/// (DtypeError) with at least 2 axes (ShapeError naming its shape).
Variable batch_l2_norm_squared(const Variable& x);

}  // namespace rensa::functions
