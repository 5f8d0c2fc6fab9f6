#include "src/mn/failure.h"

#include <cxxabi.h>
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>
#include <typeinfo>

namespace rensa::mn::detail {
namespace {

// Process-wide failure state. Fixed-size and lock-free where signal handlers read it; never
// destroyed, so the watchdog thread and handlers stay valid during exit.
constexpr int kMaxSlots = 256;
constexpr std::size_t kPrefixSize = 512;

struct FailureState {
  std::once_flag installed;
  char prefix[kPrefixSize] = "rank ? on host ?: ";
  std::atomic<WaitSlot*> slots[kMaxSlots] = {};
  std::atomic<bool> aborting{false};
  std::once_flag watchdog_started;
  std::mutex scan_mutex;  // held by the watchdog while it reads slots, so unwatch can free them
};

FailureState& state() {
  static FailureState* s = new FailureState();  // leaked on purpose (see above)
  return *s;
}

// Copies `slot.what` consistently (retrying while its thread rewrites it) into `out`.
void read_what(const WaitSlot& slot, char* out, std::size_t n) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const uint32_t v0 = slot.version.load(std::memory_order_acquire);
    std::memcpy(out, slot.what, n);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (!(v0 & 1u) && slot.version.load(std::memory_order_relaxed) == v0) break;
  }
  out[n - 1] = '\0';
}

std::string format_seconds(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f s", static_cast<double>(ns) * 1e-9);
  return buf;
}

[[noreturn]] void watchdog_loop() {
  FailureState& st = state();
  constexpr int64_t kPassNs = 50'000'000;
  // A pass this much later than asked means this whole process was stopped (SIGSTOP, a debugger)
  // or not scheduled: its own waits did not stall for that long, so they move by the gap instead
  // of blaming the others when it runs again (Open MPI resumes a stopped rank to end it).
  constexpr int64_t kFrozenNs = 1'000'000'000;
  int64_t last = 0;
  for (;;) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(kPassNs));
    const int64_t now = steady_ns();
    const int64_t gap = last == 0 ? 0 : now - last - kPassNs;
    last = now;
    std::lock_guard<std::mutex> lock(st.scan_mutex);
    for (auto& entry : st.slots) {
      WaitSlot* slot = entry.load(std::memory_order_acquire);
      if (slot == nullptr) continue;
      if (slot->heartbeat != nullptr) slot->heartbeat->store(now, std::memory_order_release);
      if (gap > kFrozenNs) {
        int64_t began = slot->since_ns.load(std::memory_order_acquire);
        // Only the same wait moves: its thread may end it (0) or begin another meanwhile.
        if (began != 0) slot->since_ns.compare_exchange_strong(began, began + gap, std::memory_order_acq_rel);
        continue;
      }
      const int64_t since = slot->since_ns.load(std::memory_order_acquire);
      const int64_t timeout = slot->timeout_ns.load(std::memory_order_relaxed);
      if (since == 0 || timeout <= 0 || now - since <= timeout) continue;
      char what[WaitSlot::kWhatSize];
      read_what(*slot, what, sizeof(what));
      // The wait may have ended while we read: only a wait that is still the same one counts.
      if (slot->since_ns.load(std::memory_order_acquire) != since) continue;
      std::string who;
      if (slot->diagnose != nullptr) {
        try {
          who = slot->diagnose(*slot, slot->context);
        } catch (...) {
          who.clear();  // the plain message below still ends the job
        }
      }
      if (who.empty()) who = "another rank is stopped, cut off, failed, or not calling this operation";
      abort_job(process_prefix() + what + ": no progress for " + format_seconds(now - since) + " (timeout " +
                format_seconds(timeout) + "): " + who + "; aborting the job");
    }
  }
}

std::string demangle(const char* name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : std::string(name);
}

[[noreturn]] void on_terminate() {
  std::string what = "std::terminate called without an active exception";
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      what = std::string(x.what()) + " (uncaught " + demangle(typeid(x).name()) + ")";
    } catch (...) {
      what = "uncaught exception of unknown type";
    }
  }
  // Errors of collectives already start with the rank and host.
  const std::string prefix = process_prefix();
  abort_job(what.rfind(prefix, 0) == 0 ? what : prefix + what);
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV (segmentation fault)";
    case SIGBUS:
      return "SIGBUS (bus error)";
    case SIGFPE:
      return "SIGFPE (arithmetic exception)";
    case SIGILL:
      return "SIGILL (illegal instruction)";
    case SIGABRT:
      return "SIGABRT (abort)";
    default:
      return "fatal signal";
  }
}

