// Chainer's pix2pix example (Isola et al.): a U-Net-like Encoder/Decoder generator turns the label
// maps of the CMP Facade Database into photos against a patch Discriminator that sees both (softplus
// adversarial losses plus 100 x the L1 distance to the real photo; Adam alpha 0.0002, beta1 0.5,
// weight decay 1e-5 for each of the three networks).
//   build/release/examples/train_pix2pix --dataset facade/base --epoch 200
// --dataset is the "base" set of http://cmp.felk.cvut.cz/~tylecr1/facade/ (CMP_facade_DB_base.zip
// unpacked: cmp_b0001.jpg, the photo, and cmp_b0001.png, its labels as a palette PNG whose indices
// 1..12 are the classes; nothing is downloaded). Pairs 1..299 train, 300..378 test. Writes the log,
// snapshots and, every --snapshot-interval iterations, OUT/preview/image_{in,gen,gt}_NNNNNNNN.png
// (label maps, generated and real photos of the test set). --crop and --ch (not in Chainer's) make
// small runs possible: --crop 128 --ch 8 --batchsize 2 trains in seconds.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "rensa/rensa.h"
#include "rensa/training.h"
#include "run_flags.h"

namespace F = rensa::functions;
namespace L = rensa::links;
namespace D = rensa::datasets;
namespace T = rensa::datasets::transforms;
namespace E = rensa::extensions;
using rensa::Array;
using rensa::Variable;

