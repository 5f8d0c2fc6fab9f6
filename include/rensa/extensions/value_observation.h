#pragma once
/// \file
/// observe_value and observe_lr: put a value into each iteration's observation (Chainer's
/// observe_value / observe_lr), so LogReport and PrintReport show it.

#include <functional>
#include <string>

#include "rensa/optimizers/optimizer.h"
#include "rensa/training/extension.h"
#include "rensa/training/triggers.h"

namespace rensa::extensions {

/// Stores fn(trainer) as observation `key` when triggered. Priority: writer.
class ObserveValue : public training::Extension {
 public:
  /// ValueError for an empty key or a null function.
  ObserveValue(std::string key, std::function<double(training::Trainer&)> fn,
               training::Trigger trigger = {1, "iteration"});
  void operator()(training::Trainer& trainer) override;
  training::Trigger default_trigger() const override { return trigger_; }
  int default_priority() const override { return training::kPriorityWriter; }
  /// "observe_<key>".
  std::string default_name() const override { return "observe_" + key_; }

 private:
  std::string key_;
  std::function<double(training::Trainer&)> fn_;
  training::Trigger trigger_;
};

/// Observes fn(trainer) as `key` (default: every iteration).
ObserveValue observe_value(std::string key, std::function<double(training::Trainer&)> fn,
                           training::Trigger trigger = {1, "iteration"});
/// Observes the learning rate in effect (Optimizer::lr()) of the updater's optimizer
/// `optimizer_name` as `key`.
ObserveValue observe_lr(std::string optimizer_name = "main", std::string key = "lr",
                        training::Trigger trigger = {1, "iteration"});
/// Observes `optimizer`'s learning rate in effect as `key` (the optimizer must outlive the trainer).
ObserveValue observe_lr(optimizers::Optimizer& optimizer, std::string key = "lr",
                        training::Trigger trigger = {1, "iteration"});

}  // namespace rensa::extensions
