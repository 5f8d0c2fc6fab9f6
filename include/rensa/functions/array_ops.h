#pragma once
/// \file
/// Shape manipulation. Results are views of the input where possible (reshape of contiguous data,
/// transpose, broadcast_to, get_item, split_axis, squeeze, expand_dims); concat and stack copy.

#include <utility>
#include <vector>

#include "rensa/core/array.h"
#include "rensa/core/variable.h"

namespace rensa::functions {

/// One extent may be -1. ShapeError when the sizes differ.
Variable reshape(const Variable& x, const Shape& shape);
/// Reverses the axes (axes empty) or permutes them.
Variable transpose(const Variable& x, const Shape& axes = {});
/// Swaps axes `a` and `b` (negative counts from the end).
Variable swapaxes(const Variable& x, int64_t a, int64_t b);
/// Broadcasts to `shape` (NumPy rules; ShapeError otherwise); the gradient is summed back.
Variable broadcast_to(const Variable& x, const Shape& shape);
/// Removes size-1 axes (all of them when axes is empty).
Variable squeeze(const Variable& x, const Shape& axes = {});
/// Inserts an axis of extent 1 at `axis`.
Variable expand_dims(const Variable& x, int64_t axis);
/// Flattens to one dimension.
Variable flatten(const Variable& x);
/// Joins along an existing axis; all other extents and the dtypes must match.
Variable concat(const std::vector<Variable>& xs, int64_t axis = 1);
/// Joins along a new axis; shapes and dtypes must match.
Variable stack(const std::vector<Variable>& xs, int64_t axis = 0);
/// Splits into `sections` equal parts along `axis` (ValueError if not divisible).
std::vector<Variable> split_axis(const Variable& x, int64_t sections, int64_t axis);
/// Splits before each of `indices` along `axis` (NumPy's array_split with indices). ShapeError when
/// the last index is past the end of the axis, as Chainer.
std::vector<Variable> split_axis(const Variable& x, const std::vector<int64_t>& indices, int64_t axis);
/// NumPy basic indexing (integers, Slice, NewAxis, Ellipsis); the gradient scatters back.
Variable get_item(const Variable& x, const std::vector<Index>& indices);
/// Converts the dtype; the gradient converts back. Integer results get no gradient.
Variable cast(const Variable& x, Dtype dtype);
/// cond ? a : b elementwise with broadcasting; cond is bool and not differentiated.
Variable where(const Array& cond, const Variable& a, const Variable& b);
/// y[i] = x[i, t[i]] for x (N, C) and integer labels t (N,); IndexError for labels outside [0, C).
Variable select_item(const Variable& x, const Array& t);
/// Pads with a constant: pad_width holds (before, after) counts per axis, or one pair used for every
/// axis (NumPy's np.pad with mode "constant"). ShapeError when it has neither 1 nor x.ndim() pairs,
/// ValueError for a negative count. The gradient is the interior of the output gradient.
Variable pad(const Variable& x, const std::vector<std::pair<int64_t, int64_t>>& pad_width, double value = 0.0);

}  // namespace rensa::functions
