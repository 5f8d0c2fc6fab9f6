// Chainer's memnn example: end-to-end memory networks (Sukhbaatar et al., 2015) answering the
// questions of a bAbI task, with bag-of-words or position-encoded sentences, temporal encoding,
// several hops and adjacent weight sharing.
//   build/release/examples/train_memnn en/qa1_single-supporting-fact_train.txt en/qa1_single-supporting-fact_test.txt
//   build/release/examples/train_memnn --test-only en/qa1_single-supporting-fact_test.txt
// The task files come from Facebook's bAbI tasks_1-20_v1-2.tar.gz (Chainer's download.py fetches
// http://www.thespermwhale.com/jaseweston/babi/tasks_1-20_v1-2.tar.gz; nothing is downloaded here).
// Writes the log and snapshots to --out and, when training ends, --model/model.npz (the parameters,
// hyperparameters and vocabulary). --test-only evaluates such a model on one file instead (Chainer's
// test_memnn.py).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "rensa/rensa.h"
#include "rensa/training.h"
#include "run_flags.h"

namespace F = rensa::functions;
namespace L = rensa::links;
namespace E = rensa::extensions;
using rensa::Array;
using rensa::Variable;

namespace {

const char* const kSource =
    "bAbI task files (e.g. en/qa1_single-supporting-fact_train.txt) come from Facebook's tasks_1-20_v1-2.tar.gz, "
    "http://www.thespermwhale.com/jaseweston/babi/tasks_1-20_v1-2.tar.gz";

// Word ids, "<unk>" being 0. A fixed vocabulary (a loaded model's) maps new words to 0 as
// Chainer's defaultdict(lambda: 0) does.
struct Vocab {
  std::map<std::string, int32_t> ids{{"<unk>", 0}};
  bool grow = true;
  int32_t operator()(const std::string& w) {
    const auto it = ids.find(w);
    if (it != ids.end()) return it->second;
    if (!grow) return 0;
    const auto id = static_cast<int32_t>(ids.size());
    ids.emplace(w, id);
    return id;
  }
};

// A sentence (answer < 0) or a question with its answer.
struct Line {
  std::vector<int32_t> words;
  int32_t answer = -1;
};
using Story = std::vector<Line>;

// Chainer's babi.split: lower case, '.' and '?' removed, split on whitespace.
std::vector<int32_t> split(Vocab& vocab, std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::erase_if(s, [](char c) { return c == '.' || c == '?'; });
  std::istringstream in(s);
  std::vector<int32_t> ids;
  for (std::string w; in >> w;) ids.push_back(vocab(w));
  return ids;
}

// Chainer's babi.read_data: the stories of a task file (a story starts where the line number is 1).
std::vector<Story> read_data(Vocab& vocab, const std::string& path, const std::string& what) {
  std::ifstream f(path);
  std::error_code ec;
  if (!f || std::filesystem::is_directory(path, ec)) {
    throw rensa::IOError("cannot read " + what + " " + path + (f ? ": it is a directory" : ": no such file") + "; " +
                         kSource);
  }
  std::vector<Story> stories;
  std::string line;
  for (int64_t n = 1; std::getline(f, line); ++n) {
    const auto bad = [&](const std::string& why) {
      return rensa::ValueError(path + ":" + std::to_string(n) + ": " + why +
                               " (a bAbI line is 'N sentence.' or 'N question?<TAB>answer<TAB>supporting ids')");
    };
    const auto b = line.find_first_not_of(" \t\r\n"), e = line.find_last_not_of(" \t\r\n");
    if (b == std::string::npos) continue;
    line = line.substr(b, e - b + 1);
    const auto space = line.find(' ');
    const std::string sid = line.substr(0, space);
    if (sid.size() > 9 || sid.find_first_not_of("0123456789") != std::string::npos) throw bad("no line number");
    if (space == std::string::npos) throw bad("a line number without text");
    if (std::stoi(sid) == 1 || stories.empty()) stories.emplace_back();
    const std::string content = line.substr(space + 1);
    Line parsed;
    if (content.find('\t') != std::string::npos || content.find('?') != std::string::npos) {
      std::vector<std::string> fields;
      std::istringstream in(content);
      for (std::string field; std::getline(in, field, '\t');) fields.push_back(field);
      if (fields.size() != 3 || fields[1].empty()) throw bad("a question without its tab-separated answer and facts");
      std::istringstream facts(fields[2]);
      for (std::string id; facts >> id;) {
        if (id.find_first_not_of("0123456789") != std::string::npos)
          throw bad("supporting fact '" + id + "' is not a line number");
      }
      parsed.answer = vocab(fields[1]);
      parsed.words = split(vocab, fields[0]);
    } else {
      parsed.words = split(vocab, content);
    }
    stories.back().push_back(std::move(parsed));
  }
  return stories;
}

// Chainer's memnn.convert_data: per question, the story's last max_memory sentences so far
// (oldest first, zero-padded), the question and the answer, as a dataset of three columns.
std::shared_ptr<rensa::datasets::TupleDataset> convert_data(const std::vector<Story>& stories, int64_t max_memory,
                                                            const std::string& path) {
  size_t len = 1, n = 0;
  for (const Story& s : stories) {
    for (const Line& l : s) {
      len = std::max(len, l.words.size());
      n += l.answer >= 0;
    }
  }
  if (n == 0) throw rensa::ValueError(path + " has no questions; " + kSource);
  const auto L = static_cast<int64_t>(len), N = static_cast<int64_t>(n);
  Array mem = Array::zeros({N, max_memory, L}, rensa::Dtype::int32), query = Array::zeros({N, L}, rensa::Dtype::int32);
  Array answer = Array::zeros({N}, rensa::Dtype::int32);
  int32_t *m = mem.data<int32_t>(), *q = query.data<int32_t>(), *a = answer.data<int32_t>();
  int64_t k = 0;
  for (const Story& story : stories) {
    std::vector<std::vector<int32_t>> memory;
    for (const Line& l : story) {
      if (l.answer < 0) {
        if (std::ssize(memory) == max_memory) memory.erase(memory.begin());
        memory.push_back(l.words);
        continue;
      }
      for (size_t i = 0; i < memory.size(); ++i) {
        std::ranges::copy(memory[i], m + (k * max_memory + static_cast<int64_t>(i)) * L);
      }
      std::ranges::copy(l.words, q + k * L);
      a[k++] = l.answer;
    }
  }
  return std::make_shared<rensa::datasets::TupleDataset>(std::vector<Array>{mem, query, answer});
}

// The memory network. embeds[i] is hop i's input memory A, hop i-1's output memory C, and
// embeds[0] the question's B; the answer is W u with W = the last embeds' matrix (Chainer's
// adjacent weight sharing). temporals[i] are the matching temporal encodings.
struct MemNN : rensa::Chain {
  rensa::ChainList embeds, temporals;
  int64_t hops;
  bool position_encoding;
  MemNN(int64_t n_units, int64_t n_vocab, bool pe, int64_t max_memory, int64_t n_hops)
      : hops(n_hops), position_encoding(pe) {
    add_link("embeds", embeds);
    add_link("temporals", temporals);
    const auto normal = std::make_shared<rensa::initializers::Normal>();
    for (int64_t i = 0; i <= hops; ++i) {
      embeds.append(std::make_shared<L::EmbedID>(n_vocab, n_units, L::EmbedIDOptions{.initialW = normal}));
      temporals.append(std::make_shared<L::EmbedID>(max_memory, n_units, L::EmbedIDOptions{.initialW = normal}));
    }
  }
  L::EmbedID& embed(int64_t i) const { return static_cast<L::EmbedID&>(embeds[static_cast<size_t>(i)]); }
  L::EmbedID& temporal(int64_t i) const { return static_cast<L::EmbedID&>(temporals[static_cast<size_t>(i)]); }

