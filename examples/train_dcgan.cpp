// ChainerMN's dcgan example in rensa: a deep convolutional GAN (Radford et al.; Chainer's
// examples/dcgan networks and updater) on CIFAR-10 (get_cifar10) or on a directory of images
// (--image-dir: every .jpg/.png under it, resized to 32 x 32), Adam (alpha 0.0002, beta1 0.5,
// weight decay 1e-4) for both networks, writing a 10 x 10 grid of generated images to
// OUT/preview/imageNNNNNNNN.png every --snapshot-interval iterations; data-parallel under mpirun
// with --communicator (both optimizers multi-node).
//   build/release/examples/make_image_dataset --out data/fmnist-images
//   build/release/examples/train_dcgan --image-dir data/fmnist-images/train --ch 128 --epoch 5
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "rensa/mn.h"
#include "rensa/rensa.h"
#include "rensa/training.h"
#include "run_flags.h"

namespace F = rensa::functions;
namespace L = rensa::links;
namespace D = rensa::datasets;
namespace E = rensa::extensions;
namespace I = rensa::initializers;
using rensa::Array;
using rensa::Variable;

namespace {

std::shared_ptr<I::Normal> w() { return std::make_shared<I::Normal>(0.02); }

struct Generator : rensa::Chain {
  int64_t n_hidden, ch, bottom = 4;
  L::Linear l0;
  L::Deconvolution2D dc1, dc2, dc3, dc4;
  L::BatchNormalization bn0, bn1, bn2, bn3;
  Generator(int64_t n_hidden_, int64_t ch_)
      : n_hidden(n_hidden_),
        ch(ch_),
        l0(n_hidden_, 4 * 4 * ch_, {.initialW = w()}),
        dc1(ch_, ch_ / 2, 4, {.stride = 2, .pad = 1, .initialW = w()}),
        dc2(ch_ / 2, ch_ / 4, 4, {.stride = 2, .pad = 1, .initialW = w()}),
        dc3(ch_ / 4, ch_ / 8, 4, {.stride = 2, .pad = 1, .initialW = w()}),
        dc4(ch_ / 8, 3, 3, {.stride = 1, .pad = 1, .initialW = w()}),
        bn0(4 * 4 * ch_),
        bn1(ch_ / 2),
        bn2(ch_ / 4),
        bn3(ch_ / 8) {
    for (auto [name, link] : std::initializer_list<std::pair<const char*, rensa::Link*>>{
             {"l0", &l0}, {"dc1", &dc1}, {"dc2", &dc2}, {"dc3", &dc3}, {"dc4", &dc4},
             {"bn0", &bn0}, {"bn1", &bn1}, {"bn2", &bn2}, {"bn3", &bn3}}) {
      add_link(name, *link);
    }
  }
  /// z ~ U(-1, 1), (batch, n_hidden, 1, 1), from `gen` (the default generator when null).
  Array make_hidden(int64_t batch, rensa::Generator* gen = nullptr) const {
    return rensa::random::uniform({batch, n_hidden, 1, 1}, -1.0, 1.0, rensa::Dtype::float32, rensa::Device::cpu(), gen);
  }
  Variable forward(const Variable& z) override {
    const int64_t n = z.shape()[0];
    Variable h = F::reshape(F::relu(bn0(l0(z))), {n, ch, bottom, bottom});
    h = F::relu(bn1(dc1(h)));
    h = F::relu(bn2(dc2(h)));
    h = F::relu(bn3(dc3(h)));
    return F::sigmoid(dc4(h));
  }
  using Link::forward;
};

/// Gaussian noise of stddev sigma in training (Chainer's dcgan add_noise).
Variable add_noise(const Variable& h, double sigma = 0.2) {
  if (!rensa::config().train) return h;
  return h + Variable(rensa::random::normal(h.shape(), 0.0, sigma, h.dtype()));
}

struct Discriminator : rensa::Chain {
  L::Convolution2D c0_0, c0_1, c1_0, c1_1, c2_0, c2_1, c3_0;
  L::Linear l4;
  L::BatchNormalization bn0_1, bn1_0, bn1_1, bn2_0, bn2_1, bn3_0;
  explicit Discriminator(int64_t ch)
      : c0_0(3, ch / 8, 3, {.stride = 1, .pad = 1, .initialW = w()}),
        c0_1(ch / 8, ch / 4, 4, {.stride = 2, .pad = 1, .initialW = w()}),
        c1_0(ch / 4, ch / 4, 3, {.stride = 1, .pad = 1, .initialW = w()}),
        c1_1(ch / 4, ch / 2, 4, {.stride = 2, .pad = 1, .initialW = w()}),
        c2_0(ch / 2, ch / 2, 3, {.stride = 1, .pad = 1, .initialW = w()}),
        c2_1(ch / 2, ch, 4, {.stride = 2, .pad = 1, .initialW = w()}),
        c3_0(ch, ch, 3, {.stride = 1, .pad = 1, .initialW = w()}),
        l4(4 * 4 * ch, 1, {.initialW = w()}),
        bn0_1(ch / 4, {.use_gamma = false}),
        bn1_0(ch / 4, {.use_gamma = false}),
        bn1_1(ch / 2, {.use_gamma = false}),
        bn2_0(ch / 2, {.use_gamma = false}),
        bn2_1(ch, {.use_gamma = false}),
        bn3_0(ch, {.use_gamma = false}) {
    for (auto [name, link] : std::initializer_list<std::pair<const char*, rensa::Link*>>{
             {"c0_0", &c0_0}, {"c0_1", &c0_1}, {"c1_0", &c1_0}, {"c1_1", &c1_1}, {"c2_0", &c2_0},
             {"c2_1", &c2_1}, {"c3_0", &c3_0}, {"l4", &l4}, {"bn0_1", &bn0_1}, {"bn1_0", &bn1_0},
             {"bn1_1", &bn1_1}, {"bn2_0", &bn2_0}, {"bn2_1", &bn2_1}, {"bn3_0", &bn3_0}}) {
      add_link(name, *link);
    }
  }
  Variable forward(const Variable& x) override {
    Variable h = add_noise(x);
    h = F::leaky_relu(add_noise(c0_0(h)));
    h = F::leaky_relu(add_noise(bn0_1(c0_1(h))));
    h = F::leaky_relu(add_noise(bn1_0(c1_0(h))));
    h = F::leaky_relu(add_noise(bn1_1(c1_1(h))));
    h = F::leaky_relu(add_noise(bn2_0(c2_0(h))));
    h = F::leaky_relu(add_noise(bn2_1(c2_1(h))));
    h = F::leaky_relu(add_noise(bn3_0(c3_0(h))));
    return l4(h);
  }
  using Link::forward;
};

/// Chainer's DCGANUpdater: the discriminator's loss softplus(-y_real) + softplus(y_fake), the
/// generator's softplus(-y_fake), both averaged over the batch; one step of each per iteration.
class DCGANUpdater : public rensa::training::StandardUpdater {
 public:
  DCGANUpdater(rensa::iterators::Iterator& it, rensa::optimizers::Optimizer& gen_opt,
               rensa::optimizers::Optimizer& dis_opt, Generator& gen, Discriminator& dis)
      : StandardUpdater({{"main", &it}}, {{"gen", &gen_opt}, {"dis", &dis_opt}}),
        gen_(gen),
        dis_(dis) {}

