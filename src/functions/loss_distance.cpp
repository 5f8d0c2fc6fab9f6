// Regression and distance losses. Each is a composite of differentiable functions (so every
// order of gradient works); masks and label-derived signs enter as constants.
#include <string_view>
#include <vector>

#include "rensa/functions/activation.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/loss.h"
#include "rensa/functions/reduction.h"
#include "src/functions/common.h"

namespace rensa::functions {
namespace {

// x0 and x1 floating, of one dtype, device and shape.
void check_pair(const char* op, const Variable& x0, const Variable& x1, const char* n0 = "x0", const char* n1 = "x1") {
  detail::check_floating(op, x0, n0);
  detail::check_floating(op, x1, n1);
  detail::check_same_dtype_device(op, {&x0, &x1});
  RENSA_CHECK(x0.shape() == x1.shape(), ShapeError, op, ": ", n0, " ", x0.shape(), " and ", n1, " ", x1.shape(),
              " must have the same shape");
}

// Integer labels of length n on x's device, read to the host.
std::vector<int64_t> read_labels(const char* op, const char* name, const Array& t, const Variable& x, int64_t n) {
  RENSA_CHECK(!t.is_null(), ValueError, op, ": ", name, " is null");
  RENSA_CHECK(t.dtype() == Dtype::int32 || t.dtype() == Dtype::int64, DtypeError, op, ": ", name,
              " must have dtype int32 or int64, got ", t.dtype());
  RENSA_CHECK(t.device() == x.device(), DeviceError, op, ": x is on ", x.device(), " but ", name, " is on ",
              t.device());
  RENSA_CHECK(t.ndim() == 1 && t.shape()[0] == n, ShapeError, op, ": ", name, " ", t.shape(), " must be (", n,
              ",) for x ", x.shape());
  return t.astype(Dtype::int64).to_vector<int64_t>();
}

Variable constant(const std::vector<double>& values, const Shape& shape, const Variable& like) {
  return Variable(Array::from_vector(values, shape).astype(like.dtype()).to(like.device()));
}

}  // namespace

Variable absolute_error(const Variable& x0, const Variable& x1) {
  check_pair("absolute_error", x0, x1);
  return abs(sub(x0, x1));
}

Variable squared_error(const Variable& x0, const Variable& x1) {
  check_pair("squared_error", x0, x1);
  return square(sub(x0, x1));
}

Variable mean_absolute_error(const Variable& x0, const Variable& x1) {
  check_pair("mean_absolute_error", x0, x1);
  return mean(abs(sub(x0, x1)));
}

Variable huber_loss(const Variable& x, const Variable& t, double delta, std::string_view reduce) {
  const char* op = "huber_loss";
  check_pair(op, x, t, "x", "t");
  const bool sum_axis1 = detail::parse_choice(op, "reduce", reduce, {"sum_along_second_axis", "no"}) == 0;
  RENSA_CHECK(delta > 0.0, ValueError, op, ": delta must be positive, got ", delta);
  RENSA_CHECK(!sum_axis1 || x.ndim() >= 2, ShapeError, op,
              ": reduce \"sum_along_second_axis\" needs x of at least 2 axes, got ", x.shape());
  const Variable d = sub(x, t);
  const Variable ad = abs(d);
  const Array inside = detail::binary(op, BinaryOp::le, ad.array(), detail::scalar_like(delta, ad.array()), true);
  const Variable y = where(inside, mul(square(d), 0.5), mul(add(ad, -0.5 * delta), delta));
  return sum_axis1 ? sum(y, Shape{1}) : y;
}

Variable hinge(const Variable& x, const Array& t, std::string_view norm, std::string_view reduce) {
  const char* op = "hinge";
  detail::check_floating(op, x);
  RENSA_CHECK(x.ndim() == 2, ShapeError, op, ": x must be (N, K), got ", x.shape());
  const bool l2 = detail::parse_choice(op, "norm", norm, {"L1", "L2"}) == 1;
  const bool mean_over_n = detail::parse_choice(op, "reduce", reduce, {"mean", "no"}) == 0;
  const int64_t n = x.shape()[0], k = x.shape()[1];
  const auto labels = read_labels(op, "t", t, x, n);
  // sign[i, j] = -1 for the true class, +1 elsewhere: the margin term is 1 + sign * x.
  std::vector<double> sign(static_cast<std::size_t>(n * k), 1.0);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = labels[static_cast<std::size_t>(i)];
    RENSA_CHECK(c >= 0 && c < k, IndexError, op, ": label ", c, " at ", i, " is out of range [0, ", k, ") for x ",
                x.shape());
    sign[static_cast<std::size_t>(i * k + c)] = -1.0;
  }
  Variable loss = relu(add(mul(x, constant(sign, x.shape(), x)), 1.0));
  if (l2) loss = square(loss);
  return mean_over_n ? mul(sum(loss), n > 0 ? 1.0 / static_cast<double>(n) : 0.0) : loss;
}