namespace {

constexpr int64_t kClasses = 12;
constexpr double kLam1 = 100.0, kLam2 = 1.0;

const auto w = [] { return std::make_shared<rensa::initializers::Normal>(0.02); };

// Convolution (down: 4x4 stride 2) or deconvolution (up), then batch normalization, dropout, activation.
struct ConvBNR : rensa::Chain {
  enum Act { none, relu, leaky };
  std::shared_ptr<rensa::Link> c;
  std::shared_ptr<L::BatchNormalization> bn;
  bool dropout;
  Act act;
  ConvBNR(int64_t ch0, int64_t ch1, bool use_bn, bool down, Act act_, bool dropout_) : dropout(dropout_), act(act_) {
    const L::Convolution2DOptions o{.stride = 2, .pad = 1, .initialW = w()};
    c = down ? std::shared_ptr<rensa::Link>(std::make_shared<L::Convolution2D>(ch0, ch1, 4, o))
             : std::make_shared<L::Deconvolution2D>(ch0, ch1, 4, o);
    add_link("c", c);
    if (use_bn) add_link("bn", bn = std::make_shared<L::BatchNormalization>(ch1));
  }
  Variable forward(const Variable& x) override {
    Variable h = (*c)(x);
    if (bn) h = (*bn)(h);
    if (dropout) h = F::dropout(h);
    return act == relu ? F::relu(h) : act == leaky ? F::leaky_relu(h) : h;
  }
  using Link::forward;
};

// Channels of the encoder's outputs c0..c7 for base width ch (Chainer: 64, 128, 256, 512 x 5).
int64_t enc_ch(int64_t ch, int i) {
  return ch << std::min(i, 3);
}

struct Encoder : rensa::Chain {
  L::Convolution2D c0;
  std::vector<std::shared_ptr<ConvBNR>> cs;  // c1..c7
  Encoder(int64_t in_ch, int64_t ch) : c0(in_ch, ch, 3, {.stride = 1, .pad = 1, .initialW = w()}) {
    add_link("c0", c0);
    for (int i = 1; i < 8; ++i) {
      cs.push_back(std::make_shared<ConvBNR>(enc_ch(ch, i - 1), enc_ch(ch, i), true, true, ConvBNR::leaky, false));
      add_link("c" + std::to_string(i), cs.back());
    }
  }
  std::vector<Variable> encode(const Variable& x) {
    std::vector<Variable> hs{F::leaky_relu(c0(x))};
    for (auto& c : cs) hs.push_back((*c)(hs.back()));
    return hs;
  }
};

struct Decoder : rensa::Chain {
  std::vector<std::shared_ptr<ConvBNR>> cs;  // c0..c6
  L::Convolution2D c7;
  Decoder(int64_t out_ch, int64_t ch) : c7(2 * ch, out_ch, 3, {.stride = 1, .pad = 1, .initialW = w()}) {
    for (int i = 0; i < 7; ++i) {
      const int64_t in = i == 0 ? enc_ch(ch, 7) : 2 * enc_ch(ch, 7 - i);
      cs.push_back(std::make_shared<ConvBNR>(in, enc_ch(ch, 6 - i), true, false, ConvBNR::relu, i < 3));
      add_link("c" + std::to_string(i), cs.back());
    }
    add_link("c7", c7);
  }
  // The skip connections: each layer after the first also sees the encoder's output of its size.
  Variable decode(const std::vector<Variable>& hs) {
    Variable h = (*cs[0])(hs[7]);
    for (int i = 1; i < 8; ++i) {
      h = F::concat({h, hs[static_cast<size_t>(7 - i)]});
      h = i < 7 ? (*cs[static_cast<size_t>(i)])(h) : c7(h);
    }
    return h;
  }
};

struct Discriminator : rensa::Chain {
  ConvBNR c0_0, c0_1, c1, c2, c3;
  L::Convolution2D c4;
  Discriminator(int64_t in_ch, int64_t out_ch, int64_t ch)
      : c0_0(in_ch, ch / 2, false, true, ConvBNR::leaky, false),
        c0_1(out_ch, ch / 2, false, true, ConvBNR::leaky, false),
        c1(ch, 2 * ch, true, true, ConvBNR::leaky, false),
        c2(2 * ch, 4 * ch, true, true, ConvBNR::leaky, false),
        c3(4 * ch, 8 * ch, true, true, ConvBNR::leaky, false),
        c4(8 * ch, 1, 3, {.stride = 1, .pad = 1, .initialW = w()}) {
    for (auto [name, link] : std::initializer_list<std::pair<const char*, rensa::Link*>>{
             {"c0_0", &c0_0}, {"c0_1", &c0_1}, {"c1", &c1}, {"c2", &c2}, {"c3", &c3}, {"c4", &c4}}) {
      add_link(name, *link);
    }
  }
  Variable discriminate(const Variable& x_0, const Variable& x_1) {
    return c4(c3(c2(c1(F::concat({c0_0(x_0), c0_1(x_1)})))));
  }
};

// Pairs [first, last) of the dataset: (labels - 1 as uint8 (1, H, W), photo uint8 (3, H, W)), the
// shorter side resized to `side` (bilinear for the photo, nearest for the labels), as Chainer's
// FacadeDataset.
class FacadeDataset final : public D::Dataset {
 public:
  FacadeDataset(const std::string& dir, const std::vector<int64_t>& range, int64_t side) {
    for (int64_t i = range[0]; i < range[1]; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "/cmp_b%04lld", static_cast<long long>(i));
      const std::string jpg = dir + name + ".jpg", png = dir + name + ".png";
      for (const std::string& f : {jpg, png}) {
        if (!std::filesystem::exists(f)) {
          throw rensa::IOError(f +
                               " not found: --dataset must be the CMP Facade Database's \"base\" directory "
                               "(CMP_facade_DB_base.zip from http://cmp.felk.cvut.cz/~tylecr1/facade/ unpacked)");
        }
      }
      const Array img = D::read_image(jpg, {.dtype = rensa::Dtype::uint8, .color = D::ImageColor::rgb});
      Array label = D::read_image(png, {.dtype = rensa::Dtype::uint8, .color = D::ImageColor::palette});
      const int64_t h = img.shape()[1], wd = img.shape()[2];
      RENSA_CHECK(label.shape()[1] == h && label.shape()[2] == wd, rensa::ValueError, png, ": ", label.shape()[2],
                  " x ", label.shape()[1], " pixels, but ", jpg, " has ", wd, " x ", h);
      for (uint8_t& v : std::span(label.data<uint8_t>(), static_cast<size_t>(label.size()))) {
        if (v < 1 || v > kClasses) {
          throw rensa::ValueError(png + ": palette index " + std::to_string(v) + " is not a class (1..12)");
        }
        --v;
      }
      const double r = static_cast<double>(side) / static_cast<double>(std::min(h, wd));
      const auto nh = static_cast<int64_t>(r * static_cast<double>(h)),
                 nw = static_cast<int64_t>(r * static_cast<double>(wd));
      examples_.push_back({T::resize_window(label, 0, 0, h, wd, nh, nw, T::Interpolation::nearest),
                           T::resize_window(img, 0, 0, h, wd, nh, nw, T::Interpolation::bilinear)});
    }
    std::cout << "train_pix2pix: " << examples_.size() << " pairs [" << range[0] << ", " << range[1] << ") from " << dir
              << std::endl;
  }
  int64_t size() const override { return static_cast<int64_t>(examples_.size()); }
  D::Example get_example(int64_t i) const override { return examples_.at(static_cast<size_t>(i)); }

