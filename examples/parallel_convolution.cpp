// Channel-parallel convolutions (ChainerMN's parallel_convolution example): each rank holds a slice of
// the input and output channels of every wide convolution and the slices' outputs are joined with
// mn::functions::allgather, so a layer too wide for one process is spread over several. Every rank
// sees the same batches (rank 0 reads them; create_multi_node_iterator broadcasts them).
//   mpirun -n 2 build/release/examples/parallel_convolution --epoch 5
#include <vector>

#include "model_parallel_common.h"

namespace F = rensa::functions;
namespace L = rensa::links;
namespace E = rensa::extensions;
namespace MF = rensa::mn::functions;

// Rank r convolves input channels r, r + N, r + 2N, ... into its share of the output channels; the
// shares are gathered in rank order. As in ChainerMN, every rank's (identical) loss reaches each
// share through allgather's backward, so its gradient is N times one process's (Adam does not mind).
struct ParallelConvolution2D : rensa::Chain {
  rensa::mn::Communicator comm;
  rensa::Array channels;
  std::shared_ptr<L::Convolution2D> conv;
  ParallelConvolution2D(rensa::mn::Communicator c, int64_t in_channels, int64_t out_channels, int64_t ksize)
      : comm(std::move(c)) {
    std::vector<int64_t> mine;
    for (int64_t i = comm.rank(); i < in_channels; i += comm.size()) mine.push_back(i);
    channels = rensa::Array::from_vector(mine);
    conv = std::make_shared<L::Convolution2D>(static_cast<int64_t>(mine.size()), share(out_channels), ksize,
                                              L::Convolution2DOptions{.pad = ksize / 2});
    add_link("conv", conv);
  }
  int64_t share(int64_t n) const { return n / comm.size() + (comm.rank() < n % comm.size() ? 1 : 0); }
  rensa::Variable forward(const rensa::Variable& x) override {
    rensa::Variable y = (*conv)(F::get_item(x, channels, 1));
    return F::concat(MF::allgather(comm, y), 1);
  }
  using Link::forward;
};

struct CNN : rensa::Chain {
  L::Convolution2D conv1{1, 16, 3, {.pad = 1}};  // one input channel: not split
  std::shared_ptr<ParallelConvolution2D> conv2, conv3;
  L::Linear fc{10};
  explicit CNN(const rensa::mn::Communicator& comm, int64_t units)
      : conv2(std::make_shared<ParallelConvolution2D>(comm, 16, units, 3)),
        conv3(std::make_shared<ParallelConvolution2D>(comm, units, units, 3)) {
    add_link("conv1", conv1);
    add_link("conv2", conv2);
    add_link("conv3", conv3);
    add_link("fc", fc);
  }
  rensa::Variable forward(const rensa::Variable& x) override {
    rensa::Variable h = F::relu(conv1(F::reshape(x, {-1, 1, 28, 28})));
    h = F::max_pooling_2d(F::relu((*conv2)(h)), 2);
    h = F::max_pooling_2d(F::relu((*conv3)(h)), 2);
    return fc(h);
  }
  using Link::forward;
};

int main(int argc, char** argv) {
  CLI::App app{"Train a CNN with channel-parallel convolutions on Fashion-MNIST"};
  app.option_defaults()->always_capture_default();  // --help shows every default
  model_parallel::Flags f;
  f.unit = 64;
  model_parallel::add_flags(app, f, "parallel_convolution", "Channels of the split convolutions");
  CLI11_PARSE(app, argc, argv);

  auto comm = model_parallel::communicator(f, argc, argv);
  rensa::seed(0);  // the layers that are not split start alike on every rank, and stay alike

  std::unique_ptr<rensa::iterators::Iterator> train_iter, test_iter;
  if (comm.rank() == 0) {
    auto [train, test] = model_parallel::datasets(f);
    train_iter = std::make_unique<rensa::iterators::SerialIterator>(train, f.batchsize);
    test_iter = std::make_unique<rensa::iterators::SerialIterator>(
        test, f.batchsize, rensa::iterators::SerialIteratorOptions{.repeat = false, .shuffle = false});
  }
  train_iter = rensa::mn::create_multi_node_iterator(std::move(train_iter), comm);
  test_iter = rensa::mn::create_multi_node_iterator(std::move(test_iter), comm);

  L::Classifier model(std::make_shared<CNN>(comm, f.unit));
  rensa::optimizers::Adam optimizer;
  optimizer.setup(model);
  rensa::training::StandardUpdater updater(*train_iter, optimizer);
  rensa::training::Trainer trainer(updater, {f.epoch, "epoch"}, f.out);
  trainer.extend(E::Evaluator(*test_iter, model));
  if (comm.rank() == 0) model_parallel::extend_log(trainer);
  return model_parallel::run("parallel_convolution", trainer, f, comm);
}
