#pragma once
/// \file
/// Reporter: collects named scalar observations during an iteration (Chainer's chainer.Reporter).
/// Code anywhere reports with rensa::report({{"loss", v}}); the values land under the observer's
/// name ("main/loss") in the reporter that is current on this thread. It sits in the core, below
/// links, because links report (Classifier's loss and accuracy); the Trainer and the Evaluator
/// collect. rensa/training/reporter.h keeps the names rensa::training::report etc.

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "rensa/core/variable.h"

namespace rensa {

// Observers are links, but the reporter only keys names by their address: a declaration suffices.
class Link;

/// Named scalar values, e.g. {"main/loss": 0.3}.
using Observation = std::map<std::string, double>;
/// Reported variables kept with their graphs (under Config::keep_graph_on_report), by key.
using ObservedVariables = std::map<std::string, Variable>;

/// Maps observers (links) to name prefixes and collects observations.
class Reporter {
 public:
  /// Registers `observer` under `name`: its reports are keyed "name/key". ValueError for a null
  /// observer.
  void add_observer(const std::string& name, const Link* observer);
  /// Registers each (name, observer) pair under prefix + name (Chainer's add_observers):
  /// `reporter.add_observers("main", model.namedlinks(true))` names the sub-links "main/l1", ...
  void add_observers(const std::string& prefix, const std::vector<std::pair<std::string, Link*>>& observers);
  /// Records values; keys are prefixed with the observer's name when an observer is given
  /// (ValueError for an observer that was never registered). No effect outside a Scope.
  void report(const Observation& values, const Link* observer = nullptr);
  /// Makes `observation` the target of reports on this thread until the guard dies; with
  /// `variables`, Variables reported under Config::keep_graph_on_report are kept there too.
  class Scope {
   public:
    /// Makes `observation` (and `variables`, when given) the target of `reporter`'s reports on this thread.
    Scope(Reporter& reporter, Observation& observation, ObservedVariables* variables = nullptr);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Reporter* prev_reporter_;
    Observation* prev_observation_;
    ObservedVariables* prev_variables_;
  };

 private:
  std::string prefix_of(const Link* observer) const;
  std::map<const Link*, std::string> observer_names_;
  Observation* observation_ = nullptr;
  ObservedVariables* variables_ = nullptr;
  friend class Scope;
  friend void report(const Observation&, const Link*);
  friend void report(const std::string&, const Variable&, const Link*);
};

/// The reporter current on this thread (inside a Reporter::Scope: the trainer's during an update
/// and its extensions, an evaluator's during evaluation). ValueError when there is none.
Reporter& get_current_reporter();
/// Reports to the current reporter of this thread (no effect when there is none).
void report(const Observation& values, const Link* observer = nullptr);
/// Convenience: report one Variable's value; ShapeError unless it has one element. Under
/// Config::keep_graph_on_report the Variable itself is kept as well (Trainer::observed_variables).
void report(const std::string& key, const Variable& value, const Link* observer = nullptr);

}  // namespace rensa