// Appends C string `s` to buf (of capacity cap) at *len; async-signal-safe.
void append(char* buf, std::size_t cap, std::size_t* len, const char* s) {
  while (*s != '\0' && *len + 1 < cap) buf[(*len)++] = *s++;
  buf[*len] = '\0';
}

void on_fatal_signal(int sig) {
  FailureState& st = state();
  if (st.aborting.exchange(true)) {
    // Another thread is already aborting the job (or the abort itself faulted).
    _exit(1);
  }
  char line[1024];
  std::size_t len = 0;
  line[0] = '\0';
  append(line, sizeof(line), &len, st.prefix);
  append(line, sizeof(line), &len, "fatal signal ");
  append(line, sizeof(line), &len, signal_name(sig));
  bool during = false;
  for (auto& entry : st.slots) {
    WaitSlot* slot = entry.load(std::memory_order_acquire);
    if (slot == nullptr || slot->since_ns.load(std::memory_order_acquire) == 0) continue;
    char what[WaitSlot::kWhatSize];
    read_what(*slot, what, sizeof(what));
    append(line, sizeof(line), &len, during ? "; " : " during ");
    append(line, sizeof(line), &len, what);
    during = true;
  }
  if (!during) append(line, sizeof(line), &len, " outside communication");
  append(line, sizeof(line), &len, "; aborting the job\n");
  ssize_t ignored = ::write(STDERR_FILENO, line, len);
  (void)ignored;
  // If MPI_Abort cannot finish (the fault may be inside MPI), SIGALRM's default action ends the
  // process, which ends the job as well.
  signal(SIGALRM, SIG_DFL);
  alarm(10);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, 1);
  _exit(1);
}

void install_signal_handlers() {
  // An alternate stack for this thread, so a stack overflow can still report.
  static constexpr std::size_t kAltStack = 1 << 16;
  static auto* alt = new unsigned char[kAltStack];  // leaked: handlers may run during exit
  stack_t ss{};
  ss.ss_sp = alt;
  ss.ss_size = kAltStack;
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_handler = on_fatal_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_ONSTACK;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
}

}  // namespace

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void install_failure_handlers(int world_rank, const std::string& host) {
  FailureState& st = state();
  std::call_once(st.installed, [&] {
    std::snprintf(st.prefix, sizeof(st.prefix), "rank %d on host %s: ", world_rank, host.c_str());
    std::set_terminate(on_terminate);
    install_signal_handlers();
  });
}

std::string process_prefix() {
  return state().prefix;
}

[[noreturn]] void abort_job(const std::string& line) {
  FailureState& st = state();
  if (st.aborting.exchange(true)) {
    // Another thread is aborting; it ends this process too.
    for (;;) pause();
  }
  std::string out = line;
  if (out.empty() || out.back() != '\n') out += '\n';
  std::fflush(stdout);
  ssize_t ignored = ::write(STDERR_FILENO, out.data(), out.size());
  (void)ignored;
  signal(SIGALRM, SIG_DFL);
  alarm(10);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, 1);
  _exit(1);
}

void watch(WaitSlot* slot) {
  FailureState& st = state();
  std::call_once(st.watchdog_started, [] { std::thread(watchdog_loop).detach(); });
  for (auto& entry : st.slots) {
    WaitSlot* expected = nullptr;
    if (entry.compare_exchange_strong(expected, slot)) return;
  }
  // More live channels than slots: this one is simply not watched.
}

void unwatch(WaitSlot* slot) {
  FailureState& st = state();
  std::lock_guard<std::mutex> lock(st.scan_mutex);
  for (auto& entry : st.slots) {
    WaitSlot* expected = slot;
    if (entry.compare_exchange_strong(expected, nullptr)) return;
  }
}

void slot_begin(WaitSlot& slot, const std::string& what, int64_t timeout_ns, uint64_t seq, int peer) {
  slot.version.fetch_add(1, std::memory_order_acq_rel);
  const std::size_t n = std::min(what.size(), WaitSlot::kWhatSize - 1);
  std::memcpy(slot.what, what.data(), n);
  slot.what[n] = '\0';
  slot.version.fetch_add(1, std::memory_order_release);
  slot.timeout_ns.store(timeout_ns, std::memory_order_relaxed);
  slot.seq.store(seq, std::memory_order_relaxed);
  slot.peer.store(peer, std::memory_order_relaxed);
  slot.since_ns.store(steady_ns(), std::memory_order_release);
}

void slot_end(WaitSlot& slot) {
  slot.since_ns.store(0, std::memory_order_release);
}

}  // namespace rensa::mn::detail
