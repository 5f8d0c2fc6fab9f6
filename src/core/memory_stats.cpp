#include "rensa/core/memory_stats.h"

namespace rensa {

namespace detail {
std::atomic<int> g_memory_tracking{0};
}  // namespace detail

namespace {
thread_local uint64_t tls_allocated = 0;
std::atomic<uint64_t> g_live{0};
std::atomic<uint64_t> g_peak{0};
}  // namespace

uint64_t thread_allocated_bytes() { return tls_allocated; }

ArrayMemoryTracking::ArrayMemoryTracking() { detail::g_memory_tracking.fetch_add(1); }
ArrayMemoryTracking::~ArrayMemoryTracking() { detail::g_memory_tracking.fetch_sub(1); }
uint64_t ArrayMemoryTracking::live_bytes() { return g_live.load(); }
uint64_t ArrayMemoryTracking::peak_bytes() { return g_peak.load(); }
void ArrayMemoryTracking::reset_peak() { g_peak.store(g_live.load()); }

namespace detail {

bool track_allocated(uint64_t nbytes) noexcept {
  tls_allocated += nbytes;
  const uint64_t now = g_live.fetch_add(nbytes, std::memory_order_relaxed) + nbytes;
  uint64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return true;
}

void track_freed(uint64_t nbytes) noexcept { g_live.fetch_sub(nbytes, std::memory_order_relaxed); }

}  // namespace detail
}  // namespace rensa
