// Training-step throughput of ResNet-50 at 224x224: links::ResNet50Layers up to fc6 (1000 classes),
// softmax cross entropy and accuracy, backward, one MomentumSGD update, on batches already in memory.
// The stride of each stage's first block is on its 3x3 convolution (downsample_fb), as in
// torchvision's resnet50, which bench/resnet50_step_torch.py runs; bench/torch_compare resnet50
// prints both and the ratio. Also prints the process's peak resident memory.
//   bench_resnet50_step --batchsize 32 --threads 1
#include <sys/resource.h>

#include <memory>

#include "bench/train_step.h"

namespace L = rensa::links;
using rensa::Variable;

namespace {

struct ResNet50Logits : rensa::Chain {
  ResNet50Logits() { add_link("net", net); }
  Variable forward(const Variable& x) override { return net->forward(x, {"fc6"}).at("fc6"); }
  using Link::forward;
  std::shared_ptr<L::ResNet50Layers> net = std::make_shared<L::ResNet50Layers>("", /*downsample_fb=*/true);
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Training-step throughput of ResNet-50 with MomentumSGD"};
  rensa_bench::StepOptions options;
  options.batchsize = 32;
  options.warmup = 2;
  options.seconds = 20;
  options.repeats = 3;
  rensa_bench::add_step_options(app, options);
  CLI11_PARSE(app, argc, argv);

  rensa::set_num_threads(options.threads);
  rensa::seed(0);
  rensa_bench::apply_dtype(options);
  L::Classifier model(rensa_bench::predictor(std::make_shared<ResNet50Logits>(), options));
  rensa::optimizers::MomentumSGD optimizer(0.1, 0.9);
  optimizer.setup(model);
  rensa_bench::run_steps("resnet50", model, optimizer, {3, 224, 224}, options);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("rensa resnet50 peak resident memory: %.0f MiB\n", static_cast<double>(usage.ru_maxrss) / 1024.0);
  return 0;
}
