// Training-step throughput of a multi-layer perceptron classifier with Adam: forward, softmax cross
// entropy and accuracy, backward, one optimizer update, on batches already in memory (what one
// iteration of train_mnist costs apart from batching). bench/mlp_train_torch.py runs the same step in
// PyTorch; bench/mlp_compare prints both and the ratio.
//   bench_mlp_train --hidden 1000,1000 --batchsize 100 --threads 1
#include <memory>
#include <string>
#include <vector>

#include "bench/train_step.h"

namespace F = rensa::functions;
namespace L = rensa::links;
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
  rensa_bench::StepOptions options;
  app.add_option("--hidden", hidden, "Hidden layer sizes")->delimiter(',');
  rensa_bench::add_step_options(app, options);
  CLI11_PARSE(app, argc, argv);

  rensa::set_num_threads(options.threads);
  rensa::seed(0);
  rensa_bench::apply_dtype(options);
  L::Classifier model(rensa_bench::predictor(std::make_shared<Mlp>(hidden), options));
  rensa::optimizers::Adam optimizer;
  optimizer.setup(model);
  std::string shape = "mlp 784";
  for (const int64_t units : hidden) shape += "-" + std::to_string(units);
  rensa_bench::run_steps(shape + "-10", model, optimizer, {784}, options);
  return 0;
}
