#pragma once
/// \file
/// Link hooks (Chainer's LinkHook): callbacks around a link's forward, installed for a scope on
/// the calling thread (every link's calls) or on one link (Link::add_hook).

#include <string>

#include "rensa/links/link.h"

namespace rensa {

/// Base of link hooks. Override what you need; every callback defaults to nothing.
class LinkHook {
 public:
  virtual ~LinkHook() = default;
  /// The hook's name: a scope refuses a second hook of one name, and Link::add_hook files the hook
  /// under it by default.
  virtual std::string name() const { return "LinkHook"; }
  /// Called when installed: on `link` by Link::add_hook, with null by LinkHookScope.
  virtual void added(Link* /*link*/) {}
  /// Called when removed (Link::delete_hook, or the end of the scope with null).
  virtual void deleted(Link* /*link*/) {}
  /// Called before a link's forward runs.
  virtual void forward_preprocess(const LinkForwardCall& /*call*/) {}
  /// Called after a link's forward (also when it threw: `out` is then empty).
  virtual void forward_postprocess(const LinkForwardCall& /*call*/) {}
};

/// Installs `hook` for every link called on this thread until the scope ends (Chainer's `with
/// hook:`). Hooks are called in installation order, the thread's before the link's own. KeyError
/// when a hook of the same name() is already installed on this thread. The hook must outlive the
/// scope. Not copyable or movable.
class [[nodiscard]] LinkHookScope {
 public:
  /// Installs `hook`; KeyError when a hook of the same name() is already installed on this thread.
  explicit LinkHookScope(LinkHook& hook);
  ~LinkHookScope();
  LinkHookScope(const LinkHookScope&) = delete;
  LinkHookScope& operator=(const LinkHookScope&) = delete;

 private:
  LinkHook* hook_;
};

/// The link hooks installed on the calling thread by scopes, in installation order.
std::vector<LinkHook*> get_link_hooks();

}  // namespace rensa
