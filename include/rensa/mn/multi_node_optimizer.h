#pragma once
/// \file
/// The multi-node optimizer (ChainerMN's create_multi_node_optimizer): wraps an optimizer so that
/// every rank applies the same update, computed from the gradients averaged over all ranks.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

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
struct MultiNodeOptimizerState;
}

/// An optimizer that averages gradients over the ranks of a communicator, then lets the wrapped
/// (actual) optimizer update. Hyperparameters, hooks, rules and serialization are those of the
/// actual optimizer (setting "lr" on this object sets it there; hooks run on the averaged
/// gradients, so clipping by the global norm sees the same norm on every rank).
///
/// Parameters are broadcast from rank 0 at setup() (initialized ones) and again whenever
/// parameters that were not broadcast yet become initialized (lazy initialization at the first
/// forward): in update(loss_fn) the forward then runs a second time, after the broadcast, so the
/// gradients are computed from rank 0's values on every rank; in update() (the caller already ran
/// backward) that step's gradients are dropped and no update is made (ChainerMN's behaviour).
/// Every rank must call update() the same number of times, with models of the same structure.
class MultiNodeOptimizer : public optimizers::Optimizer {
 public:
  /// ValueError for a null optimizer, a null communicator, an optimizer that is already a
  /// MultiNodeOptimizer, or a bucket_cap that is not positive.
  MultiNodeOptimizer(std::unique_ptr<optimizers::Optimizer> actual, Communicator comm,
                     MultiNodeOptimizerOptions options = {});
  /// Waits for communication still in flight (errors are reported to stderr, not thrown).
  ~MultiNodeOptimizer() override;

  /// Sets up the actual optimizer on `link`, broadcasts its initialized parameters (and persistent
  /// values) from rank 0, and attaches the gradient hooks used for overlap. Collective.
  void setup(Link& link) override;
  /// Averages the current gradients over ranks (zero-filling missing ones when asked), then runs the
  /// actual optimizer's update (hooks, then rules). With double buffering, applies the previous
  /// step's averaged gradients instead. Collective.
  void update() override;
  /// Computes the loss, clears the gradients, backpropagates (starting bucket allreduces during
  /// backward with `overlap`), then updates as update(). Collective.
  void update(const std::function<Variable()>& loss_fn) override;

  void add_hook(std::shared_ptr<optimizers::OptimizerHook> hook) override;
  void remove_hook(const std::string& name) override;
  const std::vector<std::shared_ptr<optimizers::OptimizerHook>>& hooks() const override;
  double hyperparam(const std::string& name) const override;
  void set_hyperparam(const std::string& name, double value) override;
  bool has_hyperparam(const std::string& name) const override;
  const std::map<std::string, double>& hyperparams() const override;
  double lr() const override;
  optimizers::UpdateRule* rule(const Variable& param) override;
  void new_epoch() override;
  /// The actual optimizer's state; with double buffering also the averaged gradients not yet applied
  /// (child "_multi_node"), so a resumed run continues exactly.
  void serialize(serializers::Serializer& s) override;

  /// The wrapped optimizer.
  optimizers::Optimizer& actual() const { return *actual_; }
  const Communicator& communicator() const { return comm_; }
  const MultiNodeOptimizerOptions& options() const { return options_; }
  /// Number of buckets of the current overlap plan (0 before the first overlapped step).
  std::size_t num_buckets() const;
  /// Number of buckets launched during backward (before backward finished) at the last update;
  /// for tests and benchmarks that check overlap happens.
  std::size_t buckets_launched_during_backward() const;

 protected:
  std::unique_ptr<optimizers::UpdateRule> create_update_rule() override;

 private:
  void sync_counters();
  bool broadcast_new_params();
  void reduce_and_update(bool overlapped);

  std::unique_ptr<optimizers::Optimizer> actual_;
  Communicator comm_;
  MultiNodeOptimizerOptions options_;
  std::shared_ptr<detail::MultiNodeOptimizerState> state_;
};

/// Wraps `optimizer` for data-parallel training over `comm` (see MultiNodeOptimizer). Call setup()
/// on the result, not on `optimizer`.
std::unique_ptr<MultiNodeOptimizer> create_multi_node_optimizer(std::unique_ptr<optimizers::Optimizer> optimizer,
                                                                Communicator comm,
                                                                MultiNodeOptimizerOptions options = {});

}  // namespace rensa::mn
