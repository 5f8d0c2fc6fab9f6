#include "src/core/static_capture.h"

#include <algorithm>

#include "rensa/core/backend.h"
#include "rensa/core/error.h"
#include "rensa/core/function_node.h"

namespace rensa::detail {

std::atomic<int> g_static_captures{0};

namespace {
thread_local Capture* t_capture = nullptr;
thread_local int t_uncaptured = 0;  // depth of kernels and static_code running on this thread
}  // namespace

Capture* current_capture() { return t_capture; }

bool capture_open() { return t_capture != nullptr && t_uncaptured == 0; }

bool capture_dry() { return t_capture != nullptr && t_capture->dry; }

void capture_step(std::function<void()> step) {
  t_capture->steps.push_back(std::move(step));
  t_capture->ledger->step_recorded();
}

void capture_use(const Array& a) {
  if (t_capture && !a.is_null()) t_capture->ledger->use(a);
}

UncapturedScope::UncapturedScope() { ++t_uncaptured; }
UncapturedScope::~UncapturedScope() { --t_uncaptured; }

void record_and_run(const std::function<void()>& step) {
  if (capture_open()) {
    capture_step(step);
    if (capture_dry()) return;
  }
  UncapturedScope inside;
  step();
}

void capture_allocated(const Storage* s) {
  if (t_capture) t_capture->ledger->allocated(s);
}

void capture_host_read(const Array& a) {
  if (capture_open()) t_capture->check_host_read(a);
}

void FunctionLog::forward_postprocess(const ForwardCall& call) {
  if (!open_.empty() && open_.back() == call.label) open_.pop_back();
  functions_.emplace_back(call.label);
}

void FunctionLog::backward_preprocess(const BackwardCall& call) {
  open_.push_back(std::string("the backward of '") + call.node.label() + "'");
}

void FunctionLog::backward_postprocess(const BackwardCall& /*call*/) {
  if (!open_.empty()) open_.pop_back();
}

std::string FunctionLog::where() const {
  if (!open_.empty()) return open_.back().starts_with("the backward") ? open_.back() : "'" + open_.back() + "'";
  if (!functions_.empty()) return "code after '" + functions_.back() + "'";
  return "code before any function";
}

void Ledger::use(const Array& a) {
  const Storage* s = a.storage().get();
  auto [it, added] = held_.try_emplace(s);
  if (added) {
    it->second.storage = a.storage();
    if (share_) place(s, a.storage());
  }
  // Counted once the step holds the handle: until then the caller's own handle keeps it alive.
  pending_.push_back(s);
}

void Ledger::step_recorded() {
  for (const Storage* s : pending_) ++held_[s].handles;
  pending_.clear();
}

bool Ledger::dead(const Block& b) const {
  const Held& t = held_.at(b.tenant);
  // The steps' handles, this table's, and for the owner the block's and its adopters'.
  const long expected = t.handles + 1 + (t.storage == b.owner ? 1 + b.adopters : 0);
  return t.storage.use_count() == expected;
}

void Ledger::place(const Storage* s, const std::shared_ptr<Storage>& storage) {
  // Below this a block is not worth sharing (and small host arrays live inside their Storage).
  constexpr std::size_t kMinShared = 4096;
  const std::size_t n = storage->nbytes();
  if (allocated_.count(s) == 0 || host_accessed_.count(s) != 0 || n < kMinShared || !storage->device().is_host()) {
    return;
  }
  // The smallest free block that fits, and at most twice the size: a small buffer in a large block
  // would keep it from a large one later (measured on ResNet-50: 1,014 MiB of blocks at batch 8
  // with any size, 817 with at most twice, 887 with 1.25 times, 1,018 with 4 times).
  Block* best = nullptr;
  for (Block& b : blocks_) {
    const std::size_t size = b.owner->nbytes();
    if (size >= n && size <= 2 * n && (best == nullptr || size < best->owner->nbytes()) && dead(b)) best = &b;
  }
  if (best == nullptr) {
    blocks_.push_back({storage, s});
    return;
  }
  storage->share_memory_of(best->owner);
  adopted_.insert(s);
  best->tenant = s;
  ++best->adopters;
}

bool Ledger::host_access(const Storage* s) {
  if (allocated_.count(s) == 0 || held_.count(s) != 0) return false;
  host_accessed_.insert(s);
  return true;
}

std::size_t Ledger::bytes() const {
  std::size_t n = 0;
  for (const auto& [s, h] : held_) {
    if (allocated_.count(s) != 0 && adopted_.count(s) == 0) n += h.storage->nbytes();
  }
  return n;
}

void Capture::check_host_read(const Array& a) {
  if (ledger->host_access(a.storage().get())) return;  // a constant written on the host here
  RENSA_THROW(ValueError, graph(), ": ", where(), " reads the values of an array ", a.shape(), " ",
              dtype_name(a.dtype()),
              " on the host while the graph is traced; a replay runs only the recorded kernels and could not "
              "repeat what depends on those values. Apply that function outside the static graph, or wrap the "
              "host code in static_code() so every replay runs it");
}

namespace {
FunctionHook& open_capture(Capture& capture) {
  RENSA_CHECK(t_capture == nullptr, ValueError, capture.graph(), ": called while '", t_capture->graph(),
              "' is traced; static graphs do not nest (mark only the outermost forward static)");
  return capture;
}
}  // namespace

CaptureScope::CaptureScope(Capture& capture) : hook_(open_capture(capture)) {
  t_capture = &capture;
  g_static_captures.fetch_add(1, std::memory_order_relaxed);
}

CaptureScope::~CaptureScope() {
  g_static_captures.fetch_sub(1, std::memory_order_relaxed);
  t_capture = nullptr;
}

}  // namespace rensa::detail