  // Id 0 pads sentences; Chainer zeroes its rows after every update so padding adds nothing.
  void fix_ignore_label() const {
    for (int64_t i = 0; i <= hops; ++i) embed(i).W().array().slice(0, 0, 1).fill(0.0);
  }

  // Sums the word vectors of each sentence (the last axis of x), weighted with position encoding
  // by l_kj = (1 - j/J) - (k/d)(1 - 2j/J), J the sentence's length (at least 1), d the units.
  Variable encode(L::EmbedID& e, const Array& x) const {
    Variable v = e(Variable(x));
    if (position_encoding) {
      const int64_t words = x.shape()[x.ndim() - 1], d = v.shape()[v.ndim() - 1], rows = x.size() / words;
      const std::vector<int32_t> ids = x.to_vector<int32_t>();
      std::vector<float> coeff(static_cast<size_t>(rows * words * d));
      for (int64_t r = 0; r < rows; ++r) {
        const auto length = static_cast<float>(std::max<int64_t>(
            1,
            std::count_if(ids.begin() + r * words, ids.begin() + (r + 1) * words, [](int32_t w) { return w != 0; })));
        for (int64_t j = 1; j <= words; ++j) {
          for (int64_t k = 1; k <= d; ++k) {
            const float fj = static_cast<float>(j) / length, fk = static_cast<float>(k) / static_cast<float>(d);
            coeff[static_cast<size_t>((r * words + j - 1) * d + k - 1)] = (1 - fj) - fk * (1 - 2 * fj);
          }
        }
      }
      v = v * Variable(Array::from_vector(coeff, v.shape()).astype(v.dtype()));
    }
    return F::sum(v, {x.ndim() - 1});
  }

