// Cost of one small function call including graph recording and its share of backward: a chain of
// kChain calls on tiny arrays, forward + backward, divided by kChain. Target: at most 1 us per call,
// and no measurable change from function hooks while none is installed.
#include <benchmark/benchmark.h>

#include <optional>

#include "rensa/core/timeline.h"
#include "rensa/rensa.h"

namespace F = rensa::functions;
using rensa::Array;
using rensa::Variable;

namespace {
constexpr int kChain = 100;

// x -> x * 1.0001 (one input, scalar op).
void BM_UnaryChain(benchmark::State& state) {
  Variable x(Array::ones({1}), true);
  for (auto _ : state) {
    Variable h = x;
    for (int i = 0; i < kChain; ++i) h = h * 1.0001;
    h.backward();
    x.cleargrad();
  }
  state.counters["ns_per_call"] =
      benchmark::Counter(static_cast<double>(kChain), benchmark::Counter::kIsIterationInvariantRate |
                                                          benchmark::Counter::kInvert);
}
BENCHMARK(BM_UnaryChain)->Unit(benchmark::kMicrosecond);

// h -> h + w (two inputs, both needing gradients).
void BM_BinaryChain(benchmark::State& state) {
  Variable x(Array::ones({1}), true), w(Array::ones({1}), true);
  for (auto _ : state) {
    Variable h = x;
    for (int i = 0; i < kChain; ++i) h = h + w;
    h.backward();
    x.cleargrad();
    w.cleargrad();
  }
  state.counters["ns_per_call"] =
      benchmark::Counter(static_cast<double>(kChain), benchmark::Counter::kIsIterationInvariantRate |
                                                          benchmark::Counter::kInvert);
}
BENCHMARK(BM_BinaryChain)->Unit(benchmark::kMicrosecond);

// Forward only, without recording (no_backprop_mode): the kernel-dispatch floor.
void BM_UnaryChainNoBackprop(benchmark::State& state) {
  Variable x(Array::ones({1}), true);
  auto guard = rensa::no_backprop_mode();
  for (auto _ : state) {
    Variable h = x;
    for (int i = 0; i < kChain; ++i) h = h * 1.0001;
    benchmark::DoNotOptimize(h);
  }
  state.counters["ns_per_call"] =
      benchmark::Counter(static_cast<double>(kChain), benchmark::Counter::kIsIterationInvariantRate |
                                                          benchmark::Counter::kInvert);
}
BENCHMARK(BM_UnaryChainNoBackprop)->Unit(benchmark::kMicrosecond);

// BM_UnaryChain with a function TimerHook installed: what profiling adds per call.
void BM_UnaryChainTimerHook(benchmark::State& state) {
  rensa::function_hooks::TimerHook timer;
  rensa::FunctionHookScope scope(timer);
  BM_UnaryChain(state);
}
BENCHMARK(BM_UnaryChainTimerHook)->Unit(benchmark::kMicrosecond);

// One timeline span (rensa/core/timeline.h), off and while recording: what a step's spans cost.
void BM_TimelineSpan(benchmark::State& state) {
  constexpr int64_t kKept = int64_t{1} << 16;
  std::optional<rensa::timeline::Recording> recording;
  int64_t n = 0;
  for (auto _ : state) {
    if (state.range(0) != 0 && n++ % kKept == 0) {  // a fresh recording before the cap: every span kept
      state.PauseTiming();
      recording.reset();
      recording.emplace(kKept);
      state.ResumeTiming();
    }
    rensa::timeline::Span span("forward", rensa::timeline::Category::forward);
    benchmark::DoNotOptimize(span);
  }
}
BENCHMARK(BM_TimelineSpan)->Arg(0)->Arg(1)->Unit(benchmark::kNanosecond);
}  // namespace

BENCHMARK_MAIN();
