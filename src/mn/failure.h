#pragma once
// Loud failure of a multi-node job: one line naming the rank, the host and the operation, then
// MPI_Abort of the whole job (never MPI_Finalize on an error path). Covers uncaught exceptions
// (std::terminate), fatal signals, and ranks that wait in one operation longer than their timeout
// (a watchdog thread).
#include <atomic>
#include <cstdint>
#include <string>

namespace rensa::mn::detail {

/// What one thread is waiting in, for the watchdog and the signal handlers. Written by its thread,
/// read by the watchdog thread and signal handlers (hence fixed-size, lock-free).
struct WaitSlot {
  static constexpr std::size_t kWhatSize = 256;
  std::atomic<int64_t> since_ns{0};    // steady-clock time the wait began; 0: not waiting
  std::atomic<int64_t> timeout_ns{0};  // 0: never times out
  std::atomic<uint32_t> version{0};    // odd while `what` is being written
  char what[kWhatSize] = {};
  // Set once by the owner before watch(): names the ranks this wait still misses, as far as this
  // rank can tell (empty when it cannot). Called by the watchdog thread before it aborts the job.
  std::string (*diagnose)(const WaitSlot& slot, const void* context) = nullptr;
  const void* context = nullptr;
  std::atomic<uint64_t> seq{0};  // the collective's sequence number on its channel; 0: point-to-point
  std::atomic<int> peer{-1};     // point-to-point: the other rank
  // Set once by the owner before watch(): where the watchdog writes steady_ns() on every pass, so
  // that the other ranks of the host can tell a stopped process (its heartbeat ages) from a slow one.
  std::atomic<int64_t>* heartbeat = nullptr;
};

/// Records this process's rank and host for failure lines (the first call wins) and installs the
/// terminate and fatal-signal handlers. Call after MPI is initialized.
void install_failure_handlers(int world_rank, const std::string& host);
/// "rank R on host H: " as recorded (or "rank ? on host H: " before install_failure_handlers).
std::string process_prefix();

/// Prints `line` (one line on stderr) and aborts the job through MPI_Abort(MPI_COMM_WORLD, 1).
[[noreturn]] void abort_job(const std::string& line);

/// Shows `slot` to the watchdog until unwatch (the slot must outlive that).
void watch(WaitSlot* slot);
void unwatch(WaitSlot* slot);
/// Marks `slot` as waiting in `what` now (timeout in ns, 0: none; `seq` and `peer` as in WaitSlot)
/// / as not waiting.
void slot_begin(WaitSlot& slot, const std::string& what, int64_t timeout_ns, uint64_t seq = 0, int peer = -1);
void slot_end(WaitSlot& slot);

/// Nanoseconds on the steady clock.
int64_t steady_ns();

}  // namespace rensa::mn::detail
