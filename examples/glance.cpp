// Chainer's glance example ("Chainer at a glance"): an MLP that tells poisonous mushrooms from
// edible ones, trained on the UCI Mushroom data set's CSV (a class column, then categorical
// attributes, each column's values numbered in sorted order as NumPy's unique does).
//   build/release/examples/glance --csv mushrooms.csv
// The CSV is Chainer's examples/glance/mushrooms.csv (from the UCI Machine Learning Repository);
// any CSV with a header row, the label first ("e" or "p") and categorical columns works.
#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <sstream>

#include "rensa/rensa.h"
#include "rensa/training.h"
#include "run_flags.h"

namespace F = rensa::functions;
namespace L = rensa::links;
namespace E = rensa::extensions;
using rensa::Array;

namespace {

// The CSV as numbers: X (rows, columns - 1) float32 and Y (rows, 1) int32, each column's values
// numbered by their sorted order. Throws rensa::IOError naming the file and line for a ragged row.
std::pair<Array, Array> read_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw rensa::IOError("glance: cannot read --csv " + path);
  std::string line;
  std::getline(in, line);  // the header
  std::vector<std::vector<std::string>> rows;
  int64_t line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) cells.push_back(cell);
    if (!rows.empty() && cells.size() != rows[0].size()) {
      throw rensa::IOError("glance: " + path + ":" + std::to_string(line_no) + ": " + std::to_string(cells.size()) +
                           " columns where the first row has " + std::to_string(rows[0].size()));
    }
    rows.push_back(std::move(cells));
  }
  if (rows.empty() || rows[0].size() < 2) {
    throw rensa::IOError("glance: " + path + " has no rows of a label and at least one attribute");
  }
  const std::size_t n = rows.size(), cols = rows[0].size();
  std::vector<float> x(n * (cols - 1));
  std::vector<int32_t> y(n);
  for (std::size_t c = 0; c < cols; ++c) {
    std::set<std::string> values;
    for (const auto& r : rows) values.insert(r[c]);
    for (std::size_t i = 0; i < n; ++i) {
      const auto code = static_cast<int32_t>(std::distance(values.begin(), values.find(rows[i][c])));
      if (c == 0) {
        y[i] = code;
      } else {
        x[i * (cols - 1) + c - 1] = static_cast<float>(code);
      }
    }
    if (c == 0 && values.size() != 2) {
      throw rensa::IOError("glance: " + path + ": the label column has " + std::to_string(values.size()) +
                           " values; it must have 2 (edible, poisonous)");
    }
  }
  return {Array::from_vector(x, {static_cast<int64_t>(n), static_cast<int64_t>(cols - 1)}),
          Array::from_vector(y, {static_cast<int64_t>(n), 1})};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Classify mushrooms as edible or poisonous (Chainer's glance example) with rensa"};
  app.option_defaults()->always_capture_default();
  std::string csv = "mushrooms.csv", out = "result/glance";
  int64_t epoch = 50, units = 44;
  uint64_t seed = 0;
  app.add_option("--csv", csv, "The data set: a header row, then the label and categorical attributes");
  app.add_option("-e,--epoch", epoch, "Number of sweeps over the training set")->check(CLI::Range(1, 100000));
  app.add_option("-u,--unit", units, "Units in each of the two hidden layers")->check(CLI::Range(1, 100000));
  app.add_option("-o,--out", out, "Directory for the log, plots, graph and snapshots");
  run_flags::add_seed(app, seed, "Seed of the split, initialization and shuffling");
  run_flags::Flags rf;
  run_flags::add_flags(app, rf);
  CLI11_PARSE(app, argc, argv);
  try {
    rensa::seed(seed);
    auto [X, Y] = read_csv(csv);
    auto data = std::make_shared<rensa::datasets::TupleDataset>(std::vector<Array>{X, Y});
    auto [train, test] = rensa::datasets::split_dataset_random(data, data->size() * 7 / 10, seed);

    // Sequential(Linear(units), relu) twice, then Linear(1): one logit per mushroom.
    auto mlp = std::make_shared<rensa::Sequential>();
    mlp->add(std::make_shared<L::Linear>(units)).add(F::relu);
    mlp->add(std::make_shared<L::Linear>(units)).add(F::relu);
    mlp->add(std::make_shared<L::Linear>(1));
    L::Classifier model(mlp,
                        {.lossfun = [](const rensa::Variable& y,
                                       const rensa::Variable& t) { return F::sigmoid_cross_entropy(y, t.array()); },
                         .accfun = [](const rensa::Variable& y,
                                      const rensa::Variable& t) { return F::binary_accuracy(y, t.array()); }});
    rensa::optimizers::SGD optimizer;
    optimizer.setup(model);
    rensa::iterators::SerialIterator train_iter(train, 100, {.seed = seed});
    rensa::iterators::SerialIterator test_iter(test, 100, {.repeat = false, .shuffle = false});
    rensa::training::StandardUpdater updater(train_iter, optimizer);
    rensa::training::Trainer trainer(updater, {epoch, "epoch"}, out);
    trainer.extend(E::Evaluator(test_iter, model));
    trainer.extend(E::DumpGraph("main/loss"));
    trainer.extend(E::LogReport());
    trainer.extend(E::PlotReport({"main/loss", "validation/main/loss"}, "epoch", {1, "epoch"}, "loss.png"));
    trainer.extend(E::PlotReport({"main/accuracy", "validation/main/accuracy"}, "epoch", {1, "epoch"}, "accuracy.png"));
    trainer.extend(E::PrintReport(
        {"epoch", "main/loss", "validation/main/loss", "main/accuracy", "validation/main/accuracy", "elapsed_time"}));
    run_flags::Run run("glance", trainer, rf);
    if (!run.resume(static_cast<double>(epoch))) return 0;
    const int status = run.run();
    if (status != 0) return status;

    // One test mushroom, as Chainer's example ends.
    std::mt19937_64 pick(seed);
    const auto example = test->get_example(static_cast<int64_t>(pick() % static_cast<uint64_t>(test->size())));
    auto no_grad = rensa::no_backprop_mode();
    const float logit = mlp->forward(rensa::Variable(example[0].reshape({1, example[0].size()}))).array().item<float>();
    const char* names[] = {"Edible", "Poisonous"};
    std::cout << "Predicted " << names[logit >= 0 ? 1 : 0] << ", Actual " << names[example[1].item<int32_t>()] << "\n";
    return 0;
  } catch (const rensa::Error& e) {
    std::cerr << "glance: " << e.what() << '\n';
    return 1;
  }
}