 protected:
  void update_core() override {
    rensa::iterators::Iterator& it = get_iterator("main");
    std::optional<std::vector<Array>> batch = it.next_arrays();
    RENSA_CHECK(batch.has_value(), rensa::ValueError, "DCGANUpdater: the iterator is exhausted");
    const Variable x_real = Variable(batch->at(0)) * (1.0 / 255.0);
    const int64_t n = x_real.shape()[0];
    const Variable y_real = dis_(x_real);
    const Variable x_fake = gen_(Variable(gen_.make_hidden(n)));
    const Variable y_fake = dis_(x_fake);
    const double inv = 1.0 / static_cast<double>(n);
    const Variable loss_dis = (F::sum(F::softplus(-y_real)) + F::sum(F::softplus(y_fake))) * inv;
    const Variable loss_gen = F::sum(F::softplus(-y_fake)) * inv;
    rensa::report({{"loss", loss_dis.array().item<double>()}}, &dis_);
    rensa::report({{"loss", loss_gen.array().item<double>()}}, &gen_);
    // The discriminator's step keeps the graph: the generator's loss backpropagates through y_fake
    // next (its gradients from the first backward are cleared first, as Chainer's update does).
    dis_.cleargrads();
    loss_dis.backward({.retain_graph = true});
    get_optimizer("dis").update();
    gen_.cleargrads();
    loss_gen.backward();
    get_optimizer("gen").update();
    if (it.is_new_epoch()) {
      get_optimizer("gen").new_epoch();
      get_optimizer("dis").new_epoch();
    }
  }

