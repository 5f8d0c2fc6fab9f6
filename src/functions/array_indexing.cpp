// permutate, scatter_add and as_strided: index arrays checked on the host, then gathered or
// scattered along one axis (src/functions/gather.h) or, for basic indexing, through views.
#include "rensa/functions/array_indexing.h"

#include <algorithm>
#include <utility>

#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/reduction.h"
#include "src/functions/arg_checks.h"
#include "src/functions/common.h"
#include "src/functions/gather.h"

namespace rensa::functions {
namespace {
using Grads = std::vector<Variable>;
using detail::axis_of;
using detail::check_not_null;

// The values of an int32/int64 index array on the host.
std::vector<int64_t> host_indices(const char* op, const Array& indices) {
  return detail::index_vector(op, indices, Device::cpu()).to_vector<int64_t>();
}

}  // namespace

Variable permutate(const Variable& x, const Array& indices, int64_t axis, bool inv) {
  check_not_null("permutate", x);
  const std::vector<int64_t> p = host_indices("permutate", indices);
  axis = axis_of("permutate", axis, x.ndim(), x.shape());
  const int64_t n = x.shape()[static_cast<std::size_t>(axis)];
  RENSA_CHECK(indices.ndim() == 1 && indices.size() == n, ShapeError, "permutate: indices of shape ",
              indices.shape(), " do not match axis ", axis, " of x ", x.shape(), " (expected (", n, ",))");
  std::vector<int64_t> inverse(static_cast<std::size_t>(n), -1);
  for (std::size_t i = 0; i < p.size(); ++i) {
    RENSA_CHECK(p[i] >= 0 && p[i] < n, ValueError, "permutate: index ", p[i], " at position ", i,
                " is out of range [0, ", n, ") (x of shape ", x.shape(), ")");
    RENSA_CHECK(inverse[static_cast<std::size_t>(p[i])] < 0, ValueError, "permutate: index ", p[i],
                " is repeated (x of shape ", x.shape(), ")");
    inverse[static_cast<std::size_t>(p[i])] = static_cast<int64_t>(i);
  }
  return detail::take("permutate", x, Array::from_vector(inv ? inverse : p, x.device()), axis);
}

Variable scatter_add(const Variable& a, const std::vector<Index>& slices, const Variable& b) {
  rensa::detail::ForwardEntry entry("scatter_add", a, b);
  check_not_null("scatter_add", a, "a");
  check_not_null("scatter_add", b, "b");
  detail::check_same_dtype_device("scatter_add", {&a, &b});
  Array view;
  try {
    view = a.array().index(slices);
  } catch (...) {
    rethrow_with_context(rensa::detail::concat("scatter_add (a of shape ", a.shape(), "): "));
  }
  RENSA_CHECK(view.shape() == b.shape(), ShapeError, "scatter_add: b of shape ", b.shape(),
              " does not match a[slices] of shape ", view.shape(), " (a of shape ", a.shape(), ")");
  Array y = a.array().copy();
  y.index(slices).assign(detail::binary("scatter_add", BinaryOp::add, view, b.array()));
  return record1("scatter_add", {a, b}, std::move(y), [slices](const BackwardContext& ctx) {
    const Variable& gy = ctx.grad_output();
    return Grads{ctx.needs_grad(0) ? gy : Variable(), ctx.needs_grad(1) ? get_item(gy, slices) : Variable()};
  });
}

Variable scatter_add(const Variable& a, const Array& indices, const Variable& b, int64_t axis) {
  check_not_null("scatter_add", a, "a");
  check_not_null("scatter_add", b, "b");
  detail::check_same_dtype_device("scatter_add", {&a, &b});
  std::vector<int64_t> idx = host_indices("scatter_add", indices);
  axis = axis_of("scatter_add", axis, a.ndim(), a.shape());
  const auto ax = static_cast<std::size_t>(axis);
  const int64_t n = a.shape()[ax];
  for (std::size_t i = 0; i < idx.size(); ++i) {
    RENSA_CHECK(idx[i] >= -n && idx[i] < n, IndexError, "scatter_add: index ", idx[i], " at position ", i,
                " is out of range for axis ", axis, " of a ", a.shape());
    if (idx[i] < 0) idx[i] += n;
  }
  Shape expected, flat;  // b's shape, and b with the index axes merged into one
  for (std::size_t d = 0; d < a.shape().size(); ++d) {
    if (d == ax) {
      for (int64_t e : indices.shape()) expected.push_back(e);
      flat.push_back(indices.size());
    } else {
      expected.push_back(a.shape()[d]);
      flat.push_back(a.shape()[d]);
    }
  }
  RENSA_CHECK(b.shape() == expected, ShapeError, "scatter_add: b of shape ", b.shape(), " does not match ", expected,
              " (a ", a.shape(), " with indices ", indices.shape(), " along axis ", axis, ")");
  return detail::scatter_add_axis("scatter_add", a, Array::from_vector(idx, a.device()), reshape(b, flat), axis);
}

Variable get_item(const Variable& x, const Array& indices, int64_t axis) {
  check_not_null("get_item", x);
  RENSA_CHECK(!indices.is_null(), ValueError, "get_item: indices are null");
  axis = axis_of("get_item", axis, x.ndim(), x.shape());
  const auto ax = static_cast<std::size_t>(axis);
  const int64_t n = x.shape()[ax];
  std::vector<int64_t> idx;
  Shape index_shape;
  if (indices.dtype() == Dtype::bool_) {
    RENSA_CHECK(indices.ndim() == 1 && indices.size() == n, IndexError, "get_item: a bool mask of shape ",
                indices.shape(), " does not match axis ", axis, " of x ", x.shape());
    const std::vector<uint8_t> mask = indices.to(Device::cpu()).to_vector<uint8_t>();
    for (int64_t i = 0; i < n; ++i) {
      if (mask[static_cast<std::size_t>(i)] != 0) idx.push_back(i);
    }
    index_shape = Shape{static_cast<int64_t>(idx.size())};
  } else {
    idx = host_indices("get_item", indices);
    for (std::size_t i = 0; i < idx.size(); ++i) {
      RENSA_CHECK(idx[i] >= -n && idx[i] < n, IndexError, "get_item: index ", idx[i], " at position ", i,
                  " is out of range for axis ", axis, " of x ", x.shape());
      if (idx[i] < 0) idx[i] += n;
    }
    index_shape = indices.shape();
  }
  Shape out;
  for (std::size_t d = 0; d < x.shape().size(); ++d) {
    if (d != ax) {
      out.push_back(x.shape()[d]);
      continue;
    }
    for (int64_t e : index_shape) out.push_back(e);
  }
  return reshape(detail::take("get_item", x, Array::from_vector(idx, x.device()), axis), out);
}

Variable as_strided(const Variable& x, const Shape& shape, const Shape& strides, int64_t storage_offset) {
  check_not_null("as_strided", x);
  RENSA_CHECK(shape.size() == strides.size(), ValueError, "as_strided: shape ", shape, " and strides ", strides,
              " differ in length");
  for (int64_t e : shape) {
    RENSA_CHECK(e >= 0, ValueError, "as_strided: negative extent in shape ", shape);
  }
  // The buffer position of every output element, in row-major order.
  std::vector<int64_t> pos(static_cast<std::size_t>(shape.numel()));
  std::vector<int64_t> at(shape.size(), 0);
  for (std::size_t k = 0; k < pos.size(); ++k) {
    int64_t p = storage_offset;
    for (std::size_t d = 0; d < shape.size(); ++d) p += at[d] * strides[d];
    RENSA_CHECK(p >= 0 && p < x.size(), ValueError, "as_strided: shape ", shape, ", strides ", strides,
                " and offset ", storage_offset, " reach element ", p, ", outside x of shape ", x.shape(), " (",
                x.size(), " elements)");
    pos[k] = p;
    for (std::size_t d = shape.size(); d-- > 0;) {
      if (++at[d] < shape[d]) break;
      at[d] = 0;
    }
  }
  const Variable flat = reshape(x, Shape{x.size()});
  return reshape(detail::take("as_strided", flat, Array::from_vector(pos, x.device()), 0), shape);
}

}  // namespace rensa::functions