 private:
  std::vector<D::Example> examples_;
};

// The same random crop x crop window of both (Chainer's get_example): labels as 12 one-hot float
// channels, the photo scaled to [-1, 1). The window comes from (seed, epoch, index), so a resumed
// run draws the same.
D::DatasetPtr cropped(D::DatasetPtr base, int64_t crop, uint64_t seed) {
  const T::RandomStream stream(seed, 7);
  return std::make_shared<D::TransformDataset>(std::move(base), [crop, stream](D::Example ex) {
    const int64_t h = ex[1].shape()[1], wd = ex[1].shape()[2];
    const auto r = stream.next();
    const auto top = static_cast<int64_t>(r[0] % static_cast<uint64_t>(std::max<int64_t>(1, h - crop)));
    const auto left = static_cast<int64_t>(r[1] % static_cast<uint64_t>(std::max<int64_t>(1, wd - crop)));
    const Array label = T::crop_and_flip(ex[0], 0, top, left, crop, crop);
    const Array photo = T::crop_and_flip(ex[1], 0, top, left, crop, crop);
    Array x = Array::zeros({kClasses, crop, crop}), t = Array::empty({3, crop, crop});
    const uint8_t* l = label.data<uint8_t>();
    for (int64_t k = 0; k < crop * crop; ++k) x.data<float>()[l[k] * crop * crop + k] = 1.0f;
    for (int64_t k = 0; k < 3 * crop * crop; ++k) t.data<float>()[k] = photo.data<uint8_t>()[k] / 128.0f - 1.0f;
    return D::Example{x, t};
  });
}

// Chainer's FacadeUpdater: the generator (encoder and decoder) minimizes lam1 * L1(x_out, t_out) +
// lam2 * softplus(-y_fake), the discriminator softplus(-y_real) + softplus(y_fake), each summed
// over the discriminator's patches and divided by batch x patch rows x patch columns.
class FacadeUpdater : public rensa::training::StandardUpdater {
 public:
  FacadeUpdater(rensa::iterators::Iterator& it, std::map<std::string, rensa::optimizers::Optimizer*> opts, Encoder& enc,
                Decoder& dec, Discriminator& dis)
      : StandardUpdater({{"main", &it}}, std::move(opts)), enc_(enc), dec_(dec), dis_(dis) {}

 protected:
  void update_core() override {
    rensa::iterators::Iterator& it = get_iterator("main");
    std::optional<std::vector<Array>> batch = it.next_arrays();
    RENSA_CHECK(batch.has_value(), rensa::ValueError, "FacadeUpdater: the iterator is exhausted");
    const Variable x_in(batch->at(0)), t_out(batch->at(1));
    const Variable x_out = dec_.decode(enc_.encode(x_in));
    const Variable y_fake = dis_.discriminate(x_in, x_out), y_real = dis_.discriminate(x_in, t_out);
    const double patches = static_cast<double>(y_fake.shape()[0] * y_fake.shape()[2] * y_fake.shape()[3]);
    const Variable loss_rec = F::mean_absolute_error(x_out, t_out) * kLam1;
    const Variable loss_adv = F::sum(F::softplus(-y_fake)) * (kLam2 / patches);
    const Variable loss_gen = loss_rec + loss_adv;
    const Variable loss_dis = (F::sum(F::softplus(-y_real)) + F::sum(F::softplus(y_fake))) * (1.0 / patches);
    const double gen = loss_gen.array().item<double>();
    rensa::report({{"loss", gen}}, &enc_);
    rensa::report(
        {{"loss", gen}, {"loss_rec", loss_rec.array().item<double>()}, {"loss_adv", loss_adv.array().item<double>()}},
        &dec_);
    rensa::report({{"loss", loss_dis.array().item<double>()}}, &dis_);
    // Encoder and decoder share one loss (Chainer computes the same gradients in two updates); the
    // discriminator's step then backpropagates no further than x_out.
    enc_.cleargrads();
    dec_.cleargrads();
    loss_gen.backward({.retain_graph = true});
    get_optimizer("enc").update();
    get_optimizer("dec").update();
    x_out.unchain_backward();
    dis_.cleargrads();
    loss_dis.backward();
    get_optimizer("dis").update();
    if (it.is_new_epoch()) {
      for (const char* n : {"enc", "dec", "dis"}) get_optimizer(n).new_epoch();
    }
  }