 private:
  Generator& gen_;
  Discriminator& dis_;
};

/// Writes a rows x cols grid of generated images (fixed z from `seed`) to OUT/preview.
void write_preview(Generator& gen, const std::string& out, int64_t iteration, uint64_t seed, int rows = 10,
                   int cols = 10) {
  auto test_mode = rensa::using_config("train", false);
  auto no_backprop = rensa::no_backprop_mode();
  rensa::Generator g(seed);
  // (rows*cols, 3, 32, 32); a convolution's output may be channels-last, and the loop reads NCHW.
  const Array x = gen(Variable(gen.make_hidden(rows * cols, &g))).array().contiguous();
  const int64_t h = x.shape()[2], wd = x.shape()[3];
  Array grid = Array::empty({3, rows * h, cols * wd}, rensa::Dtype::float32);
  const float* src = x.data<float>();
  float* dst = grid.data<float>();
  for (int64_t k = 0; k < rows * cols; ++k) {
    for (int64_t c = 0; c < 3; ++c) {
      for (int64_t i = 0; i < h; ++i) {
        for (int64_t j = 0; j < wd; ++j) {
          dst[(c * rows * h + (k / cols) * h + i) * cols * wd + (k % cols) * wd + j] =
              255.0f * src[((k * 3 + c) * h + i) * wd + j];
        }
      }
    }
  }
  std::filesystem::create_directories(out + "/preview");
  char name[64];
  std::snprintf(name, sizeof name, "/preview/image%08lld.png", static_cast<long long>(iteration));
  D::write_image(out + name, grid);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train a DCGAN on CIFAR-10 or a directory of images (ChainerMN's dcgan example)"};
  app.option_defaults()->always_capture_default();
  std::string image_dir, dataset_dir, out = "result/train_dcgan", communicator;
  int64_t batchsize = 50, epoch = 1000, n_hidden = 100, ch = 512, snapshot_interval = 1000, limit = 0;
  int threads = 1, loaderjob = 1;
  uint64_t seed = 0;
  app.add_option("-b,--batchsize", batchsize, "Minibatch size (per rank)")->check(CLI::Range(1, 100000));
  app.add_option("-e,--epoch", epoch, "Number of epochs")->check(CLI::Range(1, 100000));
  app.add_option("-i,--image-dir", image_dir, "Train on the .jpg/.png files under this directory (default: CIFAR-10)");
  app.add_option("--dataset-dir", dataset_dir, "Directory of CIFAR-10's binary files (default: under RENSA_DATASET_ROOT)");
  app.add_option("-n,--n-hidden", n_hidden, "Size of the latent z")->check(CLI::Range(1, 100000));
  app.add_option("--ch", ch, "Channels of the networks' widest layer (Chainer: 512)")
      ->check(CLI::Range(8, 4096) & CLI::Validator([](std::string& v) {
                return std::stoll(v) % 8 == 0 ? std::string() : std::string("must be a multiple of 8");
              }, "MULTIPLE OF 8"));
  app.add_option("--snapshot-interval", snapshot_interval, "Iterations between previews")->check(CLI::Range(1, 1 << 30));
  app.add_option("--limit", limit, "Use only the first N images (0: all)")->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app.add_option("-j,--loaderjob", loaderjob, "Loader threads (--image-dir)")->check(CLI::Range(1, 256));
  app.add_option("-t,--threads", threads, "Threads for the kernels")->check(CLI::Range(1, 1024));
  app.add_option("-o,--out", out, "Directory for the log, previews and snapshots");
  run_flags::add_seed(app, seed, "Seed of initialization, shuffling and the preview's z");
  run_flags::add_communicator(app, communicator);
  run_flags::Flags rf;
  run_flags::add_flags(app, rf);
  CLI11_PARSE(app, argc, argv);
  rensa::mn::Communicator comm;
  try {
    if (!communicator.empty()) {
      comm = rensa::mn::create_communicator(communicator, argc, argv);
    } else if (rensa::mn::refuse_several_processes("train_dcgan")) {
      return 2;
    }
    const bool multi = comm.valid();
    const int rank = multi ? comm.rank() : 0;
    rensa::set_num_threads(threads);
    rensa::seed(seed);
    D::DatasetPtr train;
    if (!image_dir.empty()) {
      // Every image file under the directory (its subdirectories as classes, which are ignored).
      if (rank == 0) {
        train = D::image_folder(image_dir, {.dtype = rensa::Dtype::uint8, .color = D::ImageColor::rgb}).dataset;
      }
    } else if (rank == 0 || !multi) {
      train = D::get_cifar10({.withlabel = false, .scale = 255.0, .dir = dataset_dir}).first;
    }
    if (train && limit > 0) train = std::make_shared<D::SubDataset>(train, 0, std::min(limit, train->size()));
    if (multi) train = rensa::mn::scatter_dataset(train, comm, {.shuffle = true, .seed = seed});
    if (!image_dir.empty()) {
      namespace T = rensa::datasets::transforms;
      // Images of any size become 3 x 32 x 32, values 0..255 as CIFAR's.
      train = std::make_shared<D::TransformDataset>(
          train, T::compose({T::Resize({.size = std::array<int64_t, 2>{32, 32}}), T::Scale(1.0)}));
    }
    Generator gen(n_hidden, ch);
    Discriminator dis(ch);
    auto make_opt = [&](rensa::Link& target) {
      std::unique_ptr<rensa::optimizers::Optimizer> opt = std::make_unique<rensa::optimizers::Adam>(0.0002, 0.5);
      if (multi) opt = rensa::mn::create_multi_node_optimizer(std::move(opt), comm);
      opt->setup(target);
      opt->add_hook(std::make_shared<rensa::optimizers::WeightDecay>(1e-4));
      return opt;
    };
    auto gen_opt = make_opt(gen);
    auto dis_opt = make_opt(dis);
    rensa::iterators::MultithreadIterator train_iter(
        train, batchsize, {.seed = seed + static_cast<uint64_t>(rank), .n_threads = loaderjob, .stack = true});
    DCGANUpdater updater(train_iter, *gen_opt, *dis_opt, gen, dis);
    rensa::training::Trainer trainer(updater, {epoch, "epoch"}, out);
    if (rank == 0) {
      const rensa::training::Trigger every(snapshot_interval, "iteration");
      trainer.extend(E::LogReport({}, {std::min<int64_t>(snapshot_interval, 100), "iteration"}));
      trainer.extend(E::PrintReport({"epoch", "iteration", "gen/loss", "dis/loss", "elapsed_time"}));
      trainer.extend(E::ProgressBar(std::nullopt, 10));
      trainer.extend([&gen, out, seed](rensa::training::Trainer& t) {
        write_preview(gen, out, t.updater().iteration(), seed);
      }, "preview", every);
    }
    run_flags::Run run("train_dcgan", trainer, rf, comm);
    if (!run.resume(static_cast<double>(epoch))) return 0;
    return run.run();
  } catch (const rensa::Error& e) {
    if (comm.valid() && comm.size() > 1) throw;
    rensa::mn::print_error_line("train_dcgan", e.what());
    return 1;
  }
}
