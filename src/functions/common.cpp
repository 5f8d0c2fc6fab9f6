#include "src/functions/common.h"

#include <algorithm>

#include "rensa/core/backward.h"
#include "rensa/functions/basic_math.h"

namespace rensa::functions::detail {

void check_floating(const char* op, const Variable& v, const char* what) {
  RENSA_CHECK(!v.is_null(), ValueError, op, ": ", what, " is null");
  RENSA_CHECK(is_floating(v.dtype()), DtypeError, op, ": ", what, " must have a floating dtype, got ", v.dtype(),
              " with shape ", v.shape());
}

void check_same_device(const char* op, std::initializer_list<const Variable*> vs) {
  const Variable* first = nullptr;
  for (const Variable* v : vs) {
    if (v->is_null()) continue;
    if (!first) {
      first = v;
      continue;
    }
    RENSA_CHECK(v->device() == first->device(), DeviceError, op, ": operands are on different devices: ",
                first->device(), " and ", v->device());
  }
}

void check_same_dtype_device(const char* op, std::initializer_list<const Variable*> vs) {
  const Variable* first = nullptr;
  for (const Variable* v : vs) {
    RENSA_CHECK(!v->is_null(), ValueError, op, ": null operand");
    if (!first) {
      first = v;
      continue;
    }
    RENSA_CHECK(v->dtype() == first->dtype(), DtypeError, op, ": dtypes differ: ", first->dtype(), " ",
                first->shape(), " and ", v->dtype(), " ", v->shape());
  }
  check_same_device(op, vs);
}

std::size_t parse_choice(const char* op, const char* option, std::string_view value,
                         std::initializer_list<std::string_view> choices) {
  std::size_t i = 0;
  std::string expected;
  for (std::string_view c : choices) {
    if (c == value) return i;
    expected += (i++ == 0 ? "\"" : ", \"") + std::string(c) + "\"";
  }
  RENSA_THROW(ValueError, op, ": unknown ", option, " '", value, "'; expected one of ", expected);
}

Shape normalize_axes(const char* op, const Shape& axes, int64_t ndim, bool all_if_empty) {
  Shape out;
  if (axes.empty() && all_if_empty) {
    for (int64_t i = 0; i < ndim; ++i) out.push_back(i);
    return out;
  }
  for (int64_t a : axes) out.push_back(normalize_axis(a, ndim, op));
  std::sort(out.begin(), out.end());
  for (std::size_t i = 1; i < out.size(); ++i) {
    RENSA_CHECK(out[i] != out[i - 1], IndexError, op, ": repeated axis ", out[i], " in ", axes);
  }
  return out;
}

MemoryFormat format_of(const Shape& shape, std::initializer_list<const Array*> operands) {
  for (const Array* a : operands) {
    if (a->shape() == shape && a->suggest_memory_format() == MemoryFormat::channels_last) {
      return MemoryFormat::channels_last;
    }
  }
  return MemoryFormat::contiguous;
}

Array unary(const char* op, UnaryOp kop, const Array& x, double p0, double p1) {
  Array y = Array::empty(x.shape(), x.dtype(), x.device(), x.suggest_memory_format());
  RENSA_KERNEL(x.device(), unary, op)(kop, x, y, p0, p1);
  return y;
}

Array binary(const char* op, BinaryOp kop, const Array& a, const Array& b, bool bool_out) {
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), op);
  Array out = Array::empty(shape, bool_out ? Dtype::bool_ : a.dtype(), a.device(), format_of(shape, {&a, &b}));
  RENSA_KERNEL(a.device(), binary, op)(kop, a.broadcast_to(shape), b.broadcast_to(shape), out);
  return out;
}

Array scalar_like(double value, const Array& like) { return Array::scalar(value, like.dtype(), like.device()); }

Array reduce(const char* op, ReduceOp kop, const Array& x, const Shape& axes, bool keepdims, Dtype out_dtype) {
  Shape kept = x.shape();
  for (int64_t a : axes) kept[static_cast<std::size_t>(a)] = 1;
  Array out = Array::empty(kept, out_dtype, x.device());
  RENSA_KERNEL(x.device(), reduce, op)(kop, x, axes, out);
  return keepdims ? out : out.squeeze(axes);
}

Array sum_to(const Array& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  const int64_t lead = x.ndim() - static_cast<int64_t>(shape.size());
  RENSA_CHECK(lead >= 0, ShapeError, "sum_to: cannot sum ", x.shape(), " to ", shape);
  Shape axes;
  for (int64_t i = 0; i < x.ndim(); ++i) {
    if (i < lead) {
      axes.push_back(i);
      continue;
    }
    const int64_t target = shape[static_cast<std::size_t>(i - lead)];
    const int64_t have = x.shape()[static_cast<std::size_t>(i)];
    RENSA_CHECK(target == have || target == 1, ShapeError, "sum_to: cannot sum ", x.shape(), " to ", shape);
    if (target == 1 && have != 1) axes.push_back(i);
  }
  Array r = reduce("sum_to", ReduceOp::sum, x, axes, true, x.dtype());
  return r.reshape(shape);
}

std::vector<Variable> recompute_grads(
    const BackwardContext& ctx, const std::vector<Variable>& inputs,
    const std::function<std::vector<Variable>(const std::vector<Variable>&)>& composite) {
  std::vector<Variable> present;
  for (const Variable& v : inputs) {
    if (!v.is_null()) present.push_back(v);
  }
  const std::vector<Variable> aliases = identity(present);
  std::vector<Variable> alias(inputs.size()), targets;
  for (std::size_t i = 0, k = 0; i < inputs.size(); ++i) {
    if (inputs[i].is_null()) continue;
    alias[i] = aliases[k++];
    if (ctx.needs_grad(i)) targets.push_back(alias[i]);
  }
  std::vector<Variable> gys;
  for (std::size_t j = 0; j < ctx.num_outputs(); ++j) gys.push_back(ctx.grad_output(j));
  const std::vector<Variable> g = grad(composite(alias), targets, gys, {.enable_double_backprop = true});
  std::vector<Variable> out(inputs.size());
  for (std::size_t i = 0, k = 0; i < inputs.size(); ++i) {
    if (!inputs[i].is_null() && ctx.needs_grad(i)) out[i] = g[k++];
  }
  return out;
}

}  // namespace rensa::functions::detail
