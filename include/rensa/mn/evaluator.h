#pragma once
/// \file
/// Evaluation and reporting across ranks: the multi-node evaluator (ChainerMN's
/// create_multi_node_evaluator) and an extension that averages observations over ranks (ChainerMN's
/// ObservationAggregator).

#include <memory>
#include <string>
#include <vector>

#include "rensa/extensions/evaluator.h"
#include "rensa/mn/communicator.h"
#include "rensa/training/extension.h"
#include "rensa/training/summary.h"
#include "rensa/training/triggers.h"

namespace rensa::mn {

/// Runs an Evaluator on every rank's shard of the validation set and reports, on every rank, the
/// exact mean over all ranks' examples: the weighted sums and example counts of each value are
/// combined (not a mean of per-rank means), so uneven shards, short last batches and ranks with no
/// example at all give the single-process result. Trigger, priority and name are the evaluator's
/// ("validation"). Collective: every rank must run it at the same iterations.
class MultiNodeEvaluator : public training::Extension {
 public:
  /// Wraps `evaluator` (ValueError when null) over `comm`.
  MultiNodeEvaluator(std::shared_ptr<extensions::Evaluator> evaluator, Communicator comm);

  /// evaluate(), then reports the result to the trainer's reporter.
  void operator()(training::Trainer& trainer) override;
  training::Trigger default_trigger() const override { return evaluator_->default_trigger(); }
  int default_priority() const override { return evaluator_->default_priority(); }
  std::string default_name() const override { return evaluator_->default_name(); }

  /// The sums of every rank's evaluation, merged in rank order (the same on every rank).
  training::DictSummary evaluate_summary();
  /// The mean of each reported value over all ranks' examples.
  training::Observation evaluate() { return evaluate_summary().mean(); }

  /// The wrapped evaluator.
  extensions::Evaluator& evaluator() const { return *evaluator_; }

 private:
  std::shared_ptr<extensions::Evaluator> evaluator_;
  Communicator comm_;
};

/// Makes `evaluator` (copied) exact across the ranks of `comm` (see MultiNodeEvaluator).
MultiNodeEvaluator create_multi_node_evaluator(extensions::Evaluator evaluator, Communicator comm);

/// Combines every rank's DictSummary (weighted sums per key; keys may differ between ranks) into the
/// summary of all ranks, merged in rank order so every rank gets the same bits. Collective.
training::DictSummary allreduce_summary(const training::DictSummary& summary, Communicator comm);

/// Options of ObservationAggregator.
struct ObservationAggregatorOptions {
  /// When to average over ranks; between two of these, each rank keeps the mean of its own values
  /// over the iterations. Default: every iteration.
  training::Trigger comm_trigger{1, "iteration"};
  /// Appended to a key to name its average over ranks; empty (the default) replaces the rank's own
  /// value, so LogReport and PrintReport show the average under the usual name.
  std::string suffix = "";
};

/// Averages observations (such as "main/loss" and "main/accuracy") over ranks, so what rank 0 logs
/// describes the whole global batch. Each rank averages its values of a key over the iterations
/// since the last communication, then the ranks that observed the key average those values (a
/// key no rank observed is left out). Runs every iteration as an editor (after the writers, before
/// LogReport); the averaging is collective and happens when `comm_trigger` fires (every rank must
/// run the same iterations).
class ObservationAggregator : public training::Extension {
 public:
  /// ValueError for an empty key list.
  ObservationAggregator(Communicator comm, std::vector<std::string> keys, ObservationAggregatorOptions options = {});
  void operator()(training::Trainer& trainer) override;
  training::Trigger default_trigger() const override { return {1, "iteration"}; }
  int default_priority() const override { return training::kPriorityEditor; }
  std::string default_name() const override { return "observation_aggregator"; }
  /// Saves/loads the values gathered since the last communication and the comm trigger's state.
  void serialize(serializers::Serializer& s) override;

 private:
  Communicator comm_;
  std::vector<std::string> keys_;
  ObservationAggregatorOptions options_;
  std::vector<double> sums_;
  std::vector<int64_t> counts_;
};

}  // namespace rensa::mn
