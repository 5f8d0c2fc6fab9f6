// Chainer's vae example: a variational autoencoder on Fashion-MNIST (or MNIST-format files), written
// with rensa::distributions. The encoder gives q(z|x), a diagonal Gaussian; the decoder p(x|z), a
// Bernoulli per pixel; the loss is the negative ELBO, -(E_q[log p(x|z)] - beta KL(q(z|x) || p(z))).
//   build/release/examples/train_vae --epoch 100
// Writes the log and snapshots to --out, and when training ends 3x3 grids of training and test
// images with their reconstructions and of images decoded from prior draws (train.png,
// train_reconstructed.png, test.png, test_reconstructed.png, sampled.png).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <memory>

#include "rensa/rensa.h"
#include "rensa/training.h"
#include "run_flags.h"

namespace F = rensa::functions;
namespace L = rensa::links;
namespace E = rensa::extensions;
namespace D = rensa::distributions;
using rensa::Array;
using rensa::Variable;

namespace {

struct Encoder : rensa::Chain {
  L::Linear linear, mu, ln_sigma;
  Encoder(int64_t n_in, int64_t n_latent, int64_t n_h) : linear(n_in, n_h), mu(n_h, n_latent), ln_sigma(n_h, n_latent) {
    add_link("linear", linear);
    add_link("mu", mu);
    add_link("ln_sigma", ln_sigma);
  }
  // q(z|x): one diagonal Gaussian per row of x.
  D::Independent encode(const Variable& x) {
    const Variable h = F::tanh(linear(x));
    return D::Independent(D::Normal::with_log_scale(mu(h), ln_sigma(h)));
  }
};

struct Decoder : rensa::Chain {
  L::Linear linear, output;
  bool binary_check;
  Decoder(int64_t n_in, int64_t n_latent, int64_t n_h, bool binary)
      : linear(n_latent, n_h), output(n_h, n_in), binary_check(binary) {
    add_link("linear", linear);
    add_link("output", output);
  }
  // p(x|z) for z of shape (..., n_latent): a Bernoulli per pixel, the pixels one event.
  D::Independent decode(const Variable& z) {
    const int64_t n_latent = z.shape().back();
    rensa::Shape out = z.shape();
    const Variable flat = F::reshape(z, {z.size() / n_latent, n_latent});
    const Variable logit = output(F::tanh(linear(flat)));
    out[out.size() - 1] = logit.shape().back();
    return D::Independent(D::Bernoulli::from_logit(F::reshape(logit, out), binary_check), 1);
  }
};

// The negative ELBO averaged over the batch, with its two terms reported as Chainer's AvgELBOLoss.
// Draws come from a generator whose position is a persistent value, so a resumed run draws on.
struct AvgELBOLoss : rensa::Chain {
  Encoder encoder;
  Decoder decoder;
  double beta;
  int64_t k;
  bool binary;
  rensa::Generator gen;
  AvgELBOLoss(int64_t n_latent, int64_t n_h, double beta_, int64_t k_, bool binary_, uint64_t seed)
      : encoder(784, n_latent, n_h),
        decoder(784, n_latent, n_h, binary_),
        beta(beta_),
        k(k_),
        binary(binary_),
        gen(~seed) {
    add_link("encoder", encoder);
    add_link("decoder", decoder);
    add_persistent("prior_loc", Array::zeros({n_latent}));
    add_persistent("prior_scale", Array::ones({n_latent}));
    add_persistent("rng_offset", Array::zeros({}, rensa::Dtype::int64));
  }
  D::Independent prior() { return D::Independent(D::Normal(persistent("prior_loc"), persistent("prior_scale")), 1); }
  static Array binarized(const Array& x) {
    std::vector<float> v = x.astype(rensa::Dtype::float32).to_vector<float>();
    for (float& p : v) p = p >= 0.5f ? 1.0f : 0.0f;
    return Array::from_vector(v, x.shape());
  }
  Variable forward(const std::vector<Variable>& inputs) override {
    const Variable x = binary ? Variable(binarized(inputs.at(0).array())) : inputs.at(0);
    const D::Independent q_z = encoder.encode(x);
    gen.set_offset(static_cast<uint64_t>(persistent("rng_offset").item<int64_t>()));
    const Variable z = q_z.sample_n(k, &gen);
    persistent("rng_offset").fill(static_cast<double>(gen.offset()));
    rensa::Shape kx{k};
    for (int64_t d : x.shape()) kx.push_back(d);
    const Variable reconstr = F::mean(decoder.decode(z).log_prob(F::broadcast_to(x, kx)));
    const Variable kl_penalty = F::mean(D::kl_divergence(q_z, prior()));
    Variable loss = -(reconstr - beta * kl_penalty);
    rensa::report("loss", loss, this);
    rensa::report("reconstr", reconstr, this);
    rensa::report("kl_penalty", kl_penalty, this);
    return loss;
  }
  using Link::forward;
};

// Nine 28x28 images in [0, 1] as a 3x3 grid, each pixel 3x3, written as a gray PNG.
void save3x3(const Array& images, const std::string& path) {
  constexpr int64_t kZoom = 3, kCell = 28 * kZoom, kGap = 4;
  const std::vector<float> v = images.astype(rensa::Dtype::float32).to_vector<float>();
  const int64_t side = 3 * kCell + 2 * kGap;
  Array canvas = Array::full({side, side}, 255.0);
  float* c = canvas.data<float>();
  for (int64_t i = 0; i < std::min<int64_t>(9, images.shape()[0]); ++i) {
    const int64_t top = (i / 3) * (kCell + kGap), left = (i % 3) * (kCell + kGap);
    for (int64_t y = 0; y < kCell; ++y) {
      for (int64_t x = 0; x < kCell; ++x) {
        c[(top + y) * side + left + x] = 255.0f * v[static_cast<size_t>(i * 784 + (y / kZoom) * 28 + x / kZoom)];
      }
    }
  }
  rensa::datasets::write_image(path, canvas);
}

Array rows(const rensa::datasets::DatasetPtr& data, const std::vector<int64_t>& indices) {
  std::vector<Array> xs;
  for (int64_t i : indices) xs.push_back(data->get_example(i % data->size()).at(0));
  return F::stack(std::vector<Variable>(xs.begin(), xs.end())).array();
}

void save_images(AvgELBOLoss& model, const rensa::datasets::DatasetPtr& train, const rensa::datasets::DatasetPtr& test,
                 const std::string& out) {
  auto guard = rensa::using_config("train", false);
  auto no_grad = rensa::no_backprop_mode();
  const auto reconstruct = [&](const Array& x) {
    const Variable in = model.binary ? Variable(AvgELBOLoss::binarized(x)) : Variable(x);
    return model.decoder.decode(model.encoder.encode(in).mean()).mean().array();
  };
  const Array x_train = rows(train, {1, 3, 5, 10, 2, 0, 13, 15, 17});
  save3x3(x_train, out + "/train.png");
  save3x3(reconstruct(x_train), out + "/train_reconstructed.png");
  const Array x_test = rows(test, {3, 2, 1, 18, 4, 8, 11, 17, 61});
  save3x3(x_test, out + "/test.png");
  save3x3(reconstruct(x_test), out + "/test_reconstructed.png");
  rensa::Generator gen(1);
  save3x3(model.decoder.decode(model.prior().sample_n(9, &gen)).mean().array(), out + "/sampled.png");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train a variational autoencoder on Fashion-MNIST (Chainer's vae example) with rensa"};
  app.option_defaults()->always_capture_default();
  int64_t epoch = 100, dim_z = 20, dim_h = 500, k = 1, batchsize = 100, limit = 0;
  double beta = 1.0;
  bool binary = false;
  uint64_t seed = 0;
  int threads = 1;
  std::string out = "result/train_vae", dataset_dir;
  app.add_option("-e,--epoch", epoch, "Number of sweeps over the training set")->check(CLI::Range(1, 100000));
  app.add_option("-z,--dim-z", dim_z, "Dimension of the encoded vector")->check(CLI::Range(1, 100000));
  app.add_option("--dim-h", dim_h, "Dimension of the hidden layer")->check(CLI::Range(1, 100000));
  app.add_option("--beta", beta, "Weight of the KL term of the ELBO")->check(CLI::Range(0.0, 1e6));
  app.add_option("-k,--k", k, "Monte Carlo draws of z per example")->check(CLI::Range(1, 10000));
  app.add_flag("--binary", binary, "Binarize the images (pixel >= 0.5) and check that x is 0 or 1");
  app.add_option("-b,--batch-size,--batchsize", batchsize, "Examples per minibatch")->check(CLI::Range(1, 60000));
  app.add_option("-o,--out", out, "Directory for the log, snapshots and images");
  run_flags::add_seed(app, seed, "Seed of initialization, shuffling and the draws of z");
  app.add_option("-t,--threads", threads, "Threads for the kernels")->check(CLI::Range(1, 1024));
  app.add_option("--dataset-dir", dataset_dir, "Directory of MNIST-format IDX files (default: Fashion-MNIST)");
  app.add_option("--limit", limit, "Use only the first N training and test examples (0: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{60000}));
  run_flags::Flags rf;
  run_flags::add_flags(app, rf);
  CLI11_PARSE(app, argc, argv);

  try {
    rensa::set_num_threads(threads);
    rensa::seed(seed);
    rensa::datasets::MnistOptions data_options;
    data_options.withlabel = false;
    auto [train, test] = dataset_dir.empty() ? rensa::datasets::get_fashion_mnist(data_options)
                                             : rensa::datasets::get_mnist(dataset_dir, data_options);
    if (limit > 0) {
      train = std::make_shared<rensa::datasets::SubDataset>(train, 0, std::min(limit, train->size()));
      test = std::make_shared<rensa::datasets::SubDataset>(test, 0, std::min(limit, test->size()));
    }
    std::cout << "train_vae: dim z " << dim_z << ", minibatch " << batchsize << ", " << epoch << " epochs" << std::endl;

    AvgELBOLoss model(dim_z, dim_h, beta, k, binary, seed);
    rensa::optimizers::Adam optimizer;
    optimizer.setup(model);
    rensa::iterators::SerialIterator train_iter(train, batchsize, {.seed = seed});
    rensa::iterators::SerialIterator test_iter(test, batchsize, {.repeat = false, .shuffle = false});
    rensa::training::StandardUpdater updater(train_iter, optimizer);
    rensa::training::Trainer trainer(updater, {epoch, "epoch"}, out);
    trainer.extend(E::Evaluator(test_iter, model));
    trainer.extend(E::LogReport());
    trainer.extend(E::PrintReport(
        {"epoch", "main/loss", "validation/main/loss", "main/reconstr", "main/kl_penalty", "elapsed_time"}));
    trainer.extend(E::ProgressBar());
    run_flags::Run run("train_vae", trainer, rf);
    if (!run.resume(static_cast<double>(epoch))) return 0;
    const int status = run.run();
    if (status == 0) save_images(model, train, test, out);
    return status;
  } catch (const rensa::Error& e) {
    std::cerr << "train_vae: " << e.what() << '\n';
    return 1;
  }
}
