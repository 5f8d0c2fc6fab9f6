#pragma once
// Array-level helpers shared by the function definitions: the checks (stanza 1), allocation
// (stanza 2) and kernel dispatch (stanza 3) that many functions have in common.
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "rensa/core/array.h"
#include "rensa/core/backend.h"
#include "rensa/core/function_node.h"
#include "rensa/core/variable.h"

namespace rensa::functions::detail {

/// Throws DtypeError unless `v` has a floating dtype.
void check_floating(const char* op, const Variable& v, const char* what = "x");
/// Throws DtypeError unless all have the same dtype, DeviceError unless all are on one device.
void check_same_dtype_device(const char* op, std::initializer_list<const Variable*> vs);
/// Throws DeviceError unless all are on one device.
void check_same_device(const char* op, std::initializer_list<const Variable*> vs);
/// The index of `value` in `choices` (a string option such as a loss's reduce); ValueError naming
/// the option and the choices.
std::size_t parse_choice(const char* op, const char* option, std::string_view value,
                         std::initializer_list<std::string_view> choices);
/// Normalizes, sorts and deduplicates axes (empty `axes` with `all_if_empty` means every axis).
Shape normalize_axes(const char* op, const Shape& axes, int64_t ndim, bool all_if_empty = true);

/// The layout of an elementwise result of `shape`: channels-last when an operand of that shape
/// suggests it (see Array::suggest_memory_format), so such chains keep the layout, else contiguous.
MemoryFormat format_of(const Shape& shape, std::initializer_list<const Array*> operands);
/// out = op(x) elementwise (a new array, in x's suggested layout).
Array unary(const char* op, UnaryOp kop, const Array& x, double p0 = 0.0, double p1 = 0.0);
/// out = op(a, b) with NumPy broadcasting, in the layout format_of gives; out dtype is the inputs'
/// (or bool for comparisons when asked).
Array binary(const char* op, BinaryOp kop, const Array& a, const Array& b, bool bool_out = false);
/// A 0-d array holding `value` in `like`'s dtype and device.
Array scalar_like(double value, const Array& like);
/// Reduction over sorted unique `axes`; the result keeps the reduced axes as 1 unless squeezed.
Array reduce(const char* op, ReduceOp kop, const Array& x, const Shape& axes, bool keepdims,
             Dtype out_dtype);
/// The sum of `x` over the axes that broadcasting to `x.shape()` from `shape` added or expanded.
Array sum_to(const Array& x, const Shape& shape);

/// Double backprop through a fused function: the gradients of its composite form (differentiable
/// functions of `inputs`; null inputs stay null), recomputed on aliases of the inputs so that the
/// nested grad touches nothing of the running backward, which connects them to the inputs.
std::vector<Variable> recompute_grads(
    const BackwardContext& ctx, const std::vector<Variable>& inputs,
    const std::function<std::vector<Variable>(const std::vector<Variable>&)>& composite);

}  // namespace rensa::functions::detail
