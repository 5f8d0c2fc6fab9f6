#pragma once
/// \file
/// Counters of array memory, for memory profiling (function_hooks::MemoryHook): the bytes of array
/// storage each thread allocated, and, while tracking is on, the live and peak bytes of the arrays
/// allocated since.

#include <atomic>
#include <cstdint>

namespace rensa {

/// Bytes of array storage the calling thread has allocated while tracking was on (all devices;
/// small arrays stored inline count their size).
uint64_t thread_allocated_bytes();

/// Turns on tracking of live array bytes while it lives (scopes nest; process-wide). Only arrays
/// allocated while some tracking scope lives are counted, so live_bytes() and peak_bytes() say
/// what the code run under it allocated and kept, not what existed before.
class [[nodiscard]] ArrayMemoryTracking {
 public:
  ArrayMemoryTracking();
  ~ArrayMemoryTracking();
  ArrayMemoryTracking(const ArrayMemoryTracking&) = delete;
  ArrayMemoryTracking& operator=(const ArrayMemoryTracking&) = delete;
  /// Bytes of tracked arrays alive now.
  static uint64_t live_bytes();
  /// The most bytes of tracked arrays alive at once since the last reset_peak().
  static uint64_t peak_bytes();
  /// Sets the peak to the bytes alive now.
  static void reset_peak();
};

namespace detail {
extern std::atomic<int> g_memory_tracking;
inline bool memory_tracking_on() { return g_memory_tracking.load(std::memory_order_relaxed) != 0; }
/// Called by Storage while tracking is on: counts an allocation (for the thread too) and returns
/// true (the array is tracked: its free must call track_freed).
bool track_allocated(uint64_t nbytes) noexcept;
void track_freed(uint64_t nbytes) noexcept;
}  // namespace detail

}  // namespace rensa
