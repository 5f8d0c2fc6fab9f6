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

void capture_step(std::function<void()> step) { t_capture->add_step(std::move(step)); }

void capture_use(const Array& a) {
  if (t_capture && !a.is_null()) t_capture->use(a);
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

void Capture::use(const Array& a) {
  Held& h = held_[a.storage().get()];
  if (!h.storage) h.storage = a.storage();
  ++h.handles;
  pending_.push_back(a.storage().get());
}

void Capture::add_step(std::function<void()> run) {
  steps.push_back({std::move(run), std::move(pending_)});
  pending_.clear();
}

void Capture::check_host_read(const Array& a) {
  const Storage* s = a.storage().get();
  if (allocated_.count(s) != 0 && held_.count(s) == 0) {  // a constant written on the host here
    host_accessed_.insert(s);
    return;
  }
  RENSA_THROW(ValueError, graph(), ": ", where(), " reads the values of an array ", a.shape(), " ",
              dtype_name(a.dtype()),
              " on the host while the graph is traced; a replay runs only the recorded kernels and could not "
              "repeat what depends on those values. Apply that function outside the static graph, or wrap the "
              "host code in static_code() so every replay runs it");
}

std::size_t plan_memory(const Capture& forward, const Capture* backward,
                        const std::unordered_set<const Storage*>& pinned, bool share) {
  // Below this a block is not worth sharing (and small host arrays live inside their Storage).
  constexpr std::size_t kMinShared = 4096;
  struct Life {
    std::shared_ptr<Storage> storage;
    std::size_t first = 0, last = 0;
    long handles = 0, holders = 0;
    bool fresh = false, constant = false;
  };
  std::unordered_map<const Storage*, Life> lives;
  std::size_t t = 0, boundary = 0;
  for (const Capture* c : {&forward, backward}) {
    if (c == nullptr) continue;
    for (const auto& [s, held] : c->held()) {
      Life& l = lives[s];
      l.storage = held.storage;
      l.handles += held.handles;
      ++l.holders;
      l.fresh = l.fresh || c->allocated_here(s);
      l.constant = l.constant || c->host_accessed(s);
    }
  }
  for (const Capture* c : {&forward, backward}) {
    if (c == nullptr) continue;
    for (const auto& step : c->steps) {
      for (const Storage* s : step.uses) {
        Life& l = lives[s];
        if (l.first == 0 && l.last == 0) l.first = t + 1;  // 1-based, 0: unseen
        l.last = t + 1;
      }
      ++t;
    }
    if (c == &forward) boundary = t + 1;  // the first backward step, 1-based
  }
  const bool plannable = share && !forward.opaque && !(backward && backward->opaque);
  std::size_t bytes = 0;
  std::vector<Life*> shared;
  for (auto& [s, l] : lives) {
    if (!l.fresh) continue;
    // Only the recorded steps (and the two captures' tables, and `l`) may hold it; another holder
    // (a link keeping an array it made) would see the block change under it.
    const bool only_steps = l.storage.use_count() == l.handles + l.holders + 1;
    if (!plannable || l.constant || pinned.count(s) != 0 || l.storage->nbytes() < kMinShared || !only_steps) {
      bytes += l.storage->nbytes();
    } else {
      shared.push_back(&l);
    }
  }
  std::sort(shared.begin(), shared.end(), [](const Life* a, const Life* b) {
    return a->first != b->first ? a->first < b->first : a->storage->nbytes() > b->storage->nbytes();
  });
  struct Block {
    std::shared_ptr<Storage> owner;
    std::size_t free_after;  // the last step of its current tenant
  };
  std::vector<Block> blocks;
  for (Life* l : shared) {
    Block* best = nullptr;
    for (Block& b : blocks) {
      if (b.free_after < l->first && b.owner->nbytes() >= l->storage->nbytes() &&
          (best == nullptr || b.owner->nbytes() < best->owner->nbytes())) {
        best = &b;
      }
    }
    if (best == nullptr) {
      blocks.push_back({l->storage, l->last});
      bytes += l->storage->nbytes();
      continue;
    }
    l->storage->share_memory_of(best->owner, l->first < boundary && l->last >= boundary);
    best->free_after = l->last;
  }
  return bytes;
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
