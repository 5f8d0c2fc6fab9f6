#pragma once
/// \file
/// MultiNodeEarlyStoppingTrigger (ChainerMN's): early stopping on a value averaged over the ranks,
/// so that every rank stops at the same iteration.

#include <optional>
#include <string>

#include "rensa/mn/communicator.h"
#include "rensa/mn/evaluator.h"
#include "rensa/training/triggers.h"

namespace rensa::mn {

/// Options of MultiNodeEarlyStoppingTrigger: those of training::EarlyStoppingTrigger, plus the
/// suffix of the averaged key.
struct EarlyStoppingOptions {
  /// When the rule compares (and the ranks average): every epoch by default.
  training::Trigger check_trigger{1, "epoch"};
  /// The observed key to watch, averaged over the ranks.
  std::string monitor = "main/loss";
  /// Checks in a row without improvement before the trigger fires.
  int64_t patience = 3;
  /// "min", "max", or "auto" (max when monitor contains "accuracy").
  std::string mode = "auto";
  /// Fires regardless when this trigger fires (the longest training).
  training::Trigger max_trigger{100, "epoch"};
  /// The average over ranks is observed as monitor + suffix.
  std::string suffix = "_aggregated";
};

/// training::EarlyStoppingTrigger on `monitor` averaged over the ranks of `comm`: at each check
/// interval every rank's mean of the interval is averaged over the ranks (an ObservationAggregator
/// with that interval) and observed as monitor + suffix, on which the early-stopping rule decides,
/// the same on every rank. Collective when the check trigger fires; use it as the trainer's stop
/// trigger on every rank. ValueError as EarlyStoppingTrigger's, and for a null communicator.
class MultiNodeEarlyStoppingTrigger : public training::TriggerBase {
 public:
  /// A collective trigger over `comm`; ValueError for a null communicator and as EarlyStoppingTrigger's.
  explicit MultiNodeEarlyStoppingTrigger(Communicator comm, const EarlyStoppingOptions& options = {});
  bool operator()(training::Trainer& trainer) override;
  /// Saves/loads the aggregator's and the early-stopping rule's state.
  void serialize(serializers::Serializer& s) override;
  std::optional<training::TrainingLength> training_length() const override { return stop_.training_length(); }
  /// The early-stopping rule deciding on the averaged key.
  const training::EarlyStoppingTrigger& rule() const { return stop_; }

 private:
  ObservationAggregator aggregator_;
  training::EarlyStoppingTrigger stop_;
};

}  // namespace rensa::mn
