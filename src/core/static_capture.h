#pragma once
// What a static graph's trace records on its thread (include/rensa/core/static_graph.h): the
// kernel calls as steps to replay, the functions applied (for messages and the control-flow
// check), and which arrays the traced code may read on the host.
#include <cstddef>
#include <functional>
#include <memory>
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

/// What the traces of one schedule (its forward, then its backward) share: the storages their
/// steps use and the memory plan. The plan works while tracing: when a step first uses a buffer
/// created by the trace, the buffer takes the block of one that is dead (held by recorded steps
/// only, so the traced code can no longer reach it and no later step can use it) and between one
/// and two times its size; otherwise its memory starts a new block. Lifetimes in a block thus never
/// overlap, a trace needs about the memory of an eager call, and contents are produced where they
/// stay.
class Ledger {
 public:
  explicit Ledger(bool share) : share_(share) {}
  /// Notes a handle the next step keeps to `a`'s storage (placing a buffer seen for the first time).
  void use(const Array& a);
  /// The step of the handles noted since the last one is recorded.
  void step_recorded();
  void allocated(const Storage* s) { allocated_.insert(s); }
  /// Notes a host access to a buffer of the trace (a constant, whose bytes must stay); false when
  /// the storage is not one (its values are an input's, a parameter's or a kernel's).
  bool host_access(const Storage* s);
  /// No further sharing (a static_code step may read any array it reaches).
  void stop_sharing() { share_ = false; }
  /// Bytes of the buffers the trace created that its steps hold, shared blocks counted once.
  std::size_t bytes() const;

 private:
  struct Held {
    std::shared_ptr<Storage> storage;
    long handles = 0;
  };
  struct Block {
    std::shared_ptr<Storage> owner;
    const Storage* tenant;
    long adopters = 0;  // storages using the owner's memory (each holds the owner)
  };
  bool dead(const Block& b) const;
  void place(const Storage* s, const std::shared_ptr<Storage>& storage);

  bool share_;
  std::unordered_set<const Storage*> allocated_, host_accessed_, adopted_;
  std::unordered_map<const Storage*, Held> held_;
  std::vector<Block> blocks_;
  std::vector<const Storage*> pending_;
};

/// A trace: FunctionLog plus the recorded steps.
class Capture : public FunctionLog {
 public:
  Capture(std::string graph, std::shared_ptr<Ledger> ledger) : FunctionLog(std::move(graph)), ledger(std::move(ledger)) {}
  std::string name() const override { return "static_graph"; }
  std::vector<std::function<void()>> steps;
  std::shared_ptr<Ledger> ledger;
  /// Record without running (capture_dry).
  bool dry = false;
  /// Throws when `a` holds values a replay would change (an input, a parameter, a kernel's result).
  void check_host_read(const Array& a);
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
