#pragma once
/// \file
/// Function hooks (Chainer's FunctionHook): callbacks around the forward and backward of every
/// function application on the calling thread, the one place profilers, printers and the debug
/// mode's checks see the graph being built and run.

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "rensa/core/variable.h"

namespace rensa {

class FunctionNode;

/// A function's forward as hooks see it. In forward_preprocess the outputs are empty; in
/// forward_postprocess they hold the results (or stay empty when the forward threw).
struct ForwardCall {
  /// The function's label ("linear", "relu"), as FunctionNode::label.
  std::string_view label;
  /// The inputs passed to the function.
  std::span<const Variable> inputs;
  /// The outputs (empty in forward_preprocess, and when the forward threw).
  std::span<const Variable> outputs;
};

/// A recorded function's backward as hooks see it. grad_inputs is empty in backward_preprocess.
struct BackwardCall {
  /// The function node whose backward runs.
  const FunctionNode& node;
  /// Gradients of the outputs (zeros for an output that received none).
  std::span<const Variable> grad_outputs;
  /// Gradients the backward returned, one per input (null where none was needed).
  std::span<const Variable> grad_inputs;
};

/// Base of function hooks. Override what you need; every callback defaults to nothing. Install a
/// hook for a scope with FunctionHookScope (Chainer's `with hook:`): it then sees every function
/// applied on the calling thread, including those inside other functions' backward, in the order
/// pre, (nested calls), post. A hook must not throw from the postprocess callbacks it receives
/// while an exception unwinds (they are called then, so timers stay balanced).
class FunctionHook {
 public:
  virtual ~FunctionHook() = default;
  /// The hook's name; two hooks of one name cannot be installed at once on a thread.
  virtual std::string name() const { return "FunctionHook"; }
  /// Called when the hook is installed (Chainer passes the function, or None for a global hook).
  virtual void added() {}
  /// Called when the hook's scope ends.
  virtual void deleted() {}
  /// Called before a function's forward runs.
  virtual void forward_preprocess(const ForwardCall& /*call*/) {}
  /// Called after a function's forward (also when it threw: the outputs are then empty).
  virtual void forward_postprocess(const ForwardCall& /*call*/) {}
  /// Called before a recorded function's backward runs.
  virtual void backward_preprocess(const BackwardCall& /*call*/) {}
  /// Called after a recorded function's backward, with grad_inputs filled.
  virtual void backward_postprocess(const BackwardCall& /*call*/) {}
};

/// Installs `hook` on the calling thread until the scope ends (Chainer's `with hook:`). Scopes
/// nest; hooks are called in installation order. KeyError when a hook of the same name() is
/// already installed on this thread. The hook must outlive the scope. Not copyable or movable.
class [[nodiscard]] FunctionHookScope {
 public:
  /// Installs `hook`; KeyError when a hook of the same name() is already installed on this thread.
  explicit FunctionHookScope(FunctionHook& hook);
  ~FunctionHookScope();
  FunctionHookScope(const FunctionHookScope&) = delete;
  FunctionHookScope& operator=(const FunctionHookScope&) = delete;

 private:
  FunctionHook* hook_;
};

/// The hooks installed on the calling thread, in installation order.
std::vector<FunctionHook*> get_function_hooks();

namespace detail {

/// Number of hooks installed on all threads; the recording paths test it (and Config::debug)
/// before anything else, so having no hook costs one relaxed load per function.
extern std::atomic<int> g_forward_observers;
inline bool forward_observed() { return g_forward_observers.load(std::memory_order_relaxed) != 0; }

/// Marks the start of a function's forward for the hooks, before it allocates or computes. The
/// matching record() (same label, on this thread, before the entry ends) ends it; a function
/// recorded without an entry is seen by the hooks as starting at its record(). Cheap when no hook
/// is installed. Use as the first statement of a function: `detail::ForwardEntry entry("relu", x);`
class [[nodiscard]] ForwardEntry {
 public:
  /// Inputs as arguments: `ForwardEntry entry("add", a, b);` (copied only when a hook is installed).
  template <class... V>
    requires(std::is_convertible_v<const V&, const Variable&> && ...)
  explicit ForwardEntry(const char* label, const V&... inputs) {
    if (forward_observed()) [[unlikely]] open_with(label, inputs...);
  }
  /// Inputs known at run time (a vector or span).
  ForwardEntry(const char* label, std::span<const Variable> inputs) {
    if (forward_observed()) [[unlikely]] open(label, inputs);
  }
  ~ForwardEntry() {
    if (frame_ >= 0) [[unlikely]] close();
  }
  ForwardEntry(const ForwardEntry&) = delete;
  ForwardEntry& operator=(const ForwardEntry&) = delete;

 private:
  // Out of line: the array of inputs in a caller's frame costs its fast path (measured: 20 ns per
  // call of add).
  template <class... V>
  [[gnu::noinline, gnu::cold]] void open_with(const char* label, const V&... inputs) {
    const Variable xs[] = {Variable(inputs)..., Variable()};
    open(label, std::span<const Variable>(xs, sizeof...(V)));
  }
  void open(const char* label, std::span<const Variable> inputs);
  void close();
  int frame_ = -1;
};

/// Called by record() and FunctionNode::apply() with a function's results: ends its forward for
/// the hooks (and runs debug mode's checks). Only when forward_observed() or debug mode is on.
void forward_recorded(const char* label, std::span<const Variable> inputs, std::span<const Variable> outputs,
                      FunctionNode* node);
/// Called by the backward engine around a node's backward when forward_observed() or debug mode.
void backward_begin(const BackwardCall& call);
void backward_end(const BackwardCall& call);

}  // namespace detail

}  // namespace rensa
