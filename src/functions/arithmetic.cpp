// Chainer's other arithmetic functions (declared in basic_math.h): composites of the basic ones,
// plus identity, which records a node of its own so that its outputs are new variables.
#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "src/functions/common.h"

namespace rensa::functions {
namespace {

void check_same_shape(const char* op, std::initializer_list<const Variable*> vs) {
  const Variable* first = *vs.begin();
  for (const Variable* v : vs) {
    RENSA_CHECK(v->shape() == first->shape(), ShapeError, op, ": shapes differ: ", first->shape(), " and ", v->shape());
  }
}

// y reshaped to broadcast against x from `axis` on (Caffe's broadcasting).
Variable caffe_broadcast(const char* op, const Variable& x, const Variable& y, int64_t axis) {
  detail::check_same_dtype_device(op, {&x, &y});
  RENSA_CHECK(axis >= 0 && axis <= x.ndim(), IndexError, op, ": axis ", axis, " is out of range for x of shape ",
              x.shape());
  const auto first = static_cast<std::size_t>(axis);
  bool fits = first + y.shape().size() <= x.shape().size();
  for (std::size_t i = 0; fits && i < y.shape().size(); ++i) fits = x.shape()[first + i] == y.shape()[i];
  RENSA_CHECK(fits, ShapeError, op, ": y ", y.shape(), " does not match the axes of x ", x.shape(), " from axis ",
              axis);
  Shape s(x.shape().size(), 1);
  for (std::size_t i = 0; i < y.shape().size(); ++i) s[first + i] = y.shape()[i];
  return broadcast_to(reshape(y, s), x.shape());
}

}  // namespace

Variable absolute(const Variable& x) {
  RENSA_CHECK(!x.is_null(), ValueError, "absolute: x is null");
  return abs(x);
}

Variable squared_difference(const Variable& x1, const Variable& x2) {
  detail::check_floating("squared_difference", x1, "x1");
  detail::check_same_dtype_device("squared_difference", {&x1, &x2});
  check_same_shape("squared_difference", {&x1, &x2});
  return square(sub(x1, x2));
}

std::vector<Variable> identity(const std::vector<Variable>& xs) {
  std::vector<Array> arrays;
  for (const Variable& x : xs) {
    RENSA_CHECK(!x.is_null(), ValueError, "identity: input ", arrays.size(), " is null");
    arrays.push_back(x.array());
  }
  auto backward = [](const BackwardContext& ctx) {
    std::vector<Variable> gs;
    for (std::size_t i = 0; i < ctx.num_outputs(); ++i)
      gs.push_back(ctx.needs_grad(i) ? ctx.grad_output(i) : Variable());
    return gs;
  };
  std::span<const Variable> in(xs.data(), xs.size());
  if (!config().enable_backprop || !rensa::detail::NodeBuilder::any_requires_grad(in)) {
    return std::vector<Variable>(arrays.begin(), arrays.end());
  }
  using Node = rensa::detail::LambdaNode<decltype(backward)>;
  auto node = std::allocate_shared<Node>(rensa::detail::PoolAllocator<Node>(), "identity", std::move(backward));
  return rensa::detail::NodeBuilder::connect(node, in, std::move(arrays), false);
}

Variable identity(const Variable& x) {
  return identity(std::vector<Variable>{x})[0];
}

Variable linear_interpolate(const Variable& p, const Variable& x, const Variable& y) {
  detail::check_floating("linear_interpolate", p, "p");
  detail::check_same_dtype_device("linear_interpolate", {&p, &x, &y});
  RENSA_CHECK(p.shape() == x.shape() && p.shape() == y.shape(), ShapeError, "linear_interpolate: p ", p.shape(), ", x ",
              x.shape(), " and y ", y.shape(), " must have one shape");
  return add(mul(p, x), mul(rsub(p, 1.0), y));
}

Variable bias(const Variable& x, const Variable& y, int64_t axis) {
  return add(x, caffe_broadcast("bias", x, y, axis));
}

Variable scale(const Variable& x, const Variable& y, int64_t axis) {
  return mul(x, caffe_broadcast("scale", x, y, axis));
}

}  // namespace rensa::functions