 private:
  Encoder& enc_;
  Decoder& dec_;
  Discriminator& dis_;
};

// Chainer's out_image: grids (5 wide) of the first 25 test pairs' label maps (hue 15 x class),
// generated photos and real photos, in test mode.
void write_preview(Encoder& enc, Decoder& dec, const D::Dataset& test, const std::string& out, int64_t iteration) {
  auto test_mode = rensa::using_config("train", false);
  auto no_backprop = rensa::no_backprop_mode();
  const int64_t n = std::min<int64_t>(25, test.size()), cols = 5, rows = (n + cols - 1) / cols;
  std::vector<D::Example> batch;
  for (int64_t i = 0; i < n; ++i) batch.push_back(test.get_example(i));
  const std::vector<Array> xs = D::concat_examples(batch);
  const Array gen = dec.decode(enc.encode(Variable(xs[0]))).array().contiguous();
  const int64_t s = xs[0].shape()[2];
  std::filesystem::create_directories(out + "/preview");
  auto save = [&](const char* what, auto pixel) {  // pixel(k, channel, offset in the image) in 0..255
    Array grid = Array::zeros({3, rows * s, cols * s}, rensa::Dtype::uint8);
    for (int64_t k = 0; k < n; ++k) {
      for (int64_t c = 0; c < 3; ++c) {
        for (int64_t p = 0; p < s * s; ++p) {
          grid.data<uint8_t>()[(c * rows * s + (k / cols) * s + p / s) * cols * s + (k % cols) * s + p % s] =
              static_cast<uint8_t>(std::clamp(pixel(k, c, p), 0.0, 255.0));
        }
      }
    }
    char name[64];
    std::snprintf(name, sizeof name, "/preview/image_%s_%08lld.png", what, static_cast<long long>(iteration));
    D::write_image(out + name, grid);
  };
  const auto photo = [s](const float* v) {  // [-1, 1) to 0..255
    return
        [v, s](int64_t k, int64_t c, int64_t p) { return static_cast<double>(v[(k * 3 + c) * s * s + p]) * 128 + 128; };
  };
  save("gen", photo(gen.data<float>()));
  save("gt", photo(xs[1].data<float>()));
  const float* x = xs[0].data<float>();
  save("in", [&](int64_t k, int64_t c, int64_t p) {  // HSV (15 x class, 255, 255) as RGB, as PIL converts it
    double hue = 0;
    for (int64_t j = 0; j < kClasses; ++j) hue += 15.0 * j * x[(k * kClasses + j) * s * s + p];
    const double h6 = hue / 255.0 * 6.0, f = h6 - std::floor(h6);
    const double rgb[6][3] = {{1, f, 0}, {1 - f, 1, 0}, {0, 1, f}, {0, 1 - f, 1}, {f, 0, 1}, {1, 0, 1 - f}};
    return 255.0 * rgb[static_cast<int>(h6) % 6][c];
  });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train pix2pix on the CMP Facade Database (Chainer's pix2pix example) with rensa"};
  app.option_defaults()->always_capture_default();
  std::string dataset = "./facade/base", out = "result/train_pix2pix";
  int64_t batchsize = 1, epoch = 200, snapshot_interval = 1000, display_interval = 100, crop = 256, ch = 64;
  std::vector<int64_t> train_range{1, 300}, test_range{300, 379};
  uint64_t seed = 0;
  int threads = 1;
  app.add_option("-b,--batchsize", batchsize, "Number of images in each mini-batch")->check(CLI::Range(1, 100000));
  app.add_option("-e,--epoch", epoch, "Number of sweeps over the dataset to train")->check(CLI::Range(1, 100000));
  app.add_option("-i,--dataset", dataset,
                 "Directory of cmp_bNNNN.jpg and cmp_bNNNN.png (the CMP Facade Database's base set, "
                 "http://cmp.felk.cvut.cz/~tylecr1/facade/)");
  app.add_option("-o,--out", out, "Directory for the log, snapshots and previews");
  app.add_option("--snapshot-interval", snapshot_interval, "Iterations between previews (snapshots: every epoch)")
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("--display-interval", display_interval, "Iterations between log entries and evaluations")
      ->check(CLI::Range(1, 1 << 30));
  const auto multiple_of = [](int64_t m) {
    return CLI::Validator(
        [m](std::string& v) { return std::stoll(v) % m == 0 ? "" : "must be a multiple of " + std::to_string(m); },
        "MULTIPLE OF " + std::to_string(m));
  };
  app.add_option("--crop", crop, "Side of the random crop (images are first resized to crop x 286 / 256)")
      ->check(CLI::Range(128, 4096) & multiple_of(128));
  app.add_option("--ch", ch, "Channels of the encoder's first layer (Chainer: 64)")
      ->check(CLI::Range(2, 4096) & multiple_of(2));
  app.add_option("--train-range", train_range, "Pairs [FIRST, LAST) to train on")->expected(2);
  app.add_option("--test-range", test_range, "Pairs [FIRST, LAST) to test on")->expected(2);
  app.add_option("-t,--threads", threads, "Threads for the kernels")->check(CLI::Range(1, 1024));
  run_flags::add_seed(app, seed, "Seed of initialization, shuffling, crops and dropout");
  run_flags::Flags rf;
  run_flags::add_flags(app, rf);
  app.callback([&] {
    for (const auto& [flag, r] : {std::pair{"--train-range", train_range}, std::pair{"--test-range", test_range}}) {
      if (r[0] < 1 || r[1] <= r[0] || r[1] > 10000) {
        throw CLI::ValidationError(flag, "must be FIRST LAST with 1 <= FIRST < LAST <= 10000");
      }
    }
  });
  CLI11_PARSE(app, argc, argv);

  try {
    rensa::set_num_threads(threads);
    rensa::seed(seed);
    const int64_t side = (crop * 286 + 128) / 256;  // 286 for Chainer's 256
    const auto train = cropped(std::make_shared<FacadeDataset>(dataset, train_range, side), crop, seed);
    const auto test = cropped(std::make_shared<FacadeDataset>(dataset, test_range, side), crop, seed + 1);
    std::cout << "# Minibatch-size: " << batchsize << "\n# epoch: " << epoch << std::endl;

    Encoder enc(kClasses, ch);
    Decoder dec(3, ch);
    Discriminator dis(kClasses, 3, ch);
    std::vector<std::unique_ptr<rensa::optimizers::Adam>> opts;
    for (rensa::Link* model : std::initializer_list<rensa::Link*>{&enc, &dec, &dis}) {
      opts.push_back(std::make_unique<rensa::optimizers::Adam>(0.0002, 0.5));
      opts.back()->setup(*model);
      opts.back()->add_hook(std::make_shared<rensa::optimizers::WeightDecay>(1e-5));
    }
    rensa::iterators::SerialIterator train_iter(train, batchsize, {.seed = seed});
    rensa::iterators::SerialIterator test_iter(test, batchsize, {.repeat = false, .shuffle = false});
    FacadeUpdater updater(train_iter, {{"enc", opts[0].get()}, {"dec", opts[1].get()}, {"dis", opts[2].get()}}, enc,
                          dec, dis);
    rensa::training::Trainer trainer(updater, {epoch, "epoch"}, out);
    const rensa::training::Trigger display(display_interval, "iteration");
    rf.log_trigger = display;
    // Chainer's example has no evaluation: the test set's L1 term (test mode) shows the progress.
    const auto evaluate = [&](const std::vector<Variable>& in) {
      Variable rec = F::mean_absolute_error(dec.decode(enc.encode(in.at(0))), in.at(1)) * kLam1;
      rensa::report({{"loss_rec", rec.array().item<double>()}}, &dec);
      return rec;
    };
    trainer.extend(E::Evaluator(test_iter, dec, {.eval_func = evaluate}), display);
    trainer.extend(E::LogReport({}, display));
    trainer.extend(E::PrintReport({"epoch", "iteration", "enc/loss", "dec/loss", "dis/loss", "dec/loss_rec",
                                   "validation/main/loss_rec", "elapsed_time"}),
                   display);
    trainer.extend(E::ProgressBar(std::nullopt, 10));
    const auto preview = [&](rensa::training::Trainer& t) {
      write_preview(enc, dec, *test, out, t.updater().iteration());
    };
    trainer.extend(preview, "preview", rensa::training::Trigger(snapshot_interval, "iteration"));
    run_flags::Run run("train_pix2pix", trainer, rf);
    if (!run.resume(static_cast<double>(epoch))) return 0;
    return run.run();
  } catch (const rensa::Error& e) {
    std::cerr << "train_pix2pix: " << e.what() << '\n';
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    std::cerr << "train_pix2pix: " << e.what() << '\n';
    return 1;
  }
}
