#pragma once
// Argument checks shared by the array, sequence and utility functions: null operands, axes, and
// lists of arrays (every operand present, one dtype, one device; the shapes as error text).
#include <cstdint>
#include <span>
#include <string>

#include "rensa/core/variable.h"

namespace rensa::functions::detail {

/// ValueError "<op>: <what> is null".
void check_not_null(const char* op, const Variable& x, const char* what = "x");
/// `axis` in [-ndim, ndim) made non-negative; IndexError naming `op`, the axis and x's shape.
int64_t axis_of(const char* op, int64_t axis, int64_t ndim, const Shape& shape);

/// "(2, 3), (2, 4) and (3, 3)": every operand's shape, for error messages.
std::string shapes_text(std::span<const Variable> xs);
/// ValueError for an empty list or a null operand, DtypeError (listing each dtype and shape) for
/// mixed dtypes, DeviceError for mixed devices; messages start with `op`.
void check_operands(const char* op, std::span<const Variable> xs);

}  // namespace rensa::functions::detail
