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
  std::vector<std::function<void()>> steps;
  /// A storage created while tracing (a buffer the schedule may own).
  void allocated(const Storage* s);
  /// A storage passed to a recorded kernel.
  void used(const Storage* s) { used_.insert(s); }
  /// Throws when `a` holds values a replay would change (an input, a parameter, a kernel's result).
  void check_host_read(const Array& a) const;
  /// Bytes of the storages both created while tracing and used by a recorded kernel.
  std::size_t buffer_bytes() const;

 private:
  std::unordered_map<const Storage*, std::size_t> allocated_;
  std::unordered_set<const Storage*> used_;
};

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
