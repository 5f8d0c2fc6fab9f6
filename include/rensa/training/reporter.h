#pragma once
/// \file
/// Reporter: collects named scalar observations during an iteration (Chainer's reporter).
/// Code anywhere reports with rensa::training::report({{"loss", v}}); the values land under the
/// observer's name ("main/loss") in the reporter that is current on this thread.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "rensa/core/variable.h"

namespace rensa {
class Link;
}

namespace rensa::training {

using Observation = std::map<std::string, double>;

/// Maps observers (links) to name prefixes and collects observations.
class Reporter {
 public:
  /// Registers `observer` under `name`: its reports are keyed "name/key".
  void add_observer(const std::string& name, const Link* observer);
  /// Records values; keys are prefixed with the observer's name when an observer is given.
  void report(const Observation& values, const Link* observer = nullptr);
  /// Makes `observation` the target of reports on this thread until the guard dies.
  class Scope {
   public:
    Scope(Reporter& reporter, Observation& observation);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Reporter* prev_reporter_;
    Observation* prev_observation_;
  };

 private:
  std::map<const Link*, std::string> observer_names_;
  Observation* observation_ = nullptr;
  friend class Scope;
  friend void report(const Observation&, const Link*);
};

/// Reports to the current reporter of this thread (no effect when there is none). A Variable
/// value must have one element.
void report(const Observation& values, const Link* observer = nullptr);
/// Convenience: report one Variable's value.
void report(const std::string& key, const Variable& value, const Link* observer = nullptr);

/// Running means of observations over an interval (LogReport, PrintReport).
class Summary {
 public:
  void add(const Observation& obs);
  /// Mean of each key over the values added since the last reset.
  Observation mean() const;
  void reset() { sums_.clear(); }
  bool empty() const { return sums_.empty(); }

 private:
  std::map<std::string, std::pair<double, int64_t>> sums_;
};

}  // namespace rensa::training
