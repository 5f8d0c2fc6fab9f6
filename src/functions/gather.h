#pragma once
// Differentiable gather and scatter-add along one axis by an index array: what repeat (uneven
// counts), permutate, scatter_add, as_strided and im2col are built on. Each is the other's gradient.
#include <cstdint>

#include "rensa/core/array.h"
#include "rensa/core/variable.h"

namespace rensa::functions::detail {

/// Integer indices (any shape, int32 or int64) as a 1-d int64 array on `device`; `op` and `what`
/// name them in the DtypeError for other dtypes.
Array index_vector(const char* op, const Array& indices, Device device, const char* what = "indices");

/// y = x taken along `axis` (already normalized) at idx (1-d int64, on x's device): x's shape with
/// that axis's extent replaced by idx's size. IndexError, starting with `op` and naming x's shape,
/// for an index outside the axis.
Variable take(const char* op, const Variable& x, const Array& idx, int64_t axis);

/// y = a, with b's slices along `axis` added at idx (repeated indices accumulate). b has a's shape
/// except along `axis`, where it has idx's size. Differentiable in a and b.
Variable scatter_add_axis(const char* op, const Variable& a, const Array& idx, const Variable& b, int64_t axis);

}  // namespace rensa::functions::detail
