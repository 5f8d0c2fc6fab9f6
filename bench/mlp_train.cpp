// Training-step throughput of a multi-layer perceptron classifier with Adam: forward, softmax cross
// entropy and accuracy, backward, one optimizer update, on batches already in memory (what one
// iteration of train_mnist costs apart from batching). bench/mlp_train_torch.py runs the same step in
// PyTorch; bench/mlp_compare prints both and the ratio.
//   bench_mlp_train --hidden 1000,1000 --batchsize 100 --threads 1
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "rensa/rensa.h"
#include "rensa/training.h"

namespace F = rensa::functions;
namespace L = rensa::links;
using rensa::Array;
using rensa::Variable;

namespace {

struct Mlp : rensa::ChainList {
  explicit Mlp(const std::vector<int64_t>& hidden) {
    for (const int64_t units : hidden) layers.push_back(std::make_unique<L::Linear>(units));
    layers.push_back(std::make_unique<L::Linear>(10));
    for (auto& layer : layers) append(*layer);
  }
  Variable forward(const Variable& x) override {
    Variable h = x;
    for (std::size_t i = 0; i + 1 < layers.size(); ++i) h = F::relu((*layers[i])(h));
    return (*layers.back())(h);
  }
  using Link::forward;
  std::vector<std::unique_ptr<L::Linear>> layers;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Training-step throughput of an MLP with Adam"};
  std::vector<int64_t> hidden{1000, 1000};
  int64_t batchsize = 100, warmup = 20;
  double seconds = 5.0;
  int threads = 1, repeats = 5;
  app.add_option("--hidden", hidden, "Hidden layer sizes")->delimiter(',');
  app.add_option("-b,--batchsize", batchsize)->check(CLI::Range(1, 100000));
  app.add_option("-t,--threads", threads)->check(CLI::Range(1, 1024));
  app.add_option("--seconds", seconds, "Length of one timed repeat")->check(CLI::Range(0.01, 3600.0));
  app.add_option("--repeats", repeats)->check(CLI::Range(1, 1000));
  app.add_option("--warmup", warmup, "Untimed steps first")->check(CLI::Range(0, 100000));
  CLI11_PARSE(app, argc, argv);

  rensa::set_num_threads(threads);
  rensa::seed(0);
  L::Classifier model(std::make_shared<Mlp>(hidden));
  rensa::optimizers::Adam optimizer;
  optimizer.setup(model);

  // A few distinct batches, cycled: inputs like scaled pixels, labels in 0..9.
  constexpr int kBatches = 8;
  std::vector<Variable> xs, ts;
  for (int i = 0; i < kBatches; ++i) {
    xs.emplace_back(rensa::random::uniform({batchsize, 784}, 0.0, 1.0, rensa::Dtype::float32));
    ts.emplace_back(rensa::random::uniform({batchsize}, 0.0, 10.0).astype(rensa::Dtype::int32));
  }
  int64_t step = 0;
  auto train_step = [&] {
    const int i = static_cast<int>(step++ % kBatches);
    optimizer.update([&] { return model({xs[i], ts[i]}); });
  };

  for (int64_t i = 0; i < warmup; ++i) train_step();
  std::vector<double> rates;
  for (int r = 0; r < repeats; ++r) {
    int64_t steps = 0;
    const auto start = std::chrono::steady_clock::now();
    double elapsed = 0;
    while (elapsed < seconds) {
      train_step();
      ++steps;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    rates.push_back(static_cast<double>(steps * batchsize) / elapsed);
  }
  std::sort(rates.begin(), rates.end());
  std::string shape = "784";
  for (const int64_t units : hidden) shape += "-" + std::to_string(units);
  std::printf("rensa mlp %s-10 batch %lld threads %d: samples/s min %.0f median %.0f max %.0f\n", shape.c_str(),
              static_cast<long long>(batchsize), threads, rates.front(), rates[rates.size() / 2], rates.back());
  return 0;
}
