#pragma once
/// \file
/// Evaluator: runs a model over a validation set and reports the mean of what it reports
/// (Chainer's Evaluator).

#include <functional>
#include <map>
#include <string>

#include "rensa/iterators/iterator.h"
#include "rensa/links/link.h"
#include "rensa/training/extension.h"
#include "rensa/training/reporter.h"
#include "rensa/training/summary.h"
#include "rensa/training/updater.h"

namespace rensa::extensions {

class Evaluator;

/// Options of Evaluator.
struct EvaluatorOptions {
  /// Batch to arrays; null means datasets::concat_examples.
  training::Converter converter = nullptr;
  /// The device the converter puts the arrays on.
  Device device = Device::cpu();
  /// Evaluates one batch (reporting what it measures); null means the "main" target link called
  /// with all the columns.
  training::LossFunction eval_func = nullptr;
  /// Called with the evaluator at the start of each evaluation (in test mode, before the iterator
  /// is reset): Chainer's eval_hook, e.g. to reset a recurrent model's state; null: none.
  std::function<void(Evaluator&)> eval_hook = nullptr;
};

/// Calls the eval_hook, resets the iterator, runs every batch through the evaluation function in test mode
/// (Config::train false) without recording graphs, and averages each reported value over the
/// examples: batch results are weighted by the batch size, so a short last batch counts for what
/// it holds. Targets report under "<name>/<target name>/" ("validation/main/loss" with the default
/// name). The iterator should not repeat; a repeating one is stopped after one epoch. Default
/// trigger: every epoch; priority: writer. The iterator and targets are kept by reference.
class Evaluator : public training::Extension {
 public:
  /// One target named "main".
  Evaluator(iterators::Iterator& iterator, Link& target, EvaluatorOptions options = {});
  /// Several named targets; the default eval_func uses "main" (ValueError when it is absent).
  Evaluator(iterators::Iterator& iterator, std::map<std::string, Link*> targets, EvaluatorOptions options = {});

  /// evaluate(), then reports the result to the trainer's reporter.
  void operator()(training::Trainer& trainer) override;
  training::Trigger default_trigger() const override { return {1, "epoch"}; }
  int default_priority() const override { return training::kPriorityWriter; }
  std::string default_name() const override { return "validation"; }

  /// Runs the evaluation and returns the weighted sums (for exact reductions across processes).
  /// Keys are prefixed with name() + "/" when the extension has a name.
  training::DictSummary evaluate_summary();
  /// The mean of each reported value over the examples.
  training::Observation evaluate() { return evaluate_summary().mean(); }

  /// The validation iterator (reset before each evaluation).
  iterators::Iterator& iterator() const { return *iterator_; }
  /// The links evaluated, by name.
  const std::map<std::string, Link*>& targets() const { return targets_; }

 private:
  iterators::Iterator* iterator_;
  std::map<std::string, Link*> targets_;
  training::Converter converter_;
  bool default_converter_ = true;
  Device device_;
  training::LossFunction eval_func_;
  std::function<void(Evaluator&)> eval_hook_;
};

}  // namespace rensa::extensions
