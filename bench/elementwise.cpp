// Elementwise kernels and reductions at 1 and 2 threads: the second thread must never make them
// slower (one OpenMP pool; small arrays stay on one thread).
#include <benchmark/benchmark.h>

#include "rensa/rensa.h"

namespace F = rensa::functions;
using rensa::Array;
using rensa::Variable;

namespace {

void set_threads(benchmark::State& state) { rensa::set_num_threads(static_cast<int>(state.range(1))); }

void BM_Add(benchmark::State& state) {
  set_threads(state);
  const int64_t n = state.range(0);
  Variable a(rensa::random::normal({n})), b(rensa::random::normal({n}));
  auto guard = rensa::no_backprop_mode();
  for (auto _ : state) benchmark::DoNotOptimize(F::add(a, b));
  state.SetBytesProcessed(state.iterations() * n * 12);
}

void BM_Exp(benchmark::State& state) {
  set_threads(state);
  const int64_t n = state.range(0);
  Variable a(rensa::random::normal({n}));
  auto guard = rensa::no_backprop_mode();
  for (auto _ : state) benchmark::DoNotOptimize(F::exp(a));
  state.SetBytesProcessed(state.iterations() * n * 8);
}

void BM_BroadcastAdd(benchmark::State& state) {  // bias add: (N, 1000) + (1000,)
  set_threads(state);
  const int64_t n = state.range(0) / 1000;
  Variable a(rensa::random::normal({n, 1000})), b(rensa::random::normal({1000}));
  auto guard = rensa::no_backprop_mode();
  for (auto _ : state) benchmark::DoNotOptimize(F::add(a, b));
  state.SetBytesProcessed(state.iterations() * n * 1000 * 8);
}

void BM_SumRows(benchmark::State& state) {  // bias gradient: sum over axis 0 of (N, 1000)
  set_threads(state);
  const int64_t n = state.range(0) / 1000;
  Variable a(rensa::random::normal({n, 1000}));
  auto guard = rensa::no_backprop_mode();
  for (auto _ : state) benchmark::DoNotOptimize(F::sum(a, {0}));
  state.SetBytesProcessed(state.iterations() * n * 1000 * 4);
}

void BM_SumLastAxis(benchmark::State& state) {  // softmax denominators: sum over axis 1
  set_threads(state);
  const int64_t n = state.range(0) / 1000;
  Variable a(rensa::random::normal({n, 1000}));
  auto guard = rensa::no_backprop_mode();
  for (auto _ : state) benchmark::DoNotOptimize(F::sum(a, {1}));
  state.SetBytesProcessed(state.iterations() * n * 1000 * 4);
}

void sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n : {1000, 100000, 1000000, 10000000}) {
    for (int64_t t : {1, 2}) b->Args({n, t});
  }
}

BENCHMARK(BM_Add)->Apply(sizes)->ArgNames({"n", "threads"})->UseRealTime();
BENCHMARK(BM_Exp)->Apply(sizes)->ArgNames({"n", "threads"})->UseRealTime();
BENCHMARK(BM_BroadcastAdd)->Apply(sizes)->ArgNames({"n", "threads"})->UseRealTime();
BENCHMARK(BM_SumRows)->Apply(sizes)->ArgNames({"n", "threads"})->UseRealTime();
BENCHMARK(BM_SumLastAxis)->Apply(sizes)->ArgNames({"n", "threads"})->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
