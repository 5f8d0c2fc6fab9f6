#pragma once
// What bench_scaling_model runs under mpirun: the measurements a profile holds, and timed training
// steps of a real configuration (to check the model's predictions against).
#include <algorithm>
#include <cstdint>
#include <string>

namespace rensa_bench::scaling {

struct Workload {
  std::string model = "mlp";  // mlp (train_mnist's), cnn or resnet (train_cnn's)
  int64_t batch = 0;          // per rank; 0: 100 (mlp) or 64
  int threads = 1;
  int steps = 20;   // timed steps per repeat
  int warmup = 5;   // untimed steps first
  int repeats = 3;  // the median repeat counts
};

/// Adds to the profile at `path` (rank 0 writes it): the compute entries at this job's process
/// count, the buckets, and, with several ranks on a host, the intra entries; with several hosts,
/// the inter entries under `link`. Every rank must call it.
void measure(const Workload& w, const std::string& path, const std::string& link);

/// Times training steps through `communicator` with gradients travelling as `wire` in `mode`
/// (overlap, no_overlap or double_buffering) and returns the seconds per step (every rank).
double time_steps(const Workload& w, const std::string& communicator, const std::string& wire, const std::string& mode);

/// Calls of a collective per timed repeat: as many as fill `seconds` at `one_call` seconds each, after
/// an idle `gap` each, and at least kMinCollectiveCalls. A step's time averages its collectives, so
/// each repeat averages calls too: one call per repeat (a slow link's large sizes) gives their median,
/// below their mean where a few calls take much longer (TCP through a shaped link).
inline constexpr int kMinCollectiveCalls = 5;
inline int calls_per_repeat(double one_call, double gap, double seconds) {
  return std::max(kMinCollectiveCalls, static_cast<int>(seconds / std::max(one_call + gap, 1e-7)));
}

/// Fills the default batch of the model; std::runtime_error for an unknown model.
Workload resolved(Workload w);

}  // namespace rensa_bench::scaling
