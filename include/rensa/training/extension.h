#pragma once
/// \file
/// Extension: something the trainer runs when its trigger fires (Chainer's Extension): logging,
/// evaluation, snapshots, learning-rate schedules. Extensions run in decreasing priority order
/// within an iteration, so writers (Evaluator, observe_lr) report before readers (LogReport) read.

#include <exception>
#include <functional>
#include <string>
#include <utility>

#include "rensa/serializers/serializer.h"
#include "rensa/training/triggers.h"

namespace rensa::training {

class Trainer;

/// Priority of extensions that add observations (Evaluator, observe_value).
inline constexpr int kPriorityWriter = 300;
/// Priority of extensions that modify observations.
inline constexpr int kPriorityEditor = 200;
/// Priority of extensions that read observations (LogReport, PrintReport); the default.
inline constexpr int kPriorityReader = 100;

/// Base of all extensions. Extensions are usually created as values and passed to
/// Trainer::extend, which copies them into the trainer.
class Extension {
 public:
  virtual ~Extension() = default;
  /// Runs the extension (the trainer calls it when the trigger fires).
  virtual void operator()(Trainer& trainer) = 0;
  /// The trigger used when Trainer::extend is given none; Chainer's default: every iteration.
  virtual Trigger default_trigger() const { return {1, "iteration"}; }
  /// The priority used when Trainer::extend is given none.
  virtual int default_priority() const { return kPriorityReader; }
  /// The name used when neither extend nor set_name gives one (the class name, as Chainer).
  virtual std::string default_name() const = 0;
  /// Called once by Trainer::run before any extension's initialize: an extension that restores the
  /// trainer's state (a snapshot with autoload) does it here, so that every extension initializes
  /// from the restored state.
  virtual void restore(Trainer& trainer) { (void)trainer; }
  /// Called once by Trainer::run before the first iteration (after any resume), unless the
  /// extension's trigger is finished.
  virtual void initialize(Trainer& trainer) { (void)trainer; }
  /// Called once when Trainer::run ends, normally or by an exception.
  virtual void finalize(Trainer& trainer) { (void)trainer; }
  /// Called when the training loop throws, before finalize; `error` is the exception.
  virtual void on_error(Trainer& trainer, const std::exception_ptr& error) {
    (void)trainer;
    (void)error;
  }
  /// Saves/loads the extension's state (stored under "extensions/<name>/" in snapshots).
  virtual void serialize(serializers::Serializer& s) { (void)s; }

  /// The name given by the user or by Trainer::extend (empty until then).
  const std::string& name() const { return name_; }
  /// Sets the name (Trainer::extend does it).
  void set_name(std::string name) { name_ = std::move(name); }

 private:
  std::string name_;
};

/// An extension made from a function (Chainer's make_extension).
class LambdaExtension : public Extension {
 public:
  /// ValueError for a null function.
  explicit LambdaExtension(std::function<void(Trainer&)> fn, std::string name = "LambdaExtension",
                           Trigger trigger = {1, "iteration"}, int priority = kPriorityReader);
  void operator()(Trainer& trainer) override { fn_(trainer); }
  Trigger default_trigger() const override { return trigger_; }
  int default_priority() const override { return priority_; }
  std::string default_name() const override { return default_name_; }

 private:
  std::function<void(Trainer&)> fn_;
  std::string default_name_;
  Trigger trigger_;
  int priority_;
};

/// Makes an extension from a function with the given defaults.
LambdaExtension make_extension(std::function<void(Trainer&)> fn, std::string name = "LambdaExtension",
                               Trigger trigger = {1, "iteration"}, int priority = kPriorityReader);

}  // namespace rensa::training
