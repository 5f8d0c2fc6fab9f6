#pragma once
/// \file
/// Where in a user's program something happened, for debug mode's messages: the call stack
/// (outside rensa) and the links being called. Internal (rensa::detail).

#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

namespace rensa::detail {

/// A captured call site: return addresses and the links (class names, outermost first) whose
/// forward was running.
struct DebugSite {
  std::vector<void*> frames;
  std::vector<std::string> links;
};

/// The calling thread's site, dropping `skip` frames of the caller's own plus the frames inside
/// rensa at the top of the stack.
std::shared_ptr<const DebugSite> capture_debug_site(int skip = 0);
/// "; <what> in link A > B at:\n  f (file+0x..)\n ..." (empty for a null site).
std::string describe_debug_site(const std::shared_ptr<const DebugSite>& site, std::string_view what);

/// Names a link call for debug sites while it lives (pushed by Link's call operator in debug mode).
class [[nodiscard]] DebugLinkScope {
 public:
  explicit DebugLinkScope(std::string name);
  ~DebugLinkScope();
  DebugLinkScope(const DebugLinkScope&) = delete;
  DebugLinkScope& operator=(const DebugLinkScope&) = delete;
};

/// The class name of `type` without namespaces: "Linear" for rensa::links::Linear (Chainer prints
/// `type(link).__name__`).
std::string short_class_name(const std::type_info& type);

}  // namespace rensa::detail
