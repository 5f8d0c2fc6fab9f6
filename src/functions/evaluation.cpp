// Metrics: computed on Arrays, never recorded in the graph.
#include "rensa/functions/evaluation.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "rensa/core/config.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/reduction.h"
#include "src/functions/common.h"

namespace rensa::functions {

namespace {

void check_labels(const char* op, const Variable& y, const Array& t) {
  detail::check_floating(op, y, "y");
  RENSA_CHECK(!t.is_null(), ValueError, op, ": t is null");
  RENSA_CHECK(t.dtype() == Dtype::int32 || t.dtype() == Dtype::int64, DtypeError, op,
              ": t must have dtype int32 or int64, got ", t.dtype(), " with shape ", t.shape());
  RENSA_CHECK(t.device() == y.device(), DeviceError, op, ": y is on ", y.device(), " but t is on ", t.device());
}

// y (N, C, d...) against t (N, d...), as accuracy and the classification summary take them.
void check_class_scores(const char* op, const Variable& y, const Array& t) {
  check_labels(op, y, t);
  const Shape& ys = y.shape();
  const Shape& ts = t.shape();
  bool fits = y.ndim() >= 2 && t.ndim() == y.ndim() - 1 && ts[0] == ys[0];
  for (int64_t i = 1; fits && i < t.ndim(); ++i)
    fits = ts[static_cast<std::size_t>(i)] == ys[static_cast<std::size_t>(i + 1)];
  RENSA_CHECK(fits, ShapeError, op, ": y ", ys, " and t ", ts,
              " do not fit; expected y (N, C) or (N, C, d1, ...) and t (N,) or (N, d1, ...)");
  RENSA_CHECK(ys[1] > 0 || t.size() == 0, ValueError, op, ": y ", ys, " has no classes");
}

}  // namespace

// The dtype of a count and a rate: float32 for 16-bit scores, whose counts past 256 (bfloat16) or
// 2048 (float16) are inexact.
namespace {
Dtype count_dtype(const Variable& y) { return is_half(y.dtype()) ? Dtype::float32 : y.dtype(); }
}  // namespace

Variable accuracy(const Variable& y, const Array& t, int64_t ignore_label) {
  constexpr const char* op = "accuracy";
  check_class_scores(op, y, t);
  const Shape& ts = t.shape();

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
    return detail::reduce(op, ReduceOp::sum, mask, all, false, Dtype::int64).astype(count_dtype(y));
  };
  // All labels ignored: 0 hits over max(0, 1) gives 0, as Chainer.
  Array total = count(valid);
  total = detail::binary(op, BinaryOp::maximum, total, detail::scalar_like(1.0, total));
  return Variable(detail::binary(op, BinaryOp::div, count(hit), total));
}

Variable binary_accuracy(const Variable& y, const Array& t) {
  constexpr const char* op = "binary_accuracy";
  check_labels(op, y, t);
  RENSA_CHECK(y.shape() == t.shape(), ShapeError, op, ": y ", y.shape(), " and t ", t.shape(),
              " must have the same shape");
  const Array labels = t.astype(Dtype::int64);
  const Array pred =
      detail::binary(op, BinaryOp::ge, y.array(), detail::scalar_like(0.0, y.array()), true).astype(Dtype::int64);
  const Shape all = detail::normalize_axes(op, {}, t.ndim());
  auto count = [&](const Array& mask) {
    return detail::reduce(op, ReduceOp::sum, mask, all, false, Dtype::int64).astype(count_dtype(y));
  };
  Array total = count(detail::binary(op, BinaryOp::ne, labels, detail::scalar_like(-1.0, labels), true));
  total = detail::binary(op, BinaryOp::maximum, total, detail::scalar_like(1.0, total));
  return Variable(detail::binary(op, BinaryOp::div, count(detail::binary(op, BinaryOp::eq, pred, labels, true)), total));
}

