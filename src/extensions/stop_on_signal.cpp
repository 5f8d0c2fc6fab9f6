#include "rensa/extensions/stop_on_signal.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <vector>

#include "rensa/core/threading.h"
#include "rensa/training/trainer.h"

namespace rensa::extensions {
namespace {

// What the handler saw. A signal handler can safely touch nothing but a sig_atomic_t, so this is
// the extension's one piece of process-wide state; `active` keeps two runs from sharing it.
volatile std::sig_atomic_t received_signal = 0;
std::atomic<bool> active{false};
// The signals that stop training: Ctrl-C, what schedulers send before killing a job, and what
// Open MPI's mpirun forwards to every rank (scripts/mpirun turns its own SIGINT and SIGTERM into it).
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGUSR1};
struct sigaction previous[3] = {};

extern "C" void on_stop_signal(int sig) {
  if (received_signal != 0) {  // the second one ends the process, as without a handler
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, nullptr);
    raise(sig);
    return;
  }
  received_signal = sig;
}

// The handler runs on a stack of its own in every thread that computes (this one and the OpenMP
// pool's): some of oneDNN's generated kernels keep data below the stack pointer, past the 128 bytes
// the ABI reserves there, and a signal frame pushed onto their stack overwrote it (measured: a
// SIGUSR1 in mid-step ended 3 of 6 runs of train_mnist in heap corruption inside dnnl_sgemm; none of
// 8 with the alternate stacks).
void use_alternate_stacks() {
  auto install = [] {
    thread_local std::vector<char> stack(std::size_t{1} << 16);
    stack_t ss{};
    ss.ss_sp = stack.data();
    ss.ss_size = stack.size();
    sigaltstack(&ss, nullptr);
  };
  install();
  parallel_for(get_num_threads(), 1, [&](int64_t, int64_t) { install(); });
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGUSR1:
      return "SIGUSR1 (a stop request forwarded by mpirun)";
    default:
      return "a signal";
  }
}

}  // namespace

StopOnSignal::StopOnSignal(std::function<std::string(training::Trainer&)> save, std::function<int(int)> any_rank)
    : save_(std::move(save)), any_rank_(std::move(any_rank)) {}

StopOnSignal::StopOnSignal(const StopOnSignal& other)
    : training::Extension(other), save_(other.save_), any_rank_(other.any_rank_) {}

StopOnSignal::~StopOnSignal() {
  restore_handlers();
}

void StopOnSignal::initialize(training::Trainer&) {
  RENSA_CHECK(!active.exchange(true), Error,
              "StopOnSignal: another StopOnSignal is already running in this process (one trainer at a time "
              "can own SIGINT and SIGTERM)");
  installed_ = true;
  received_signal = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  // SA_RESTART: system calls under way (file writes, MPI's polls) go on. SA_ONSTACK: see
  // use_alternate_stacks.
  action.sa_flags = SA_RESTART | SA_ONSTACK;
  use_alternate_stacks();
  for (int i = 0; i < 3; ++i) sigaction(kStopSignals[i], &action, &previous[i]);
}

void StopOnSignal::operator()(training::Trainer& trainer) {
  int sig = received_signal;
  if (any_rank_) sig = any_rank_(sig);
  if (sig == 0) return;
  const std::string path = save_ ? save_(trainer) : std::string();
  char where[160];
  std::snprintf(where, sizeof where, "interrupted by %s after iteration %lld (epoch %.2f)", signal_name(sig),
                static_cast<long long>(trainer.updater().iteration()), trainer.updater().epoch_detail());
  std::string message = where;
  message += path.empty() ? "; no snapshot saved" : "; snapshot saved: " + path;
  throw Interrupted(sig, message, path);
}

void StopOnSignal::finalize(training::Trainer&) {
  restore_handlers();
}

void StopOnSignal::restore_handlers() {
  if (!installed_) return;
  for (int i = 0; i < 3; ++i) sigaction(kStopSignals[i], &previous[i], nullptr);
  installed_ = false;
  active = false;
}

int StopOnSignal::received() {
  return received_signal;
}

}  // namespace rensa::extensions