  // inputs: sentences (batch, memory, words), question (batch, words); returns answer scores.
  Variable forward(const std::vector<Variable>& inputs) override {
    const Array& sentences = inputs.at(0).array();
    const int64_t size = sentences.shape()[1];
    const Variable inds(Array::arange(static_cast<double>(size - 1), -1.0, -1.0, rensa::Dtype::int32));
    std::vector<Variable> memory;  // embeds[i] applied to the sentences, plus temporal encoding
    for (int64_t i = 0; i <= hops; ++i) {
      const Variable m = encode(embed(i), sentences);
      memory.push_back(m + F::broadcast_to(temporal(i)(inds), m.shape()));
    }
    Variable u = encode(embed(0), inputs.at(1).array());
    for (int64_t i = 0; i < hops; ++i) {
      const Variable p = F::softmax(F::matmul(memory[static_cast<size_t>(i)], F::expand_dims(u, -1)));
      u = F::squeeze(F::matmul(F::swapaxes(memory[static_cast<size_t>(i + 1)], 2, 1), p), {2}) + u;
    }
    return F::linear(u, embed(hops).W());
  }
  using Link::forward;
};

// The hyperparameters and vocabulary of a model.
struct Parameters {
  int64_t unit = 20, hop = 3, max_memory = 50;
  std::string sentence_repr = "bow";
  Vocab vocab;
};

// Writes `dir`/model.npz (atomically): the parameters under Chainer's names (chainer.serializers.load_npz
// loads them into Chainer's MemNN classifier) plus memnn/*, the hyperparameters and the words in id
// order, one a line (what Chainer keeps in parameter.json).
void save_model(const std::string& dir, L::Classifier& model, const Parameters& p) {
  std::filesystem::create_directories(dir);
  std::vector<std::string> words(p.vocab.ids.size());
  for (const auto& [word, id] : p.vocab.ids) words[static_cast<size_t>(id)] = word;
  rensa::serializers::DictionarySerializer s;
  model.serialize(s);
  std::map<std::string, Array> arrays = s.target();
  std::string vocabulary;
  for (const auto& w : words) vocabulary += w + "\n";
  arrays["memnn/vocabulary"] = Array::from_vector(std::vector<uint8_t>(vocabulary.begin(), vocabulary.end()));
  arrays["memnn/unit_hop_max_memory_pe"] =
      Array::from_vector(std::vector<int64_t>{p.unit, p.hop, p.max_memory, p.sentence_repr == "pe"});
  rensa::serializers::write_npz(dir + "/model.npz", arrays);
}

// The hyperparameters and fixed vocabulary that save_model stored in `path`.
Parameters load_parameters(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) {
    throw rensa::IOError("cannot read " + path + ": --model must be a directory that training wrote");
  }
  const std::map<std::string, Array> arrays = rensa::serializers::read_npz(path);
  const auto h = arrays.find("memnn/unit_hop_max_memory_pe"), v = arrays.find("memnn/vocabulary");
  if (h == arrays.end() || v == arrays.end() || h->second.size() != 4) {
    throw rensa::IOError(path +
                         " lacks memnn/unit_hop_max_memory_pe or memnn/vocabulary: not a model train_memnn wrote");
  }
  const std::vector<int64_t> hyper = h->second.to_vector<int64_t>();
  Parameters p{.unit = hyper[0],
               .hop = hyper[1],
               .max_memory = hyper[2],
               .sentence_repr = hyper[3] != 0 ? "pe" : "bow",
               .vocab = {}};
  const std::vector<uint8_t> bytes = v->second.to_vector<uint8_t>();
  std::istringstream words(std::string(bytes.begin(), bytes.end()));
  p.vocab.ids.clear();
  for (std::string w; std::getline(words, w);) p.vocab.ids.emplace(w, static_cast<int32_t>(p.vocab.ids.size()));
  if (p.unit < 1 || p.hop < 1 || p.max_memory < 1 || p.vocab.ids.empty()) {
    throw rensa::IOError(path + ": memnn/unit_hop_max_memory_pe must be positive and the vocabulary not empty");
  }
  p.vocab.grow = false;
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"End-to-end memory networks on a bAbI task (Chainer's memnn example) with rensa"};
  app.option_defaults()->always_capture_default();
  std::string train_path, test_path, model_dir, out = "result/train_memnn";
  Parameters p;
  int64_t batchsize = 100, epoch = 100;
  uint64_t seed = 0;
  int threads = 1;
  bool test_only = false;
  app.add_option("TRAIN_DATA", train_path,
                 "bAbI training file (e.g. en/qa1_single-supporting-fact_train.txt); with --test-only, the file to "
                 "test on")
      ->required();
  app.add_option("TEST_DATA", test_path, "bAbI test file (e.g. en/qa1_single-supporting-fact_test.txt)");
  app.add_option("-m,--model", model_dir,
                 "Directory of the model.npz written when training ends and read by --test-only (default: "
                 "the --out directory's model)");
  app.add_flag("--test-only", test_only,
               "Evaluate the model in --model on the one data file given and print the accuracy (Chainer's "
               "test_memnn.py); the model sets --unit, --hop, --max-memory and --sentence-repr");
  app.add_option("-b,--batchsize", batchsize, "Questions in each minibatch")->check(CLI::Range(1, 1000000));
  app.add_option("-e,--epoch", epoch, "Number of sweeps over the training questions")->check(CLI::Range(1, 100000));
  app.add_option("-u,--unit", p.unit, "Number of units")->check(CLI::Range(1, 100000));
  app.add_option("-H,--hop", p.hop, "Number of hops")->check(CLI::Range(1, 100));
  app.add_option("--max-memory", p.max_memory, "Maximum number of memory (latest sentences kept per question)")
      ->check(CLI::Range(1, 100000));
  app.add_option("--sentence-repr", p.sentence_repr,
                 "Sentence representation: bag of words (bow) or position encoding (pe)")
      ->check(CLI::IsMember({"bow", "pe"}));
  app.add_option("-o,--out", out, "Directory for the log and snapshots");
  run_flags::add_seed(app, seed, "Seed of initialization and of the order of the questions");
  app.add_option("-t,--threads", threads, "Threads for the kernels")->check(CLI::Range(1, 1024));
  run_flags::Flags rf;
  run_flags::add_flags(app, rf);
  CLI11_PARSE(app, argc, argv);
  if (model_dir.empty()) model_dir = out + "/model";
  if (test_only != test_path.empty()) {
    std::cerr << "train_memnn: give TRAIN_DATA and TEST_DATA to train, or --test-only and one data file\n";
    return 1;
  }

  try {
    rensa::set_num_threads(threads);
    rensa::seed(seed);
    if (test_only) {
      p = load_parameters(model_dir + "/model.npz");
      test_path = train_path;
    }
    std::vector<Story> train_stories;
    if (!test_only) train_stories = read_data(p.vocab, train_path, "TRAIN_DATA");
    const std::vector<Story> test_stories = read_data(p.vocab, test_path, "TEST_DATA");
    const auto test = convert_data(test_stories, p.max_memory, test_path);
    auto net = std::make_shared<MemNN>(p.unit, std::ssize(p.vocab.ids), p.sentence_repr == "pe", p.max_memory, p.hop);
    L::Classifier model(net);
    rensa::iterators::SerialIterator test_iter(test, batchsize, {.repeat = false, .shuffle = false});
    if (test_only) {
      rensa::serializers::load_npz(model_dir + "/model.npz", model);
      const rensa::Observation result = E::Evaluator(test_iter, model).evaluate();
      std::cout << "Test data: " << test_path << ": " << test_stories.size() << " stories, " << test->size()
                << " questions\nAccuracy: " << std::fixed << std::setprecision(2) << 100 * result.at("main/accuracy")
                << "%" << std::endl;
      return 0;
    }
    const auto train = convert_data(train_stories, p.max_memory, train_path);
    std::cout << "Training data: " << train_path << ": " << train_stories.size() << " stories, " << train->size()
              << " questions\nTest data: " << test_path << ": " << test_stories.size() << " stories, " << test->size()
              << " questions\nVocabulary: " << p.vocab.ids.size() << " words" << std::endl;

    rensa::optimizers::Adam optimizer;
    optimizer.setup(model);
    rensa::iterators::SerialIterator train_iter(train, batchsize, {.seed = seed});
    rensa::training::StandardUpdater updater(train_iter, optimizer);
    rensa::training::Trainer trainer(updater, {epoch, "epoch"}, out);
    trainer.extend([&net](rensa::training::Trainer&) { net->fix_ignore_label(); }, "fix_ignore_label",
                   {1, "iteration"});
    trainer.extend(E::Evaluator(test_iter, model));
    trainer.extend(E::LogReport());
    trainer.extend(E::PrintReport(
        {"epoch", "main/loss", "validation/main/loss", "main/accuracy", "validation/main/accuracy", "elapsed_time"}));
    trainer.extend(E::ProgressBar(std::nullopt, 10));
    run_flags::Run run("train_memnn", trainer, rf);
    if (!run.resume(static_cast<double>(epoch))) return 0;
    const int status = run.run();
    if (status != 0) return status;
    save_model(model_dir, model, p);
    std::cout << "train_memnn: wrote " << model_dir << "/model.npz" << std::endl;
    return 0;
  } catch (const rensa::Error& e) {
    std::cerr << "train_memnn: " << e.what() << '\n';
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    std::cerr << "train_memnn: " << e.what() << '\n';
    return 1;
  }
}