ClassificationSummary classification_summary(const Variable& y, const Array& t, std::optional<int64_t> label_num,
                                             double beta, int64_t ignore_label) {
  constexpr const char* op = "classification_summary";
  check_class_scores(op, y, t);
  RENSA_CHECK(beta > 0.0, ValueError, op, ": beta must be positive, got ", beta);
  const auto truth = t.astype(Dtype::int64).to_vector<int64_t>();
  std::vector<int64_t> pred(truth.size(), 0);
  if (!truth.empty()) pred = detail::reduce(op, ReduceOp::argmax, y.array(), Shape{1}, false, Dtype::int64).to_vector<int64_t>();
  int64_t k = label_num.value_or(0);
  if (!label_num) {
    for (int64_t v : truth) k = std::max(k, v + 1);
  }
  RENSA_CHECK(k >= 0, ValueError, op, ": label_num must be non-negative, got ", k);
  std::vector<double> tp(static_cast<std::size_t>(k)), relevant(tp.size()), support(tp.size());
  for (std::size_t i = 0; i < truth.size(); ++i) {
    const int64_t c = truth[i];
    if (c == ignore_label) continue;
    RENSA_CHECK(c >= 0 && c < k, IndexError, op, ": label ", c, " at ", i, " is out of range [0, ", k, ")");
    support[static_cast<std::size_t>(c)] += 1;
    if (pred[i] < k) relevant[static_cast<std::size_t>(pred[i])] += 1;
    if (pred[i] == c) tp[static_cast<std::size_t>(c)] += 1;
  }
  const double nan = std::numeric_limits<double>::quiet_NaN(), b2 = beta * beta;
  std::vector<double> p(tp.size()), r(tp.size()), f(tp.size());
  for (std::size_t c = 0; c < tp.size(); ++c) {
    p[c] = relevant[c] > 0 ? tp[c] / relevant[c] : nan;
    r[c] = support[c] > 0 ? tp[c] / support[c] : nan;
    const double den = b2 * p[c] + r[c];
    f[c] = (1.0 + b2) * p[c] * r[c] / den;  // NaN when 0/0, as Chainer
  }
  auto out = [&](const std::vector<double>& v, Dtype dtype) {
    return Variable(Array::from_vector(v, {k}).astype(dtype).to(y.device()));
  };
  return {out(p, y.dtype()), out(r, y.dtype()), out(f, y.dtype()), out(support, Dtype::int32)};
}

std::pair<Variable, Variable> precision(const Variable& y, const Array& t, std::optional<int64_t> label_num,
                                        int64_t ignore_label) {
  auto s = classification_summary(y, t, label_num, 1.0, ignore_label);
  return {s.precision, s.support};
}

std::pair<Variable, Variable> recall(const Variable& y, const Array& t, std::optional<int64_t> label_num,
                                     int64_t ignore_label) {
  auto s = classification_summary(y, t, label_num, 1.0, ignore_label);
  return {s.recall, s.support};
}

std::pair<Variable, Variable> f1_score(const Variable& y, const Array& t, std::optional<int64_t> label_num,
                                       int64_t ignore_label) {
  auto s = classification_summary(y, t, label_num, 1.0, ignore_label);
  return {s.fbeta_score, s.support};
}

Variable r2_score(const Variable& pred, const Variable& truth, std::string_view multioutput) {
  constexpr const char* op = "r2_score";
  detail::check_floating(op, pred, "pred");
  detail::check_floating(op, truth, "true");
  detail::check_same_dtype_device(op, {&pred, &truth});
  RENSA_CHECK(pred.shape() == truth.shape() && (pred.ndim() == 1 || pred.ndim() == 2), ShapeError, op,
              ": pred ", pred.shape(), " and true ", truth.shape(), " must have one shape, (N,) or (N, K)");
  const bool average = detail::parse_choice(op, "multioutput", multioutput, {"uniform_average", "raw_values"}) == 0;
  auto guard = no_backprop_mode();
  const auto res = sum(square(sub(pred, truth)), Shape{0}).array().astype(Dtype::float64).to_vector<double>();
  const auto tot =
      sum(square(sub(truth, mean(truth, Shape{0}, true))), Shape{0}).array().astype(Dtype::float64).to_vector<double>();
  std::vector<double> r2(res.size());
  for (std::size_t i = 0; i < r2.size(); ++i) r2[i] = tot[i] == 0.0 ? 0.0 : 1.0 - res[i] / tot[i];
  Shape shape = pred.ndim() == 2 ? Shape{pred.shape()[1]} : Shape{};
  Array out = Array::from_vector(r2, shape);
  if (average) {
    double m = 0.0;
    for (double v : r2) m += v;
    out = Array::scalar(r2.empty() ? std::numeric_limits<double>::quiet_NaN() : m / static_cast<double>(r2.size()),
                        Dtype::float64);
  }
  return Variable(out.astype(pred.dtype()).to(pred.device()));
}

}  // namespace rensa::functions
