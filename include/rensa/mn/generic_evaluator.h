#pragma once
/// \file
/// GenericMultiNodeEvaluator (ChainerMN's): evaluation whose result is not a weighted mean of
/// per-batch values (a median, an AUC, a BLEU score): every rank computes a result per batch of its
/// shard, the root gathers them all and aggregates them once.

#include <optional>
#include <string>
#include <vector>

#include "rensa/core/config.h"
#include "rensa/core/error.h"
#include "rensa/datasets/concat_examples.h"
#include "rensa/iterators/iterator.h"
#include "rensa/mn/communicator.h"
#include "rensa/mn/object.h"
#include "rensa/training/extension.h"
#include "rensa/training/reporter.h"
#include "rensa/training/updater.h"

namespace rensa::mn {

/// Options of GenericMultiNodeEvaluator.
struct GenericEvaluatorOptions {
  /// Batch to arrays; null means datasets::concat_examples.
  training::Converter converter = nullptr;
  /// The device the converter puts the arrays on.
  Device device = Device::cpu();
  /// The rank that aggregates.
  int root = 0;
};

/// Subclass it with R the per-batch result, any type the object collectives carry (arithmetic,
/// std::string, and vectors, pairs and maps of those): calc_local computes a batch's result on its
/// rank (in test mode, without recording graphs); aggregate, called on the root only, once per
/// evaluation, with the results of every batch of every rank, returns the values to report. The
/// results reach the root in rounds of 8 batches per rank (ranks whose shard is done send none), so
/// shards of different lengths are fine; their order is by round, then by rank. As an extension,
/// the root reports the aggregate under "<name>/" ("validation/..."); other ranks report nothing.
/// Default trigger: every epoch; priority: writer. Collective: every rank runs it at the same
/// iterations. The iterator (reset at the start of each evaluation; it should not repeat) is kept by
/// reference. ValueError for a root outside the communicator.
template <class R>
class GenericMultiNodeEvaluator : public training::Extension {
 public:
  /// ValueError for a null communicator or a root outside it.
  GenericMultiNodeEvaluator(Communicator comm, iterators::Iterator& iterator, GenericEvaluatorOptions options = {})
      : comm_(std::move(comm)), iterator_(&iterator), options_(std::move(options)) {
    RENSA_CHECK(comm_.valid(), ValueError, "GenericMultiNodeEvaluator: null communicator");
    RENSA_CHECK(options_.root >= 0 && options_.root < comm_.size(), ValueError, "GenericMultiNodeEvaluator: root ",
                options_.root, " is not a rank of a communicator of ", comm_.size());
    if (options_.converter == nullptr) {
      options_.converter = [](const iterators::Batch& b, Device d) { return datasets::concat_examples(b, d); };
    }
  }

  /// One batch's result on this rank.
  virtual R calc_local(const std::vector<Variable>& inputs) = 0;
  /// On the root: the values to report, from every batch's result.
  virtual training::Observation aggregate(std::vector<R> results) = 0;

  /// Runs the evaluation; the aggregate on the root, nothing elsewhere.
  std::optional<training::Observation> evaluate() {
    auto train_off = using_config("train", false);
    auto no_backprop = no_backprop_mode();
    iterator_->reset();
    const bool root = comm_.rank() == options_.root;
    std::vector<R> results;
    bool exhausted = false, all_done = false;
    while (!all_done) {
      bool any = false;
      for (int round = 0; round < kGatherInterval; ++round) {
        std::vector<R> mine;  // at most one result: none when this rank's shard is done
        if (!exhausted) {
          std::optional<iterators::Batch> batch = iterator_->next();
          if (batch.has_value() && !batch->empty()) {
            const std::vector<Array> arrays = options_.converter(*batch, options_.device);
            mine.push_back(calc_local(std::vector<Variable>(arrays.begin(), arrays.end())));
          }
          exhausted = !batch.has_value() || iterator_->is_new_epoch();
        }
        for (auto& part : gather_obj(comm_, mine, options_.root)) {
          for (auto& r : part) {
            results.push_back(std::move(r));
            any = true;
          }
        }
      }
      all_done = bcast_obj(comm_, root ? !any : false, options_.root);
    }
    if (!root) return std::nullopt;
    return aggregate(std::move(results));
  }

  void operator()(training::Trainer& trainer) override {
    (void)trainer;
    const auto result = evaluate();
    if (!result.has_value()) return;
    const std::string prefix = name().empty() ? std::string() : name() + "/";
    training::Observation prefixed;
    for (const auto& [key, value] : *result) prefixed[prefix + key] = value;
    training::report(prefixed);
  }
  training::Trigger default_trigger() const override { return {1, "epoch"}; }
  int default_priority() const override { return training::kPriorityWriter; }
  std::string default_name() const override { return "validation"; }

 private:
  static constexpr int kGatherInterval = 8;
  Communicator comm_;
  iterators::Iterator* iterator_;
  GenericEvaluatorOptions options_;
};

}  // namespace rensa::mn
