#include "rensa/core/debug_site.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>

#include <cstdint>
#include <cstdlib>
#include <sstream>

namespace rensa::detail {
namespace {

thread_local std::vector<std::string> tls_links;

constexpr int kMaxFrames = 48;
constexpr std::size_t kShownFrames = 8;

std::string demangle(const char* name) {
  if (!name) return "?";
  int status = 0;
  char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string s = status == 0 && out ? out : name;
  std::free(out);
  return s;
}

// The shared object (or executable) this file is linked into: its frames are rensa's.
const char* own_object() {
  Dl_info info{};
  return dladdr(reinterpret_cast<void*>(&own_object), &info) ? info.dli_fname : nullptr;
}

bool inside_rensa(void* pc) {
  Dl_info info{};
  if (!dladdr(pc, &info)) return false;
  static const char* const own = own_object();
  const std::string sym = demangle(info.dli_sname);
  // A static link puts rensa into the executable: tell its frames by their namespace.
  if (sym.rfind("rensa::", 0) == 0) return true;
  return own && info.dli_fname && std::string_view(info.dli_fname) == own &&
         std::string_view(own).find("rensa") != std::string_view::npos;
}

}  // namespace

std::shared_ptr<const DebugSite> capture_debug_site(int skip) {
  void* buf[kMaxFrames];
  const int n = backtrace(buf, kMaxFrames);
  auto site = std::make_shared<DebugSite>();
  int i = 1 + skip;
  while (i < n && inside_rensa(buf[i])) ++i;
  for (; i < n && site->frames.size() < kShownFrames; ++i) site->frames.push_back(buf[i]);
  site->links = tls_links;
  return site;
}

std::string describe_debug_site(const std::shared_ptr<const DebugSite>& site, std::string_view what) {
  if (!site) return "";
  std::ostringstream os;
  os << "; " << what;
  if (!site->links.empty()) {
    os << " in link ";
    for (std::size_t i = 0; i < site->links.size(); ++i) os << (i ? " > " : "") << site->links[i];
  }
  os << " at:";
  for (void* pc : site->frames) {
    Dl_info info{};
    os << "\n  ";
    if (dladdr(pc, &info) && info.dli_fname) {
      // The offset in the object is what `addr2line -f -C -e FILE OFFSET` takes.
      const auto off = reinterpret_cast<uintptr_t>(pc) - reinterpret_cast<uintptr_t>(info.dli_fbase);
      os << (info.dli_sname ? demangle(info.dli_sname) : std::string("?")) << " (" << info.dli_fname << "+0x"
         << std::hex << off << std::dec << ")";
    } else {
      os << pc;
    }
  }
  return os.str();
}

DebugLinkScope::DebugLinkScope(std::string name) { tls_links.push_back(std::move(name)); }
DebugLinkScope::~DebugLinkScope() { tls_links.pop_back(); }

std::string short_class_name(const std::type_info& type) {
  std::string s = demangle(type.name());
  const std::size_t end = s.find('<');
  const std::size_t colon = s.rfind("::", end == std::string::npos ? std::string::npos : end);
  return colon == std::string::npos ? s : s.substr(colon + 2);
}

}  // namespace rensa::detail
