#include "rensa/core/function_hook.h"

#include <cmath>
#include <cstring>

#include "rensa/core/backend.h"
#include "rensa/core/config.h"
#include "rensa/core/debug_site.h"
#include "rensa/core/error.h"
#include "rensa/core/function_node.h"

namespace rensa {

namespace detail {
std::atomic<int> g_forward_observers{0};
}  // namespace detail

namespace {

struct Frame {
  const char* label;
  bool recorded;
};

struct ThreadHooks {
  std::vector<FunctionHook*> hooks;
  std::vector<Frame> frames;  // open ForwardEntry scopes, outermost first
};

ThreadHooks& thread_hooks() {
  thread_local ThreadHooks t;
  return t;
}

// Number of NaN elements of a floating array (0 for other dtypes).
int64_t count_nan(const Array& a) {
  if (a.is_null() || !is_floating(a.dtype()) || !a.device().is_host()) return 0;
  if (detail::static_capturing() && detail::capture_open() && detail::capture_dry()) return 0;  // nothing ran
  detail::UncapturedScope checking;  // debug mode's own read, not the traced code's
  int64_t n = 0;
  for (double v : a.to_vector<double>()) n += std::isnan(v) ? 1 : 0;
  return n;
}

}  // namespace

FunctionHookScope::FunctionHookScope(FunctionHook& hook) : hook_(&hook) {
  auto& t = thread_hooks();
  const std::string name = hook.name();
  for (const FunctionHook* h : t.hooks) {
    RENSA_CHECK(h->name() != name, KeyError, "FunctionHookScope: a hook named '", name,
                "' is already installed on this thread");
  }
  hook.added();
  t.hooks.push_back(hook_);
  detail::g_forward_observers.fetch_add(1, std::memory_order_relaxed);
}

FunctionHookScope::~FunctionHookScope() {
  auto& t = thread_hooks();
  std::erase(t.hooks, hook_);
  detail::g_forward_observers.fetch_sub(1, std::memory_order_relaxed);
  hook_->deleted();
}

std::vector<FunctionHook*> get_function_hooks() { return thread_hooks().hooks; }

namespace detail {

void ForwardEntry::open(const char* label, std::span<const Variable> inputs) {
  auto& t = thread_hooks();
  if (t.hooks.empty()) return;  // hooks are installed on another thread only
  frame_ = static_cast<int>(t.frames.size());
  t.frames.push_back({label, false});
  const ForwardCall call{label, inputs, {}};
  for (FunctionHook* h : t.hooks) h->forward_preprocess(call);
}

void ForwardEntry::close() {
  auto& t = thread_hooks();
  if (static_cast<std::size_t>(frame_) < t.frames.size()) {
    const Frame f = t.frames[static_cast<std::size_t>(frame_)];
    t.frames.resize(static_cast<std::size_t>(frame_));
    // No record() ended it: the function returned without recording (a view, an identity) or threw.
    if (!f.recorded) {
      const ForwardCall call{f.label, {}, {}};
      for (FunctionHook* h : t.hooks) h->forward_postprocess(call);
    }
  }
}

void forward_recorded(const char* label, std::span<const Variable> inputs, std::span<const Variable> outputs,
                      FunctionNode* node) {
  auto& t = thread_hooks();
  if (!t.hooks.empty()) {
    const ForwardCall call{label, inputs, outputs};
    Frame* open = nullptr;
    for (auto it = t.frames.rbegin(); it != t.frames.rend(); ++it) {
      if (!it->recorded) {
        open = &*it;
        break;
      }
    }
    if (open && std::strcmp(open->label, label) == 0) {
      open->recorded = true;
    } else {
      for (FunctionHook* h : t.hooks) h->forward_preprocess(call);
    }
    for (FunctionHook* h : t.hooks) h->forward_postprocess(call);
  }
  if (!config().debug) return;
  if (node) node->set_creation_site(capture_debug_site(1));
  for (std::size_t j = 0; j < outputs.size(); ++j) {
    const Array& y = outputs[j].array();
    const int64_t nans = count_nan(y);
    RENSA_CHECK(nans == 0, ValueError, label, ": NaN detected on forward computation (debug mode): output ", j,
                " ", dtype_name(y.dtype()), " ", y.shape(), " has ", nans, " NaN of ", y.size(), " elements",
                describe_debug_site(capture_debug_site(1), "the function was called"));
  }
}

void backward_begin(const BackwardCall& call) {
  for (FunctionHook* h : thread_hooks().hooks) h->backward_preprocess(call);
}

void backward_end(const BackwardCall& call) {
  for (FunctionHook* h : thread_hooks().hooks) h->backward_postprocess(call);
  if (!config().debug || std::uncaught_exceptions() > 0) return;
  for (std::size_t i = 0; i < call.grad_inputs.size(); ++i) {
    if (call.grad_inputs[i].is_null()) continue;
    const Array& g = call.grad_inputs[i].array();
    const int64_t nans = count_nan(g);
    RENSA_CHECK(nans == 0, ValueError, call.node.label(),
                ": NaN detected on backward computation (debug mode): the gradient of input ", i, " ",
                dtype_name(g.dtype()), " ", g.shape(), " has ", nans, " NaN of ", g.size(), " elements",
                describe_debug_site(call.node.creation_site(), "the function was created"));
  }
}

}  // namespace detail
}  // namespace rensa
