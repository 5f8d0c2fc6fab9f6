#pragma once
// Shared by the training-step benchmarks (mlp_train.cpp, cnn_step.cpp, lstm_lm.cpp): the common flags, synthetic
// batches, and the timed loop. Each step is optimizer.update(model({x, t})) on batches already in
// memory; the rate is samples per second, reported as min/median/max over the repeats.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "rensa/rensa.h"

namespace rensa_bench {

struct StepOptions {
  int64_t batchsize = 100;
  int64_t warmup = 20;
  double seconds = 5.0;
  int threads = 1;
  int repeats = 5;
  std::string dtype = "float32";
  /// Run the predictor through a rensa::StaticGraph (--static-graph).
  bool static_graph = false;
};

/// Adds --batchsize, --threads, --seconds, --repeats and --warmup to `app`.
inline void add_step_options(CLI::App& app, StepOptions& o) {
  app.add_option("-b,--batchsize", o.batchsize)->check(CLI::Range(1, 100000));
  app.add_option("-t,--threads", o.threads)->check(CLI::Range(1, 1024));
  app.add_option("--seconds", o.seconds, "Length of one timed repeat")->check(CLI::Range(0.01, 3600.0));
  app.add_option("--repeats", o.repeats)->check(CLI::Range(1, 1000));
  app.add_option("--warmup", o.warmup, "Untimed steps first")->check(CLI::Range(0, 100000));
  app.add_option("--dtype", o.dtype, "float32, or the mixed-precision policy mixed_bf16 or mixed16")
      ->check(CLI::IsMember({"float32", "mixed_bf16", "mixed16"}));
  app.add_flag("--static-graph", o.static_graph, "Replay the predictor's traced schedule (rensa::StaticGraph)");
}

/// A predictor whose forward goes through a StaticGraph (its parameters' paths gain "/inner").
struct StaticPredictor : rensa::Chain {
  explicit StaticPredictor(std::shared_ptr<rensa::Link> inner)
      : graph([this](const rensa::Variable& x) { return child("inner").forward(x); }) {
    add_link("inner", std::move(inner));
  }
  rensa::Variable forward(const rensa::Variable& x) override { return graph(x); }
  using rensa::Link::forward;
  rensa::StaticGraph graph;
};

/// `predictor`, or when --static-graph is given, `predictor` behind a StaticGraph.
inline std::shared_ptr<rensa::Link> predictor(std::shared_ptr<rensa::Link> inner, const StepOptions& o) {
  if (!o.static_graph) return inner;
  return std::make_shared<StaticPredictor>(std::move(inner));
}

/// Sets Config::dtype from --dtype (call before building the model) and prints the CPU, the
/// instruction sets the kernels use, and how 16-bit products run on it.
inline void apply_dtype(const StepOptions& o) {
  std::printf("cpu: %s\n", rensa::cpu_description().c_str());
  rensa::global_config().dtype = rensa::dtype_from_name(o.dtype);
  if (const auto compute = rensa::mixed_compute_dtype()) {
    std::printf("%s\n", rensa::half_compute_path(*compute).c_str());
  }
}

/// Runs `o.warmup` untimed calls of `train_step`, then `o.repeats` timed runs of `o.seconds` each,
/// and prints "rensa <label> [<dtype>] batch B threads T: samples/s min .. median .. max ..".
template <class Step>
void time_steps(const std::string& label, const StepOptions& o, Step&& train_step) {
  for (int64_t i = 0; i < o.warmup; ++i) train_step();
  std::vector<double> rates;
  for (int r = 0; r < o.repeats; ++r) {
    int64_t steps = 0;
    const auto start = std::chrono::steady_clock::now();
    double elapsed = 0;
    while (elapsed < o.seconds) {
      train_step();
      ++steps;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    rates.push_back(static_cast<double>(steps * o.batchsize) / elapsed);
  }
  std::sort(rates.begin(), rates.end());
  std::string name = o.dtype == "float32" ? label : label + " " + o.dtype;
  if (o.static_graph) name += " static";
  // Whole samples/s, or hundredths below 100 (a ResNet-50 step takes seconds).
  const int digits = rates[rates.size() / 2] < 100 ? 2 : 0;
  std::printf("rensa %s batch %lld threads %d: samples/s min %.*f median %.*f max %.*f\n", name.c_str(),
              static_cast<long long>(o.batchsize), o.threads, digits, rates.front(), digits,
              rates[rates.size() / 2], digits, rates.back());
}

/// Times training steps of `model` (a Classifier) with `optimizer` (already set up) on a few
/// distinct synthetic batches of inputs shaped (batchsize, sample_shape...) in [0, 1) and labels in
/// 0..9 (time_steps).
inline void run_steps(const std::string& label, rensa::Link& model, rensa::optimizers::Optimizer& optimizer,
                      const std::vector<int64_t>& sample_shape, const StepOptions& o) {
  constexpr int kBatches = 4;
  std::vector<rensa::Variable> xs, ts;
  rensa::Shape shape{o.batchsize};
  for (const int64_t d : sample_shape) shape.push_back(d);
  for (int i = 0; i < kBatches; ++i) {
    xs.emplace_back(rensa::random::uniform(shape, 0.0, 1.0, rensa::Dtype::float32));
    ts.emplace_back(rensa::random::uniform({o.batchsize}, 0.0, 10.0).astype(rensa::Dtype::int32));
  }
  int64_t step = 0;
  time_steps(label, o, [&] {
    const std::size_t i = static_cast<std::size_t>(step++ % kBatches);
    optimizer.update([&] { return model(std::vector<rensa::Variable>{xs[i], ts[i]}); });
  });
  for (const auto& [path, link] : model.namedlinks()) {
    if (auto* s = dynamic_cast<StaticPredictor*>(link)) {
      const rensa::StaticGraphStats st = s->graph.stats();
      std::printf("static graph: %lld traces, %lld replays, %zu forward and %zu backward kernel calls, %.1f MiB of buffers\n",
                  static_cast<long long>(st.traces), static_cast<long long>(st.replays), st.forward_steps,
                  st.backward_steps, static_cast<double>(st.buffer_bytes) / (1 << 20));
    }
  }
}

}  // namespace rensa_bench
