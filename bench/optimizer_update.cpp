// Optimizer step over the parameters of the MLP 784-1000-1000-10 (1.8M floats) at 1 and 2
// threads: the fused Adam kernel, MomentumSGD, and Adam written as separate array operations (what
// the fused kernel saves).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "rensa/links/link.h"
#include "rensa/optimizers/adam.h"
#include "rensa/optimizers/sgd.h"
#include "rensa/rensa.h"

namespace F = rensa::functions;
using rensa::Array;
using rensa::Variable;

namespace {

// The MLP's parameters, flat in one Link, each with a gradient.
struct Mlp {
  rensa::Link link;
  std::vector<Variable> params;
  Mlp() {
    const std::vector<rensa::Shape> shapes{{1000, 784}, {1000}, {1000, 1000}, {1000}, {10, 1000}, {10}};
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      Variable p = link.add_param("p" + std::to_string(i), rensa::random::normal(shapes[i], 0.0, 0.05));
      p.set_grad(Variable(rensa::random::normal(shapes[i], 0.0, 0.01)));
      params.push_back(p);
    }
  }
};

template <class Opt>
void run_optimizer(benchmark::State& state, Opt& opt) {
  rensa::set_num_threads(static_cast<int>(state.range(0)));
  Mlp mlp;
  opt.setup(mlp.link);
  opt.update();  // creates the state arrays
  for (auto _ : state) opt.update();
  state.counters["floats"] = static_cast<double>(mlp.link.count_params());
}

void BM_AdamFused(benchmark::State& state) {
  rensa::optimizers::Adam opt;
  run_optimizer(state, opt);
}

void BM_MomentumSgdFused(benchmark::State& state) {
  rensa::optimizers::MomentumSGD opt;
  run_optimizer(state, opt);
}

// The same Adam step from array operations: about ten passes over the buffer instead of one.
void BM_AdamUnfused(benchmark::State& state) {
  rensa::set_num_threads(static_cast<int>(state.range(0)));
  Mlp mlp;
  auto guard = rensa::no_backprop_mode();
  std::vector<Array> m, v;
  for (const auto& p : mlp.params) {
    m.push_back(Array::zeros(p.shape()));
    v.push_back(Array::zeros(p.shape()));
  }
  const double b1 = 0.9, b2 = 0.999, eps = 1e-8, alpha_t = 0.001;
  for (auto _ : state) {
    for (std::size_t i = 0; i < mlp.params.size(); ++i) {
      const Variable g = mlp.params[i].grad();
      m[i].assign(F::add(m[i], F::mul(F::sub(g, m[i]), 1 - b1)).array());
      v[i].assign(F::add(v[i], F::mul(F::sub(F::square(g), v[i]), 1 - b2)).array());
      const Variable step = F::div(F::mul(Variable(m[i]), alpha_t), F::add(F::sqrt(v[i]), eps));
      mlp.params[i].array().assign(F::sub(mlp.params[i], step).array());
    }
  }
}

// The minimum over repetitions is reported with the mean: on a shared 2-core machine the mean of
// the 2-thread runs mostly measures other processes.
void configure(benchmark::internal::Benchmark* b) {
  b->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime()->Unit(benchmark::kMillisecond)->Repetitions(5);
  b->ComputeStatistics("min", [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); });
}

BENCHMARK(BM_AdamFused)->Apply(configure);
BENCHMARK(BM_MomentumSgdFused)->Apply(configure);
BENCHMARK(BM_AdamUnfused)->Apply(configure);

}  // namespace

BENCHMARK_MAIN();
