#pragma once
/// \file
/// Summary and DictSummary: weighted running statistics of one scalar and of named observations
/// (Chainer's Summary and DictSummary), with state that can be saved and restored exactly
/// (LogReport, Evaluator, BestValueTrigger).

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "rensa/serializers/serializer.h"
#include "rensa/training/reporter.h"

namespace rensa::training {

/// The weighted sums of one scalar: sum(w * x), sum(w * x^2) and sum(w) (Chainer's Summary). The
/// mean is sum(w * x) / sum(w): with the batch size as weight, the mean over examples (exact for a
/// short last batch). Non-finite values are kept (a NaN loss shows in the mean).
struct Summary {
  /// sum(w * x) over the values added.
  double x = 0.0;
  /// sum(w * x^2) over the values added.
  double x2 = 0.0;
  /// sum(w), the total weight (0: nothing added).
  double weight = 0.0;

  /// Adds `value` with `weight` (> 0; ValueError otherwise).
  void add(double value, double weight = 1.0);
  /// Adds another summary's sums.
  void merge(const Summary& other);
  /// The weighted mean; ValueError before the first add.
  double compute_mean() const;
  /// The weighted mean and standard deviation (population form; a variance that rounding makes
  /// slightly negative counts as 0). ValueError before the first add.
  std::pair<double, double> make_statistics() const;
  /// Saves/loads "_x", "_x2", "_n" (Chainer's keys).
  void serialize(serializers::Serializer& s);
};

/// Summaries per key.
class DictSummary {
 public:
  /// The summary kept per key.
  using Entry = Summary;

  /// Adds every value of `obs` with weight `weight` (> 0; ValueError otherwise).
  void add(const Observation& obs, double weight = 1.0);
  /// Adds one value.
  void add(const std::string& key, double value, double weight = 1.0);
  /// Adds another summary's sums (merging partial results, e.g. from several processes).
  void merge(const DictSummary& other);
  /// The weighted mean of each key.
  Observation mean() const;
  /// The weighted standard deviation of each key (population form, as Chainer's Summary).
  Observation std() const;
  /// The summary of each key.
  const std::map<std::string, Entry>& entries() const { return entries_; }
  /// The summary of each key, writable.
  std::map<std::string, Entry>& entries() { return entries_; }
  /// True when no key has been added.
  bool empty() const { return entries_.empty(); }
  /// Drops every key.
  void reset() { entries_.clear(); }
  /// Saves/loads the sums ("_names" as a JSON list, then "_summaries/<i>/_x", "_x2", "_n", the
  /// layout Chainer uses). Loading replaces the current content.
  void serialize(serializers::Serializer& s);

 private:
  std::map<std::string, Entry> entries_;
};

}  // namespace rensa::training
