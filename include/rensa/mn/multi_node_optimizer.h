#pragma once
/// \file
/// The multi-node optimizer (ChainerMN's create_multi_node_optimizer): a stage of the user's
/// optimizer so that every rank applies the same update, computed from the gradients averaged over
/// all ranks.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rensa/core/error.h"
#include "rensa/mn/communicator.h"
#include "rensa/optimizers/optimizer.h"

namespace rensa::mn {

/// Options of create_multi_node_optimizer.
struct MultiNodeOptimizerOptions {
  /// Apply the gradients of step t at step t+1: they are averaged while step t+1 computes (one step
  /// of staleness; ChainerMN's double buffering, for slow networks). The first update only starts
  /// communication, and the gradients of the last step are never applied.
  bool double_buffering = false;
  /// A parameter without a gradient on this rank counts as a zero gradient (and then gets the mean),
  /// so a rank whose forward skipped a parameter cannot make the others wait forever. Without it,
  /// every rank must have gradients for the same parameters.
  bool zero_fill = true;
  /// Most gradient bytes (of the parameters' dtype) per bucket with `overlap`; a parameter larger
  /// than this gets a bucket of its own. Must be positive.
  int64_t bucket_cap = int64_t{1} << 20;
  /// In update(loss_fn), start averaging each bucket of gradients during backward as soon as all its
  /// gradients are final (buckets hold parameters in reverse namedparams() order and are launched in
  /// bucket order on every rank), so communication hides behind the rest of backward. The values are
  /// the same as without overlap. update() without a loss function (the caller ran backward) always
  /// averages after backward.
  bool overlap = true;
};

namespace detail {
struct MultiNodeStageState;
}

/// One bucket of the overlap plan: parameters whose gradients are averaged by one collective.
struct GradientBucket {
  std::vector<std::string> paths;  ///< namedparams() paths, in reverse namedparams() order
  std::vector<Variable> params;    ///< the parameters of `paths`, in the same order
  int64_t elements = 0;            ///< total elements of the parameters
  int64_t bytes = 0;               ///< total bytes, in the parameters' dtypes
};

/// The overlap plan of MultiNodeStage for `target`'s initialized parameters: they are taken in
/// reverse namedparams() order (the order backward tends to finish them in) and packed into
/// buckets of at most `bucket_cap` bytes; a parameter larger than that gets a bucket of its own.
/// Buckets are launched in this order on every rank. ValueError for a bucket_cap that is not
/// positive. Tools (bench_scaling_model) read bucket sizes here instead of repeating the rule.
std::vector<GradientBucket> plan_gradient_buckets(const Link& target, int64_t bucket_cap);

/// The stage (optimizers::OptimizerStage) that makes an optimizer data-parallel: every rank applies
/// the same update, computed from the gradients averaged over the ranks of a communicator. The
/// optimizer stays the user's: hyperparameters, hooks, rules, t, epoch and serialization are its
/// own, and its hooks run on the averaged gradients (so clipping by the global norm sees the same
/// norm on every rank).
///
/// Parameters are broadcast from rank 0 at setup() (initialized ones) and again whenever
/// parameters that were not broadcast yet become initialized (lazy initialization at the first
/// forward): in update(loss_fn) the forward then runs a second time, after the broadcast, so the
/// gradients are computed from rank 0's values on every rank; in update() (the caller already ran
/// backward) that step's gradients are dropped and no update is made (ChainerMN's behaviour).
/// Every rank must call update() the same number of times, with models of the same structure.
/// Each of its methods is collective.
class MultiNodeStage final : public optimizers::OptimizerStage {
 public:
  /// ValueError for a null communicator or a bucket_cap that is not positive.
  explicit MultiNodeStage(Communicator comm, MultiNodeOptimizerOptions options = {});
  /// Waits for communication still in flight (errors are reported to stderr, not thrown) and
  /// removes its gradient hook from the parameters.
  ~MultiNodeStage() override;
  MultiNodeStage(const MultiNodeStage&) = delete;
  MultiNodeStage& operator=(const MultiNodeStage&) = delete;

  const char* name() const override { return "MultiNodeStage"; }
  /// Broadcasts the target's initialized parameters (and persistent values) from rank 0; drops
  /// communication of a previous target.
  void on_setup(optimizers::Optimizer& optimizer) override;
  /// Broadcasts parameters that this forward initialized; true (run the forward again) if any.
  bool after_forward(optimizers::Optimizer& optimizer) override;
  /// With `overlap`: arms the gradient hook, which launches each bucket's averaging during backward.
  void around_backward(optimizers::Optimizer& optimizer, const std::function<void()>& backward) override;
  /// Averages the gradients (finishing the buckets of an overlapped backward; zero-filling missing
  /// gradients when asked). With double buffering, starts this step's averaging and leaves the
  /// previous step's averaged gradients for the update (false at the first step: nothing to apply).
  /// After a backward of the caller's own in which parameters became initialized: broadcasts them,
  /// clears the gradients and returns false.
  bool after_backward(optimizers::Optimizer& optimizer) override;
  /// With double buffering, the averaged gradients not yet applied (child "_multi_node":
  /// "n_pending" and "pending/<parameter path>"), so a resumed run continues exactly.
  void serialize(optimizers::Optimizer& optimizer, serializers::Serializer& s) override;

  /// The communicator the gradients are averaged over.
  const Communicator& communicator() const { return comm_; }
  /// The options given at construction.
  const MultiNodeOptimizerOptions& options() const { return options_; }
  /// Number of buckets of the current overlap plan (0 before the first overlapped step).
  std::size_t num_buckets() const;
  /// The current overlap plan (empty before the first overlapped step); what
  /// plan_gradient_buckets(target, options().bucket_cap) gave for the parameters of that step.
  const std::vector<GradientBucket>& buckets() const;
  /// Number of buckets launched during backward (before backward finished) at the last update;
  /// for tests and benchmarks that check overlap happens.
  std::size_t buckets_launched_during_backward() const;

 private:
  bool broadcast_new_params(Link& target);
  void plan_buckets(Link& target);
  bool average(Link& target, bool overlapped);

  Communicator comm_;
  MultiNodeOptimizerOptions options_;
  std::unique_ptr<detail::MultiNodeStageState> state_;
};

/// Installs a MultiNodeStage on `optimizer` and returns it: the optimizer is then data-parallel over
/// `comm`. If it is set up already, rank 0's parameters are broadcast now; otherwise at its
/// setup(). ValueError when `optimizer` has a stage already ("already a multi-node optimizer" for a
/// MultiNodeStage) and for the constructor's errors.
MultiNodeStage& add_multi_node_stage(optimizers::Optimizer& optimizer, Communicator comm,
                                     MultiNodeOptimizerOptions options = {});

/// ChainerMN's entry point: makes `optimizer` data-parallel over `comm` (add_multi_node_stage) and
/// returns it, the same object with the same type (`std::unique_ptr<Adam>` in, the same out), so
/// every accessor is the optimizer's own. Call setup() on it as usual. ValueError for a null
/// optimizer and as add_multi_node_stage.
template <std::derived_from<optimizers::Optimizer> O>
std::unique_ptr<O> create_multi_node_optimizer(std::unique_ptr<O> optimizer, Communicator comm,
                                               MultiNodeOptimizerOptions options = {}) {
  RENSA_CHECK(optimizer != nullptr, ValueError, "create_multi_node_optimizer: null optimizer");
  add_multi_node_stage(*optimizer, std::move(comm), options);
  return optimizer;
}

}  // namespace rensa::mn
