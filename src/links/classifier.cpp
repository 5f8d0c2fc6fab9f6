// Classifier: predictor + loss (+ accuracy), reported under the observer's name.
#include "rensa/links/classifier.h"

#include <utility>

#include "rensa/core/error.h"
#include "rensa/core/reporter.h"
#include "rensa/functions/evaluation.h"
#include "rensa/functions/loss.h"

namespace rensa::links {

Classifier::Classifier(std::shared_ptr<Link> predictor, ClassifierOptions options)
    : predictor_(std::move(predictor)),
      lossfun_(std::move(options.lossfun)),
      accfun_(std::move(options.accfun)),
      compute_accuracy_(options.compute_accuracy),
      label_index_(options.label_index) {
  RENSA_CHECK(predictor_ != nullptr, ValueError, "Classifier: null predictor");
  if (!lossfun_) {
    lossfun_ = [](const Variable& y, const Variable& t) { return functions::softmax_cross_entropy(y, t.array()); };
  }
  if (!accfun_) {
    accfun_ = [](const Variable& y, const Variable& t) { return functions::accuracy(y, t.array()); };
  }
  add_link("predictor", predictor_);
}

Variable Classifier::forward(const Variable&) {
  RENSA_THROW(NotImplementedError, "Classifier::forward: needs the inputs and the labels, e.g. forward({x, t})");
}

Variable Classifier::forward(const std::vector<Variable>& inputs) {
  const auto n = static_cast<int64_t>(inputs.size());
  RENSA_CHECK(n >= 2, ValueError, "Classifier::forward: expected the predictor's inputs and the labels, got ", n,
              " input", n == 1 ? "" : "s");
  const int64_t label = label_index_ < 0 ? label_index_ + n : label_index_;
  RENSA_CHECK(label >= 0 && label < n, IndexError, "Classifier::forward: label_index ", label_index_,
              " is out of range for ", n, " inputs");
  std::vector<Variable> xs;
  xs.reserve(inputs.size() - 1);
  for (int64_t i = 0; i < n; ++i) {
    if (i != label) xs.push_back(inputs[static_cast<std::size_t>(i)]);
  }
  const Variable& t = inputs[static_cast<std::size_t>(label)];

  // Drop the previous results first so a failing call leaves nothing stale behind.
  y_ = Variable();
  loss_ = Variable();
  accuracy_ = Variable();
  y_ = predictor_->forward(xs);
  loss_ = lossfun_(y_, t);
  rensa::report("loss", loss_, this);
  if (compute_accuracy_) {
    accuracy_ = accfun_(y_, t);
    rensa::report("accuracy", accuracy_, this);
  }
  return loss_;
}

}  // namespace rensa::links
