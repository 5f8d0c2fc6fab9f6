#pragma once
/// \file
/// AllreducePersistent (ChainerMN's extension of that name): averages a model's floating persistent
/// values, such as batch normalization's running mean and variance, over the ranks.

#include <string>

#include "rensa/links/link.h"
#include "rensa/mn/communicator.h"
#include "rensa/training/extension.h"

namespace rensa::mn {

/// Replaces every floating persistent value of `model` by its mean over the ranks of `comm`, in
/// name order; integer persistents (counters such as batch normalization's N) are left alone, as in
/// ChainerMN. With plain BatchNormalization on every rank, this gives each rank running statistics
/// over more examples without multi-node batch normalization; run it before evaluating or saving.
/// Default trigger: every epoch; priority: just before the writers (kPriorityWriter + 1), so
/// evaluators see the averages. Collective: every rank must call it at the same iterations, with
/// models whose floating persistents have the same names, shapes and dtypes (ValueError on every
/// rank, naming the first difference and both ranks, otherwise). The model is kept by reference.
class AllreducePersistent : public training::Extension {
 public:
  /// Averages `model`'s floating persistents over `comm`; ValueError for a null communicator.
  AllreducePersistent(Link& model, Communicator comm);
  void operator()(training::Trainer& trainer) override;
  /// The averaging itself, outside a trainer.
  void operator()();
  training::Trigger default_trigger() const override { return {1, "epoch"}; }
  int default_priority() const override { return training::kPriorityWriter + 1; }
  std::string default_name() const override { return "allreduce_persistent"; }

 private:
  Link* model_;
  Communicator comm_;
};

}  // namespace rensa::mn
