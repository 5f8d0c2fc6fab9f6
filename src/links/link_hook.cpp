#include "rensa/links/link_hook.h"

#include <algorithm>
#include <utility>

#include "rensa/core/debug_site.h"
#include "rensa/core/error.h"

namespace rensa {

namespace detail {
std::atomic<int> g_link_observers{0};
}  // namespace detail

namespace {
std::vector<LinkHook*>& thread_link_hooks() {
  thread_local std::vector<LinkHook*> hooks;
  return hooks;
}
}  // namespace

LinkHookScope::LinkHookScope(LinkHook& hook) : hook_(&hook) {
  auto& hooks = thread_link_hooks();
  const std::string name = hook.name();
  for (const LinkHook* h : hooks) {
    RENSA_CHECK(h->name() != name, KeyError, "LinkHookScope: a hook named '", name,
                "' is already installed on this thread");
  }
  hook.added(nullptr);  // first: a hook that refuses a scope (SpectralNormalization) leaves nothing installed
  hooks.push_back(hook_);
  detail::g_link_observers.fetch_add(1, std::memory_order_relaxed);
}

LinkHookScope::~LinkHookScope() {
  std::erase(thread_link_hooks(), hook_);
  detail::g_link_observers.fetch_sub(1, std::memory_order_relaxed);
  hook_->deleted(nullptr);
}

std::vector<LinkHook*> get_link_hooks() { return thread_link_hooks(); }

Link& Link::add_hook(std::shared_ptr<LinkHook> hook, std::string name) {
  RENSA_CHECK(hook != nullptr, ValueError, "Link::add_hook: the hook is null");
  if (name.empty()) name = hook->name();
  for (const auto& [n, h] : local_hooks_) {
    RENSA_CHECK(n != name, KeyError, "Link::add_hook: a hook named '", name, "' is already on this ",
                detail::short_class_name(typeid(*this)));
  }
  hook->added(this);
  local_hooks_.emplace_back(name, std::move(hook));
  return *this;
}

void Link::delete_hook(const std::string& name) {
  auto it = std::find_if(local_hooks_.begin(), local_hooks_.end(), [&](const auto& p) { return p.first == name; });
  RENSA_CHECK(it != local_hooks_.end(), KeyError, "Link::delete_hook: no hook named '", name, "' on this ",
              detail::short_class_name(typeid(*this)));
  auto hook = std::move(it->second);
  local_hooks_.erase(it);
  hook->deleted(this);
}

namespace detail {

LinkCallObserver::LinkCallObserver(Link& link, std::span<const Variable> args)
    : link_(link), args_(args), hooks_(thread_link_hooks()) {
  for (const auto& [name, h] : link.local_link_hooks()) hooks_.push_back(h.get());
  if (config().debug) debug_scope_.emplace(short_class_name(typeid(link)));
  const LinkForwardCall call{link_, "forward", args_, {}};
  for (LinkHook* h : hooks_) h->forward_preprocess(call);
}

void LinkCallObserver::finish(std::span<const Variable> out) {
  finished_ = true;
  const LinkForwardCall call{link_, "forward", args_, out};
  for (LinkHook* h : hooks_) h->forward_postprocess(call);
}

LinkCallObserver::~LinkCallObserver() {
  if (!finished_) {
    const LinkForwardCall call{link_, "forward", args_, {}};
    for (LinkHook* h : hooks_) h->forward_postprocess(call);
  }
}

}  // namespace detail
}  // namespace rensa
