#pragma once
/// \file
/// MicroAverage (Chainer's extensions.MicroAverage): a ratio of sums over an interval, such as
/// accuracy from per-batch counts of correct and total examples.

#include <string>

#include "rensa/training/extension.h"
#include "rensa/training/triggers.h"

namespace rensa::extensions {

/// Every iteration in which both `numerator_key` and `denominator_key` were observed, adds them to
/// running sums; when `trigger` fires, observes sum(numerators) / sum(denominators) as
/// `result_key` and restarts the sums. Unlike a mean of per-batch ratios (macro-average) this is
/// exact when batches differ in size. Runs every iteration with priority editor (after the writers,
/// before LogReport reads). The sums are saved in snapshots.
class MicroAverage : public training::Extension {
 public:
  /// ValueError for an empty key.
  MicroAverage(std::string numerator_key, std::string denominator_key, std::string result_key,
               training::Trigger trigger = {1, "epoch"});
  void operator()(training::Trainer& trainer) override;
  int default_priority() const override { return training::kPriorityEditor; }
  std::string default_name() const override { return "MicroAverage"; }
  void serialize(serializers::Serializer& s) override;

 private:
  std::string numerator_key_, denominator_key_, result_key_;
  training::Trigger trigger_;
  double numerator_ = 0, denominator_ = 0;
};

}  // namespace rensa::extensions