Variable contrastive(const Variable& x0, const Variable& x1, const Array& y, double margin, std::string_view reduce) {
  const char* op = "contrastive";
  check_pair(op, x0, x1);
  const bool mean_over_n = detail::parse_choice(op, "reduce", reduce, {"mean", "no"}) == 0;
  RENSA_CHECK(margin > 0.0, ValueError, op, ": margin must be positive, got ", margin);
  RENSA_CHECK(x0.ndim() == 2 && x0.shape()[0] > 0, ShapeError, op, ": x0 and x1 must be (N, K) with N > 0, got ",
              x0.shape());
  const int64_t n = x0.shape()[0];
  std::vector<double> similar, dissimilar;
  for (int64_t v : read_labels(op, "y", y, x0, n)) {
    RENSA_CHECK(v == 0 || v == 1, ValueError, op, ": labels must be 0 or 1, got ", v);
    similar.push_back(static_cast<double>(v));
    dissimilar.push_back(1.0 - static_cast<double>(v));
  }
  const Variable dist_sq = sum(square(sub(x0, x1)), Shape{1});
  // d floored at 1e-7 for the hinge term, whose gradient divides by d.
  const double floor = 1e-7;
  const Variable dist =
      sqrt(maximum(dist_sq, Variable(Array::full(dist_sq.shape(), floor * floor, x0.dtype(), x0.device()))));
  const Variable gap = relu(rsub(dist, margin));
  const Variable per_pair =
      mul(add(mul(dist_sq, constant(similar, {n}, x0)), mul(square(gap), constant(dissimilar, {n}, x0))), 0.5);
  return mean_over_n ? mean(per_pair) : per_pair;
}

Variable triplet(const Variable& anchor, const Variable& positive, const Variable& negative, double margin,
                 std::string_view reduce) {
  const char* op = "triplet";
  check_pair(op, anchor, positive, "anchor", "positive");
  check_pair(op, anchor, negative, "anchor", "negative");
  const bool mean_all = detail::parse_choice(op, "reduce", reduce, {"mean", "no"}) == 0;
  RENSA_CHECK(margin > 0.0, ValueError, op, ": margin must be positive, got ", margin);
  RENSA_CHECK(anchor.ndim() >= 2 && anchor.shape()[0] > 0, ShapeError, op,
              ": inputs must have at least 2 axes and a nonempty batch, got ", anchor.shape());
  const Variable gap = sub(sum(square(sub(anchor, positive)), Shape{1}), sum(square(sub(anchor, negative)), Shape{1}));
  const Variable loss = relu(add(gap, margin));
  // Chainer's mean: the sum over every element divided by the batch size (not by the element count,
  // which differs for inputs of more than 2 axes).
  return mean_all ? sum(loss) / static_cast<double>(anchor.shape()[0]) : loss;
}

}  // namespace rensa::functions
