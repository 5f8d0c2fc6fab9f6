// The program of docs/your_own_model.md: a model of your own (a Chain with a function of your own),
// a custom updater (gradient accumulation), a Trainer with extensions, and the same program
// data-parallel over MPI ranks.
//   build/release/examples/your_own_model --epoch 3
//   scripts/mpirun -n 2 build/release/examples/your_own_model --epoch 3 --communicator flat
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <string>

#include "rensa/mn.h"
#include "rensa/rensa.h"
#include "rensa/training.h"

namespace F = rensa::functions;
namespace L = rensa::links;
namespace E = rensa::extensions;
using rensa::Variable;

// A function of your own, composed of rensa's: differentiable (to any order) by construction.
Variable mish(const Variable& x) {
  return F::mul(x, F::tanh(F::softplus(x)));
}

// A model of your own: links registered by name (parameters /l1/W, /l1/b, ...), input sizes inferred
// at the first call.
struct MLP : rensa::Chain {
  L::Linear l1{256}, l2{256}, l3{10};
  MLP() {
    add_link("l1", l1);
    add_link("l2", l2);
    add_link("l3", l3);
  }
  Variable forward(const Variable& x) override { return l3(mish(l2(mish(l1(x))))); }
  using Link::forward;
};

// A custom step: the gradients of `steps` batches summed, then one update (a batch `steps` times as
// large in the memory of one).
class AccumulatingUpdater : public rensa::training::StandardUpdater {
 public:
  AccumulatingUpdater(rensa::iterators::Iterator& it, rensa::optimizers::Optimizer& opt, int steps)
      : StandardUpdater(it, opt), steps_(steps) {}

 protected:
  void update_core() override {
    rensa::iterators::Iterator& it = get_iterator("main");
    rensa::optimizers::Optimizer& opt = get_optimizer("main");
    opt.target()->cleargrads();
    for (int k = 0; k < steps_; ++k) {
      std::vector<Variable> inputs;
      const auto batch = it.next();  // repeating: it has no end
      if (!batch) throw rensa::ValueError("AccumulatingUpdater: the iterator ended");
      for (const rensa::Array& a : converter()(*batch, device())) inputs.emplace_back(a);
      F::mul(opt.target()->forward(inputs), 1.0 / steps_).backward();
    }
    opt.update();  // the summed gradients (averaged over ranks first by the multi-node optimizer)
    if (it.is_new_epoch()) opt.new_epoch();
  }

 private:
  int steps_;
};

int main(int argc, char** argv) {
  CLI::App app{"A model, a function and an updater of your own, trained on Fashion-MNIST"};
  app.option_defaults()->always_capture_default();
  int64_t epoch = 3, batchsize = 50, limit = 0;
  int accumulate = 2;
  std::string communicator, out = "result/your_own_model";
  app.add_option("-e,--epoch", epoch, "Number of sweeps over the training set")->check(CLI::Range(1, 1000));
  app.add_option("-b,--batchsize", batchsize, "Examples per batch")->check(CLI::Range(1, 60000));
  app.add_option("--accumulate", accumulate, "Batches summed per update")->check(CLI::Range(1, 1000));
  app.add_option("--limit", limit, "Use only the first N examples (0: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{60000}));
  app.add_option("--communicator", communicator, "Train data-parallel under mpirun with this communicator");
  app.add_option("-o,--out", out, "Directory for the log and snapshots");
  CLI11_PARSE(app, argc, argv);

  try {
    // Data-parallel: one communicator, each rank a shard of the data, the gradients averaged.
    rensa::mn::Communicator comm;
    if (!communicator.empty()) comm = rensa::mn::create_communicator(communicator, argc, argv);
    const bool multi = comm.valid();
    const bool rank0 = !multi || comm.rank() == 0;

    auto [train, test] = rensa::datasets::get_fashion_mnist();
    if (limit > 0) {
      train = std::make_shared<rensa::datasets::SubDataset>(train, 0, std::min(limit, train->size()));
      test = std::make_shared<rensa::datasets::SubDataset>(test, 0, std::min(limit, test->size()));
    }
    if (multi) {
      train = rensa::mn::scatter_dataset(train, comm, {.shuffle = true, .seed = 0});
      test = rensa::mn::scatter_dataset(test, comm, {.force_equal_length = false});
    }

    L::Classifier model(std::make_shared<MLP>());
    std::unique_ptr<rensa::optimizers::Optimizer> optimizer = std::make_unique<rensa::optimizers::MomentumSGD>(0.05);
    if (multi) {
      // overlap = false: the updater runs backward itself, outside update(loss_fn) where the
      // overlapped allreduce is hooked in, so the gradients are averaged once, at update().
      optimizer = rensa::mn::create_multi_node_optimizer(std::move(optimizer), comm, {.overlap = false});
    }
    optimizer->setup(model);

    rensa::iterators::SerialIterator train_iter(train, batchsize, {.seed = multi ? uint64_t(comm.rank()) : 0});
    rensa::iterators::SerialIterator test_iter(test, batchsize, {.repeat = false, .shuffle = false});
    AccumulatingUpdater updater(train_iter, *optimizer, accumulate);
    rensa::training::Trainer trainer(updater, {epoch, "epoch"}, out);

    if (multi) {
      trainer.extend(rensa::mn::create_multi_node_evaluator(E::Evaluator(test_iter, model), comm));
      auto snapshot = rensa::mn::multi_node_snapshot(comm, {.n_retains = 2});
      trainer.extend(snapshot);
      trainer.extend(rensa::mn::stop_on_signal(comm, snapshot));
    } else {
      trainer.extend(E::Evaluator(test_iter, model));
      auto snapshot = std::make_shared<E::Snapshot>(E::snapshot("snapshot_iter_{.updater.iteration}", {1, "epoch"}, 2));
      trainer.extend(snapshot);
      trainer.extend(E::stop_on_signal(snapshot));
    }
    if (rank0) {  // one rank prints and writes the shared files
      trainer.extend(E::LogReport());
      trainer.extend(
          E::PrintReport({"epoch", "main/loss", "validation/main/loss", "validation/main/accuracy", "elapsed_time"}));
      trainer.extend(E::ProgressBar());
    }
    trainer.run();
  } catch (const rensa::extensions::Interrupted& e) {
    std::cout << "your_own_model: " << e.what() << std::endl;
    return e.exit_code();
  }
  return 0;
}
