#pragma once
/// \file
/// Rearranging arrays (Chainer's tile, repeat, flip, fliplr, flipud, rollaxis, moveaxis, hstack,
/// vstack, dstack, diagonal, copy, broadcast, separate). Axis arguments may be negative (counted
/// from the end); an axis out of range throws IndexError naming the function and x's shape. A null
/// input throws ValueError. flip, rollaxis, moveaxis, diagonal, broadcast and separate return views
/// of their inputs; the others copy.

#include <cstdint>
#include <optional>
#include <vector>

#include "rensa/core/array.h"
#include "rensa/core/device.h"
#include "rensa/core/variable.h"

namespace rensa::functions {

/// NumPy's tile: x repeated reps[i] times along axis i. When reps is shorter than x.ndim() it is
/// padded with leading 1s; when longer, x gets leading axes of extent 1. ValueError for a negative
/// count. The gradient sums the copies.
Variable tile(const Variable& x, const Shape& reps);
/// tile with one count for the last axis (x 0-d: a 1-d result).
Variable tile(const Variable& x, int64_t reps);

/// NumPy's repeat: each element repeated along `axis`; without an axis, x is flattened first.
/// `repeats` holds one count for every element, or one for all of them. ValueError for a negative
/// count, ShapeError when repeats has neither 1 nor x.shape[axis] counts. The gradient sums the
/// copies.
Variable repeat(const Variable& x, const std::vector<int64_t>& repeats, std::optional<int64_t> axis = std::nullopt);
/// repeat with the same count for every element.
Variable repeat(const Variable& x, int64_t repeats, std::optional<int64_t> axis = std::nullopt);

/// x reversed along `axis` (a view). ShapeError for a 0-d x.
Variable flip(const Variable& x, int64_t axis);
/// flip along axis 1; ShapeError when x has fewer than 2 dimensions.
Variable fliplr(const Variable& x);
/// flip along axis 0; ShapeError for a 0-d x.
Variable flipud(const Variable& x);

/// NumPy's rollaxis: axis `axis` moved to position `start` (start in [-ndim, ndim]; IndexError
/// outside). A view.
Variable rollaxis(const Variable& x, int64_t axis, int64_t start = 0);
/// NumPy's moveaxis: axis `source` moved to `destination`, the others keeping their order.
Variable moveaxis(const Variable& x, int64_t source, int64_t destination);
/// moveaxis of several axes. ValueError when the lists differ in length or repeat an axis.
Variable moveaxis(const Variable& x, const std::vector<int64_t>& source, const std::vector<int64_t>& destination);

/// NumPy's hstack: 0-d inputs become 1-d; 1-d inputs join along axis 0, others along axis 1.
/// ValueError for an empty list, DtypeError/DeviceError for mixed dtypes/devices, ShapeError when
/// the inputs differ in ndim or in an extent other than the joined one (all shapes named).
Variable hstack(const std::vector<Variable>& xs);
/// NumPy's vstack: inputs are made at least 2-d ((N,) -> (1, N)) and joined along axis 0. Errors as
/// hstack.
Variable vstack(const std::vector<Variable>& xs);
/// NumPy's dstack: inputs are made at least 3-d ((N,) -> (1, N, 1), (M, N) -> (M, N, 1)) and
/// joined along axis 2. Errors as hstack.
Variable dstack(const std::vector<Variable>& xs);

/// NumPy's diagonal: the elements x[..., i, ..., i + offset, ...] of axes axis1 and axis2, which
/// are removed; the diagonal is the last axis of the result (a view). ValueError when axis1 and
/// axis2 name the same axis. The gradient writes gy into the diagonal of zeros.
Variable diagonal(const Variable& x, int64_t offset = 0, int64_t axis1 = 0, int64_t axis2 = 1);

/// A copy of x on `device` (always a new array, as Chainer's copy); the gradient is copied back to
/// x's device.
Variable copy(const Variable& x, Device device);

/// Every input broadcast to their common shape (views). ValueError for an empty list, ShapeError
/// naming every shape when they do not broadcast together.
std::vector<Variable> broadcast(const std::vector<Variable>& xs);

/// x split along `axis` into x.shape[axis] arrays with that axis removed (views). ShapeError for a
/// 0-d x.
std::vector<Variable> separate(const Variable& x, int64_t axis = 0);

}  // namespace rensa::functions
