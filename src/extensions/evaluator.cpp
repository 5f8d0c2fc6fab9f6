#include "rensa/extensions/evaluator.h"

#include "rensa/core/config.h"
#include "rensa/core/error.h"
#include "rensa/datasets/concat_examples.h"
#include "rensa/training/trainer.h"

namespace rensa::extensions {

Evaluator::Evaluator(iterators::Iterator& iterator, Link& target, EvaluatorOptions options)
    : Evaluator(iterator, std::map<std::string, Link*>{{"main", &target}}, std::move(options)) {}

Evaluator::Evaluator(iterators::Iterator& iterator, std::map<std::string, Link*> targets, EvaluatorOptions options)
    : iterator_(&iterator),
      targets_(std::move(targets)),
      converter_(std::move(options.converter)),
      device_(options.device),
      eval_func_(std::move(options.eval_func)),
      eval_hook_(std::move(options.eval_hook)) {
  for (const auto& [name, link] : targets_) {
    RENSA_CHECK(link != nullptr, ValueError, "Evaluator: target '", name, "' is null");
  }
  RENSA_CHECK(eval_func_ != nullptr || targets_.count("main") == 1, ValueError,
              "Evaluator: the default evaluation function needs a target named \"main\"");
  default_converter_ = converter_ == nullptr;
  if (converter_ == nullptr) {
    converter_ = [](const iterators::Batch& batch, Device device) { return datasets::concat_examples(batch, device); };
  }
}

void Evaluator::operator()(training::Trainer& trainer) {
  (void)trainer;
  training::report(evaluate());
}

training::DictSummary Evaluator::evaluate_summary() {
  training::Reporter reporter;
  const std::string prefix = name().empty() ? std::string() : name() + "/";
  for (const auto& [target_name, link] : targets_) {
    reporter.add_observers(prefix + target_name, link->namedlinks(true));
    reporter.add_observer(prefix + target_name, link);
  }
  training::DictSummary summary;
  auto train_off = using_config("train", false);
  auto no_backprop = no_backprop_mode();
  if (eval_hook_ != nullptr) eval_hook_(*this);  // in test mode, as Chainer's
  iterator_->reset();
  Link* main = targets_.count("main") == 1 ? targets_.at("main") : nullptr;
  while (true) {
    // As StandardUpdater: stacked by the iterator (its workers, for a MultithreadIterator).
    std::vector<Array> arrays;
    int64_t batch_size = 0;
    if (default_converter_ && device_.is_host() && iterator_->stacks_ahead()) {
      std::optional<std::vector<Array>> stacked = iterator_->next_arrays();
      if (!stacked.has_value()) break;
      arrays = std::move(*stacked);
      batch_size = arrays.empty() || arrays[0].ndim() == 0 ? 0 : arrays[0].shape()[0];
    } else {
      std::optional<iterators::Batch> batch = iterator_->next();
      if (!batch.has_value()) break;
      batch_size = static_cast<int64_t>(batch->size());
      if (batch_size > 0) arrays = converter_(*batch, device_);
    }
    if (batch_size > 0) {
      std::vector<Variable> inputs(arrays.begin(), arrays.end());
      training::Observation observation;
      {
        training::Reporter::Scope scope(reporter, observation);
        if (eval_func_ != nullptr) {
          eval_func_(inputs);
        } else {
          main->forward(inputs);
        }
      }
      // Weighting each batch by its size makes the result the mean over examples.
      summary.add(observation, static_cast<double>(batch_size));
    }
    // A repeating iterator never runs dry: one epoch is the whole set.
    if (iterator_->is_new_epoch()) break;
  }
  return summary;
}

}  // namespace rensa::extensions
