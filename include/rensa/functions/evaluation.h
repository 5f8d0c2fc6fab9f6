#pragma once
/// \file
/// Metrics (not differentiable).

#include <optional>
#include <string_view>
#include <utility>

#include "rensa/core/array.h"
#include "rensa/core/variable.h"

namespace rensa::functions {

/// Fraction of rows of y (N, C) whose argmax equals t (N,); entries of t equal to `ignore_label`
/// are skipped. A 0-d array of y's dtype.
Variable accuracy(const Variable& y, const Array& t, int64_t ignore_label = -1);

/// Fraction of the entries of t (any shape, int32/int64, y's shape) predicted right by y >= 0,
/// i.e. y taken as logits of t == 1; entries with t == -1 count as misses and not in the total
/// (0 when all are ignored), as Chainer. A 0-d array of y's dtype.
Variable binary_accuracy(const Variable& y, const Array& t);

/// What classification_summary returns: one value per class for each statistic.
struct ClassificationSummary {
  /// Precision per class, (label_num,); \p recall, \p fbeta_score and \p support likewise.
  Variable precision, recall, fbeta_score, support;
  /// \var recall
  /// Recall per class, (label_num,).
  /// \var fbeta_score
  /// F-beta score per class, (label_num,).
  /// \var support
  /// Number of labels of each class (int32), (label_num,).
};
/// Per-class precision, recall, F-beta score and support (label counts, int32) of the argmax of y
/// (N, C) or (N, C, d1, ...) against t (N,) or (N, d1, ...), each of length `label_num` (default:
/// the largest label + 1), as Chainer's classification_summary. Entries with t == ignore_label are
/// skipped; 0/0 gives NaN, as Chainer. ShapeError for shapes that do not fit; IndexError for a
/// label outside [0, label_num) (Chainer checks this only in debug mode); ValueError unless beta > 0.
ClassificationSummary classification_summary(const Variable& y, const Array& t,
                                             std::optional<int64_t> label_num = std::nullopt, double beta = 1.0,
                                             int64_t ignore_label = -1);
/// (precision, support) of classification_summary.
std::pair<Variable, Variable> precision(const Variable& y, const Array& t,
                                        std::optional<int64_t> label_num = std::nullopt, int64_t ignore_label = -1);
/// (recall, support) of classification_summary.
std::pair<Variable, Variable> recall(const Variable& y, const Array& t, std::optional<int64_t> label_num = std::nullopt,
                                     int64_t ignore_label = -1);
/// (F1 score, support) of classification_summary.
std::pair<Variable, Variable> f1_score(const Variable& y, const Array& t,
                                       std::optional<int64_t> label_num = std::nullopt, int64_t ignore_label = -1);

/// Coefficient of determination of `pred` against `truth` (same shape, (N,) or (N, K)), per output
/// 1 - sum((pred - truth)^2) / sum((truth - mean(truth))^2) over axis 0, 0 where the denominator is
/// 0; multioutput "uniform_average" (their mean, 0-d) or "raw_values" (K,). Chainer's sample_weight
/// is not supported there either.
Variable r2_score(const Variable& pred, const Variable& truth, std::string_view multioutput = "uniform_average");

}  // namespace rensa::functions
