// Gather and scatter-add along an axis: the (A, N, B) views the kernels take, errors with context.
#include "src/functions/gather.h"

#include <string>
#include <utility>
#include <vector>

#include "src/functions/common.h"

namespace rensa::functions::detail {
namespace {

struct Split3 {
  int64_t a = 1, n = 1, b = 1;
};
Split3 split3(const Shape& shape, int64_t axis) {
  Split3 s;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    const int64_t e = shape[static_cast<std::size_t>(d)];
    if (d < axis) s.a *= e;
    if (d == axis) s.n = e;
    if (d > axis) s.b *= e;
  }
  return s;
}

// Runs a kernel, re-throwing its errors (of their own type) with `op` and the shape in front.
template <class Fn>
void with_op(const char* op, const Shape& shape, Fn&& fn) {
  try {
    fn();
  } catch (...) {
    rethrow_with_context(rensa::detail::concat(op, " (x of shape ", shape, "): "));
  }
}

}  // namespace

Array index_vector(const char* op, const Array& indices, Device device, const char* what) {
  RENSA_CHECK(!indices.is_null(), ValueError, op, ": ", what, " is null");
  RENSA_CHECK(indices.dtype() == Dtype::int32 || indices.dtype() == Dtype::int64, DtypeError, op, ": ", what,
              " must be int32 or int64, got ", indices.dtype(), " with shape ", indices.shape());
  Array flat = indices.reshape(Shape{indices.size()});
  if (flat.dtype() != Dtype::int64) flat = flat.astype(Dtype::int64);
  return flat.to(device);
}

Variable take(const char* op, const Variable& x, const Array& idx, int64_t axis) {
  rensa::detail::ForwardEntry entry(op, x);
  const Split3 s = split3(x.shape(), axis);
  Shape out_shape = x.shape();
  out_shape[static_cast<std::size_t>(axis)] = idx.size();
  Array y = Array::empty({s.a, idx.size(), s.b}, x.dtype(), x.device());
  const Array x3 = x.array().reshape({s.a, s.n, s.b});
  with_op(op, x.shape(), [&] { RENSA_KERNEL(x.device(), take, op)(x3, idx, y); });
  return record1(op, {x}, y.reshape(out_shape), [op, idx, axis, shape = x.shape()](const BackwardContext& ctx) {
    const Variable& gy = ctx.grad_output();
    const Variable zeros(Array::zeros(shape, gy.dtype(), gy.device()));
    return std::vector<Variable>{scatter_add_axis(op, zeros, idx, gy, axis)};
  });
}

Variable scatter_add_axis(const char* op, const Variable& a, const Array& idx, const Variable& b, int64_t axis) {
  rensa::detail::ForwardEntry entry(op, a, b);
  const Split3 s = split3(a.shape(), axis);
  Array y = a.array().copy();
  const Array b3 = b.array().reshape({s.a, idx.size(), s.b});
  with_op(op, a.shape(), [&] { RENSA_KERNEL(a.device(), scatter_add, op)(b3, idx, y.reshape({s.a, s.n, s.b})); });
  return record1(op, {a, b}, std::move(y), [op, idx, axis](const BackwardContext& ctx) {
    const Variable& gy = ctx.grad_output();
    return std::vector<Variable>{ctx.needs_grad(0) ? gy : Variable(),
                                 ctx.needs_grad(1) ? take(op, gy, idx, axis) : Variable()};
  });
}

}  // namespace rensa::functions::detail
