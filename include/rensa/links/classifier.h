#pragma once
/// \file
/// Classifier: wraps a predictor, computes and reports loss and accuracy (Chainer's L.Classifier).

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "rensa/core/variable.h"
#include "rensa/links/link.h"

namespace rensa::links {

/// A loss or metric of predictions y and labels t.
using ClassifierFunction = std::function<Variable(const Variable& y, const Variable& t)>;

/// Options of Classifier.
struct ClassifierOptions {
  /// Loss of (y, t); null means functions::softmax_cross_entropy(y, t).
  ClassifierFunction lossfun = nullptr;
  /// Metric of (y, t); null means functions::accuracy(y, t).
  ClassifierFunction accfun = nullptr;
  /// Compute and report accuracy.
  bool compute_accuracy = true;
  /// Which input is the label; negative counts from the end (default: the last).
  int64_t label_index = -1;
};

/// A Chain with one child, "predictor". forward({x..., t}) computes y = predictor(x...),
/// loss = lossfun(y, t) and, with compute_accuracy, accuracy = accfun(y, t); reports "loss" (and
/// "accuracy") with this link as the observer (rensa::report), and returns the loss.
class Classifier : public Chain {
 public:
  /// ValueError for a null predictor.
  explicit Classifier(std::shared_ptr<Link> predictor, ClassifierOptions options = {});

  /// The inputs are the predictor's inputs with the label at label_index; ValueError for fewer than
  /// two inputs, IndexError for a label_index out of range.
  Variable forward(const std::vector<Variable>& inputs) override;
  /// NotImplementedError: a classifier needs the labels too.
  Variable forward(const Variable& x) override;

  /// The child "predictor".
  Link& predictor() const { return *predictor_; }
  /// Results of the last forward (null before the first one; accuracy stays null without
  /// compute_accuracy).
  const Variable& y() const { return y_; }
  /// The loss of the last forward (null before the first one).
  const Variable& loss() const { return loss_; }
  /// The accuracy of the last forward (null before the first one and without compute_accuracy).
  const Variable& accuracy() const { return accuracy_; }

  /// Whether forward computes and reports accuracy.
  bool compute_accuracy() const { return compute_accuracy_; }
  /// Turns the accuracy computation on or off.
  void set_compute_accuracy(bool value) { compute_accuracy_ = value; }

 private:
  std::shared_ptr<Link> predictor_;
  ClassifierFunction lossfun_, accfun_;
  bool compute_accuracy_;
  int64_t label_index_;
  Variable y_, loss_, accuracy_;
};

}  // namespace rensa::links
