// Metrics: computed on Arrays, never recorded in the graph.
#include "rensa/functions/evaluation.h"

#include "src/functions/common.h"

namespace rensa::functions {

Variable accuracy(const Variable& y, const Array& t, int64_t ignore_label) {
  constexpr const char* op = "accuracy";
  detail::check_floating(op, y, "y");
  RENSA_CHECK(!t.is_null(), ValueError, op, ": t is null");
  RENSA_CHECK(t.dtype() == Dtype::int32 || t.dtype() == Dtype::int64, DtypeError, op,
              ": t must have dtype int32 or int64, got ", t.dtype(), " with shape ", t.shape());
  RENSA_CHECK(t.device() == y.device(), DeviceError, op, ": y is on ", y.device(), " but t is on ", t.device());
  const Shape& ys = y.shape();
  const Shape& ts = t.shape();
  bool fits = y.ndim() >= 2 && t.ndim() == y.ndim() - 1 && ts[0] == ys[0];
  for (int64_t i = 1; fits && i < t.ndim(); ++i)
    fits = ts[static_cast<std::size_t>(i)] == ys[static_cast<std::size_t>(i + 1)];
  RENSA_CHECK(fits, ShapeError, op, ": y ", ys, " and t ", ts,
              " do not fit; expected y (N, C) or (N, C, d1, ...) and t (N,) or (N, d1, ...)");
  RENSA_CHECK(ys[1] > 0 || t.size() == 0, ValueError, op, ": y ", ys, " has no classes");

  // Predictions (N, d1, ...) as int64, compared with the labels; ignored labels count neither as
  // hits nor in the total.
  Array pred = t.size() == 0 ? Array::zeros(ts, Dtype::int64, y.device())
                             : detail::reduce(op, ReduceOp::argmax, y.array(), Shape{1}, false, Dtype::int64);
  Array labels = t.dtype() == Dtype::int64 ? t : t.astype(Dtype::int64);
  Array valid =
      detail::binary(op, BinaryOp::ne, labels, detail::scalar_like(static_cast<double>(ignore_label), labels), true);
  Array hit = detail::binary(op, BinaryOp::mul, detail::binary(op, BinaryOp::eq, pred, labels, true), valid);

  const Shape all = detail::normalize_axes(op, {}, t.ndim());
  auto count = [&](const Array& mask) {
    return detail::reduce(op, ReduceOp::sum, mask, all, false, Dtype::int64).astype(y.dtype());
  };
  // All labels ignored: 0 hits over max(0, 1) gives 0, as Chainer.
  Array total = count(valid);
  total = detail::binary(op, BinaryOp::maximum, total, detail::scalar_like(1.0, total));
  return Variable(detail::binary(op, BinaryOp::div, count(hit), total));
}

}  // namespace rensa::functions
