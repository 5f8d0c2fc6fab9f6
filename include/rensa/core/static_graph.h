#pragma once
/// \file
/// Static graphs (Chainer's static_graph): a forward whose graph is the same on every call runs
/// eagerly on its first call (lazy initialization), is traced by its second, run eagerly as usual
/// while the kernels it and its backward run are recorded, and later calls replay that schedule on
/// the same buffers, building no graph; the only new arrays are the outputs and the gradients
/// handed out. docs/static_graph.md says what a forward must (not) do to be replayed.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rensa/core/variable.h"

namespace rensa {

/// Options of StaticGraph.
struct StaticGraphOptions {
  /// Names the graph in messages, and is the label function hooks see for a replay.
  std::string name = "static_graph";
  /// A call with new input shapes, dtypes, requires_grad flags or configuration (train,
  /// enable_backprop, dtype, device) traces a schedule of its own, as Chainer. When false, such a
  /// call is a ValueError naming the input or setting that differs from the first trace.
  bool retrace_on_new_inputs = true;
  /// Every check_every-th call (0: never; in debug mode, every call) runs the forward eagerly instead
  /// and compares the functions it applies with the trace's: a difference is a ValueError naming the
  /// first differing function, or, with retrace_on_mismatch, drops the schedule so the next call
  /// traces again. The eager call's outputs are returned either way.
  int64_t check_every = 0;
  /// On a mismatch found by a check, trace again at the next call instead of throwing ValueError.
  bool retrace_on_mismatch = false;
  /// Schedules kept; beyond it the least recently used one is dropped. A forward whose backward has
  /// not run yet holds its schedule, so another call before that backward traces a second one.
  std::size_t max_schedules = 8;
  /// Run eagerly when Config::train is false (Chainer's force_test_define_by_run).
  bool eager_in_test = false;
  /// Buffers whose lifetimes in the schedule do not overlap share memory (activations no longer
  /// needed, the backward's temporaries). Arrays the forward keeps elsewhere (a link's member) are
  /// left alone.
  bool plan_memory = true;
};

/// What a static graph has done and holds.
struct StaticGraphStats {
  /// Calls that traced the forward (and, at its backward, the backward).
  int64_t traces = 0;
  /// Calls that replayed a schedule.
  int64_t replays = 0;
  /// Calls run eagerly (the checks, and eager_in_test).
  int64_t eager_calls = 0;
  /// Schedules held now.
  std::size_t schedules = 0;
  /// Kernel calls in the schedules' forwards and traced backwards.
  std::size_t forward_steps = 0;
  /// Kernel calls in the traced backwards.
  std::size_t backward_steps = 0;
  /// Bytes of the buffers the schedules hold between calls (activations, gradients, workspaces).
  std::size_t buffer_bytes = 0;
};

/// Chainer's static_graph decorator for a C++ forward: `forward` maps input variables to output variables
/// and is the same graph on every call (the parameters it uses are found behind its outputs).
/// Calling the StaticGraph gives the forward's outputs; backward through them replays the traced
/// backward and delivers the parameters' gradients as an eager backward would, so optimizers, hooks,
/// loss scaling and rensa::mn work unchanged. Not copyable; call it from one thread at a time.
class StaticGraph {
 public:
  /// The forward: input variables to output variables, the same graph at every call.
  using Forward = std::function<std::vector<Variable>(const std::vector<Variable>&)>;
  /// `forward` is traced at the first call and replayed after (see the options).
  explicit StaticGraph(Forward forward, StaticGraphOptions options = {});
  /// For a forward of one variable to one variable.
  explicit StaticGraph(std::function<Variable(const Variable&)> forward, StaticGraphOptions options = {});
  ~StaticGraph();
  StaticGraph(const StaticGraph&) = delete;
  StaticGraph& operator=(const StaticGraph&) = delete;

  /// The forward's outputs for `inputs`: traced, replayed, or run eagerly as the options say.
  std::vector<Variable> operator()(const std::vector<Variable>& inputs);
  /// The single output of a one-input call (ValueError when the forward returns another count).
  Variable operator()(const Variable& x);
  /// Drops every schedule: the next call traces again (after replacing parameters' arrays by hand,
  /// say; a parameter given a new array is noticed on its own).
  void reset();
  /// Counts of what the graph has done and holds.
  StaticGraphStats stats() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

/// Chainer's static_code: runs `fn` now and, when called while a static graph is traced, again at
/// this point of every replay. For host code inside a static forward (counters, reading an array's
/// values); kernels it runs are not recorded separately. `fn` is kept and called on every replay:
/// capture by value what the forward creates (its local variables are gone by then).
void static_code(const std::function<void()>& fn);

}  // namespace rensa
