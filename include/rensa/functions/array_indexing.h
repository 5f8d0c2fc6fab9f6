#pragma once
/// \file
/// Moving elements by index (Chainer's permutate, scatter_add, as_strided, and get_item with an
/// index array or a mask). Index arrays are int32 or int64 on any device (DtypeError otherwise);
/// they are read on the host to be checked. A null input throws ValueError; an axis out of range,
/// IndexError naming the function and x's shape.

#include <cstdint>
#include <vector>

#include "rensa/core/array.h"
#include "rensa/core/variable.h"

namespace rensa::functions {

/// y = x permuted along `axis`: y[..., i, ...] = x[..., indices[i], ...], or with `inv`
/// y[..., indices[i], ...] = x[..., i, ...]. ShapeError unless indices is 1-d with x.shape[axis]
/// elements; ValueError (as Chainer) for an index out of range or repeated. The gradient permutes
/// back.
Variable permutate(const Variable& x, const Array& indices, int64_t axis = 0, bool inv = false);

/// y = a with b added at a[slices] (NumPy basic indexing: integers, Slice, NewAxis, Ellipsis); b
/// must have exactly the shape of a[slices] (ShapeError otherwise, as Chainer does not broadcast);
/// a and b of one dtype and device. IndexError for an index out of range.
Variable scatter_add(const Variable& a, const std::vector<Index>& slices, const Variable& b);
/// y = a with b added at the integer array `indices` along `axis` (NumPy's add.at with slices
/// (:, ..., :, indices)): repeated indices accumulate; negative ones count from the end. b must have
/// shape a.shape[:axis] + indices.shape + a.shape[axis + 1:] (ShapeError otherwise); IndexError for
/// an index outside [-n, n) of an axis of extent n.
Variable scatter_add(const Variable& a, const Array& indices, const Variable& b, int64_t axis = 0);

/// NumPy's advanced indexing along one axis (Chainer's get_item with an index array):
/// x[:, ..., :, indices] with `axis` full slices first. Integer indices (int32/int64, any shape,
/// negative ones counting from the end) give x.shape[:axis] + indices.shape + x.shape[axis + 1:];
/// a 1-d bool mask selects the positions where it is true. IndexError for an index outside
/// [-n, n) or a mask whose length is not the axis's extent n. The gradient adds back (repeated
/// indices accumulate).
Variable get_item(const Variable& x, const Array& indices, int64_t axis = 0);

/// A view of x with `shape` and `strides`, as Chainer's as_strided: strides and storage_offset are
/// in elements, and the buffer they index is x's elements in row-major order (x's own strides are
/// ignored). Strides may be negative or zero. ValueError when shape and strides differ in length,
/// an extent is negative, or an element falls outside the buffer [0, x.size()). The result is a
/// copy; the gradient adds each output element back to its buffer position (overlaps add up) and
/// can itself be differentiated.
Variable as_strided(const Variable& x, const Shape& shape, const Shape& strides, int64_t storage_offset = 0);

}  // namespace rensa::functions
