// Training-step throughput of the issue's `cnn` network on 28x28 single-channel images:
// conv(1->32, 3x3)-relu-conv(32->64, 3x3)-relu-maxpool2-fc(9216->128)-relu-fc(128->10), softmax cross
// entropy and accuracy, backward, one MomentumSGD update, on batches already in memory.
// bench/cnn_step_torch.py runs the same step in PyTorch; bench/cnn_compare prints both and the ratio.
//   bench_cnn_step --batchsize 64 --threads 1
#include <cmath>
#include <memory>

#include "bench/train_step.h"

namespace F = rensa::functions;
namespace L = rensa::links;
using rensa::Array;
using rensa::Variable;

namespace {

// A 3x3 convolution with bias (the Convolution2D link's job, written out here).
struct Conv3x3 : rensa::Link {
  Conv3x3(int64_t in, int64_t out) {
    const double scale = std::sqrt(1.0 / static_cast<double>(in * 9));  // LeCun normal
    add_param("W", rensa::random::normal({out, in, 3, 3}, 0.0, scale, rensa::Dtype::float32));
    add_param("b", Array::zeros({out}));
  }
  // mixed_cast: 16-bit compute under a mixed --dtype, as Convolution2D does.
  Variable forward(const Variable& x) override {
    return F::convolution_2d(L::mixed_cast(x), L::mixed_cast(param("W")), L::mixed_cast(param("b")));
  }
  using Link::forward;
};

struct Cnn : rensa::Chain {
  Cnn() {
    add_link("conv1", conv1);
    add_link("conv2", conv2);
    add_link("fc1", fc1);
    add_link("fc2", fc2);
  }
  Variable forward(const Variable& x) override {
    Variable h = F::relu(conv1(x));
    h = F::max_pooling_2d(F::relu(conv2(h)), 2);
    return fc2(F::relu(fc1(h)));
  }
  using Link::forward;
  Conv3x3 conv1{1, 32}, conv2{32, 64};
  L::Linear fc1{128}, fc2{10};
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Training-step throughput of the cnn network with MomentumSGD"};
  rensa_bench::StepOptions options;
  options.batchsize = 64;
  options.warmup = 5;
  rensa_bench::add_step_options(app, options);
  CLI11_PARSE(app, argc, argv);

  rensa::set_num_threads(options.threads);
  rensa::seed(0);
  rensa_bench::apply_dtype(options);
  L::Classifier model(rensa_bench::predictor(std::make_shared<Cnn>(), options));
  rensa::optimizers::MomentumSGD optimizer(0.01, 0.9);
  optimizer.setup(model);
  rensa_bench::run_steps("cnn", model, optimizer, {1, 28, 28}, options);
  return 0;
}
