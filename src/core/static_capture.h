#pragma once
// What a static graph's trace records on its thread (include/rensa/core/static_graph.h): the
// kernel calls as steps to replay, the functions applied (for messages and the control-flow
// check), and which arrays the traced code may read on the host.
#include <cstddef>
#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "rensa/core/function_hook.h"

namespace rensa::detail {

/// The functions applied while installed, in the order their forwards end (backwards are not
/// logged), and the one being applied now, for messages.
class FunctionLog : public FunctionHook {
 public:
  explicit FunctionLog(std::string graph) : graph_(std::move(graph)) {}
  std::string name() const override { return "static_graph"; }
  void forward_preprocess(const ForwardCall& call) override { open_.push_back(std::string(call.label)); }
  void forward_postprocess(const ForwardCall& call) override;
  void backward_preprocess(const BackwardCall& call) override;
  void backward_postprocess(const BackwardCall& call) override;
  const std::vector<std::string>& functions() const { return functions_; }
  /// "'relu'" (being applied), "the backward of 'linear'", or "code after 'relu'".
  std::string where() const;
  const std::string& graph() const { return graph_; }

 private:
  std::string graph_;
  std::vector<std::string> functions_;
  std::vector<std::string> open_;
};

/// A trace: FunctionLog plus the recorded steps and the arrays allocated and used while it runs.
class Capture : public FunctionLog {
 public:
  using FunctionLog::FunctionLog;
  std::string name() const override { return "static_graph"; }
  struct Step {
    std::function<void()> run;
    std::vector<const Storage*> uses;  // every storage its Arrays refer to
  };
  /// A storage a step uses, and how many Array handles the recorded steps hold to it.
  struct Held {
    std::shared_ptr<Storage> storage;
    int handles = 0;
  };
  std::vector<Step> steps;
  /// Whether a step's uses are unknown (static_code): no memory plan then.
  bool opaque = false;
  /// Notes an Array handle the next step keeps.
  void use(const Array& a);
  /// Records a step with the uses noted since the last one.
  void add_step(std::function<void()> run);
  /// A storage created while tracing (a buffer the schedule may own).
  void allocated(const Storage* s) { allocated_.insert(s); }
  bool allocated_here(const Storage* s) const { return allocated_.count(s) != 0; }
  /// Whether the host wrote or read the storage while tracing (a constant: its bytes must stay).
  bool host_accessed(const Storage* s) const { return host_accessed_.count(s) != 0; }
  const std::unordered_map<const Storage*, Held>& held() const { return held_; }
  /// Throws when `a` holds values a replay would change (an input, a parameter, a kernel's result).
  void check_host_read(const Array& a);

 private:
  std::unordered_set<const Storage*> allocated_, host_accessed_;
  std::unordered_map<const Storage*, Held> held_;
  std::vector<const Storage*> pending_;
};

/// The memory plan of a schedule traced as `forward` then `backward` (null: none): storages created
/// by the traces, used only by their steps and not `pinned`, share blocks when their lifetimes (first
/// to last step using them) do not overlap; those alive across the end of the forward keep their
/// contents. Returns the bytes of the buffers the schedule then holds. With `share` false, only
/// counts them.
std::size_t plan_memory(const Capture& forward, const Capture* backward,
                        const std::unordered_set<const Storage*>& pinned, bool share);

/// Makes `capture` the calling thread's trace (and installs it as a function hook) until the
/// scope ends. ValueError when a trace is already open on this thread (static graphs do not nest).
class [[nodiscard]] CaptureScope {
 public:
  explicit CaptureScope(Capture& capture);
  ~CaptureScope();
  CaptureScope(const CaptureScope&) = delete;
  CaptureScope& operator=(const CaptureScope&) = delete;

 private:
  FunctionHookScope hook_;
};

/// The calling thread's open trace, or null.
Capture* current_capture();
/// Called for every Storage created while some thread traces.
void capture_allocated(const Storage* s);
/// Called for every host access of array values while some thread traces.
void capture_host_read(const Array& a);

}  // namespace rensa::detail
