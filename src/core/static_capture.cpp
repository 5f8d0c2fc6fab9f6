#include "src/core/static_capture.h"

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

void capture_step(std::function<void()> step) { t_capture->steps.push_back(std::move(step)); }

void capture_use(const Array& a) {
  if (t_capture && !a.is_null()) t_capture->used(a.storage().get());
}

UncapturedScope::UncapturedScope() { ++t_uncaptured; }
UncapturedScope::~UncapturedScope() { --t_uncaptured; }

void capture_allocated(const Storage* s) {
  if (t_capture) t_capture->allocated(s);
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

void Capture::allocated(const Storage* s) {
  allocated_[s] = s->nbytes();
  used_.erase(s);  // a new storage at a freed one's address
}

void Capture::check_host_read(const Array& a) const {
  const Storage* s = a.storage().get();
  if (allocated_.count(s) != 0 && used_.count(s) == 0) return;  // a constant written on the host here
  RENSA_THROW(ValueError, graph(), ": ", where(), " reads the values of an array ", a.shape(), " ",
              dtype_name(a.dtype()),
              " on the host while the graph is traced; a replay runs only the recorded kernels and could not "
              "repeat what depends on those values. Apply that function outside the static graph, or wrap the "
              "host code in static_code() so every replay runs it");
}

std::size_t Capture::buffer_bytes() const {
  std::size_t n = 0;
  for (const auto& [s, bytes] : allocated_) n += used_.count(s) != 0 ? bytes : 0;
  return n;
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
