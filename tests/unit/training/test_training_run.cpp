// Real training runs: a linear classifier learns a separable problem, and a run resumed from a
// snapshot ends bit-for-bit where the uninterrupted run ends.

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "rensa/core/threading.h"
#include "rensa/datasets/tuple_dataset.h"
#include "rensa/extensions/evaluator.h"
#include "rensa/extensions/log_report.h"
#include "rensa/extensions/shifts.h"
#include "rensa/extensions/snapshot.h"
#include "rensa/extensions/value_observation.h"
#include "rensa/functions/activation.h"
#include "rensa/functions/loss.h"
#include "rensa/functions/noise.h"
#include "rensa/iterators/serial_iterator.h"
#include "rensa/links/classifier.h"
#include "rensa/links/convolution_2d.h"
#include "rensa/links/linear.h"
#include "rensa/links/normalization.h"
#include "rensa/optimizers/sgd.h"
#include "rensa/serializers/npz.h"
#include "rensa/training/extension.h"
#include "rensa/training/trainer.h"
#include "tests/unit/test_util.h"
#include "tests/unit/training/training_test_util.h"

namespace {

namespace E = rensa::extensions;
using rensa::testing_training::TempDir;
using rensa::training::Observation;
using rensa::training::Trainer;

// n points in 2-D, label 1 when x0 + 0.5 x1 > 0, kept at least 0.3 away from the boundary.
std::shared_ptr<rensa::datasets::TupleDataset> separable(int64_t n, uint64_t seed) {
  rensa::Generator g(seed);
  const auto raw = rensa::random::normal({n, 2}, 0.0, 1.0, rensa::Dtype::float64, rensa::Device::cpu(), &g)
                       .to_vector<double>();
  std::vector<float> x;
  std::vector<int32_t> t;
  for (int64_t i = 0; i < n; ++i) {
    double a = raw[2 * i], b = raw[2 * i + 1];
    const double s = a + 0.5 * b;
    const int32_t label = s > 0 ? 1 : 0;
    if (std::abs(s) < 0.3) a += label ? 0.3 : -0.3;
    x.push_back(static_cast<float>(a));
    x.push_back(static_cast<float>(b));
    t.push_back(label);
  }
  return std::make_shared<rensa::datasets::TupleDataset>(
      std::vector<rensa::Array>{rensa::Array::from_vector(x, {n, 2}), rensa::Array::from_vector(t, {n})});
}

TEST(TrainingRun, LinearClassifierLearnsSeparableData) {
  TempDir dir("run");
  auto train = separable(200, 1);
  auto test = separable(100, 2);
  rensa::links::Classifier model(
      std::make_shared<rensa::links::Linear>(2, 2, rensa::links::LinearOptions{.seed = 5}));
  rensa::optimizers::SGD optimizer(0.5);
  optimizer.setup(model);
  rensa::iterators::SerialIterator train_iter(train, 20, {.repeat = true, .shuffle = true, .seed = 7});
  rensa::iterators::SerialIterator test_iter(test, 32, {.repeat = false, .shuffle = false, .seed = 0});
  rensa::training::StandardUpdater updater(train_iter, optimizer);
  Trainer trainer(updater, {15, "epoch"}, dir.path());
  trainer.extend(E::Evaluator(test_iter, model));
  trainer.extend(E::LogReport());
  trainer.run();

  EXPECT_EQ(updater.iteration(), 150);
  const auto& log = trainer.get_extension<E::LogReport>("LogReport").log();
  ASSERT_EQ(log.size(), 15u);
  EXPECT_EQ(log.back().at("epoch"), 15);
  EXPECT_GE(log.back().at("main/accuracy"), 0.95);
  EXPECT_GE(log.back().at("validation/main/accuracy"), 0.95);
  EXPECT_LT(log.back().at("main/loss"), log.front().at("main/loss"));
  EXPECT_TRUE(std::filesystem::exists(dir / "log"));
}

// The bytes of each parameter of `link`, in order.
std::vector<std::vector<unsigned char>> bytes_of_params(const rensa::Link& link) {
  std::vector<std::vector<unsigned char>> out;
  for (const auto& [path, p] : link.namedparams()) {
    const rensa::Array a = p.array().contiguous();
    const auto* b = static_cast<const unsigned char*>(a.raw_data());
    out.emplace_back(b, b + a.nbytes());
  }
  return out;
}

// Everything one run needs, built the same way for the uninterrupted and the resumed run.
struct RunSetup {
  std::shared_ptr<rensa::datasets::TupleDataset> data = separable(50, 3);
  std::shared_ptr<rensa::Sequential> net = std::make_shared<rensa::Sequential>();
  std::unique_ptr<rensa::links::Classifier> model;
  rensa::optimizers::MomentumSGD optimizer{0.1, 0.9};
  // No seed: the iterator draws one from the default generator; the snapshot must restore it.
  rensa::iterators::SerialIterator train_iter{data, 8};
  rensa::iterators::SerialIterator eval_iter{data, 16, {.repeat = false, .shuffle = false, .seed = 0}};
  std::unique_ptr<rensa::training::StandardUpdater> updater;
  std::unique_ptr<Trainer> trainer;

  RunSetup(const std::string& out, int64_t stop, E::SnapshotOptions snapshot_options = {}) {
    net->add(std::make_shared<rensa::links::Linear>(2, 8));
    net->add([](const rensa::Variable& x) { return rensa::functions::relu(x); });
    // Dropout draws from the default generator: the snapshot must restore its position too.
    net->add([](const rensa::Variable& x) { return rensa::functions::dropout(x, 0.2); });
    net->add(std::make_shared<rensa::links::Linear>(8, 2));
    model = std::make_unique<rensa::links::Classifier>(net);
    optimizer.setup(*model);
    updater = std::make_unique<rensa::training::StandardUpdater>(train_iter, optimizer);
    trainer = std::make_unique<Trainer>(*updater, rensa::training::Trigger{stop, "iteration"}, out);
    trainer->extend(E::Evaluator(eval_iter, *model), {10, "iteration"});
    trainer->extend(E::LogReport({}, {4, "iteration"}));
    trainer->extend(E::ExponentialShift("lr", 0.97));
    trainer->extend(E::observe_lr());
    trainer->extend(E::snapshot("snapshot_iter_{.updater.iteration}", {1, "epoch"}, std::move(snapshot_options)),
                    {10, "iteration"});
  }

  std::vector<std::vector<unsigned char>> param_bytes() const { return bytes_of_params(*model); }
};

std::vector<Observation> without_time(std::vector<Observation> log) {
  for (auto& e : log) {
    e.erase("elapsed_time");
    e.erase("main/data_wait");  // a time too
  }
  return log;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(TrainingRun, ResumeFromSnapshotIsBitForBitIdentical) {
  constexpr int64_t kIterations = 30;
  TempDir full_dir("full");
  rensa::seed(11);
  RunSetup full(full_dir.path(), kIterations);
  full.trainer->run();
  const auto expected_params = full.param_bytes();
  const auto expected_log = without_time(full.trainer->get_extension<E::LogReport>("LogReport").log());
  ASSERT_EQ(expected_log.size(), 7u);
  EXPECT_EQ(expected_log[2].count("validation/main/loss"), 1u);  // iterations 9-12 include 10
  for (int64_t it : {10, 20, 30}) {
    ASSERT_TRUE(std::filesystem::exists(full_dir / ("snapshot_iter_" + std::to_string(it)))) << it;
  }

  for (int64_t from : {10, 20}) {
    SCOPED_TRACE("resumed from iteration " + std::to_string(from));
    TempDir resumed_dir("resumed");
    rensa::seed(999);  // a different random state than the one the snapshot holds
    RunSetup resumed(resumed_dir.path(), kIterations);
    resumed.trainer->resume(full_dir / ("snapshot_iter_" + std::to_string(from)));
    EXPECT_EQ(resumed.updater->iteration(), from);
    resumed.trainer->run();
    EXPECT_EQ(resumed.updater->iteration(), kIterations);

    const auto params = resumed.param_bytes();
    ASSERT_EQ(params.size(), expected_params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      ASSERT_EQ(params[i].size(), expected_params[i].size());
      EXPECT_EQ(std::memcmp(params[i].data(), expected_params[i].data(), params[i].size()), 0) << "parameter " << i;
    }
    EXPECT_EQ(resumed.optimizer.hyperparam("lr"), full.optimizer.hyperparam("lr"));
    EXPECT_EQ(resumed.train_iter.current_position(), full.train_iter.current_position());
    EXPECT_EQ(resumed.train_iter.epoch(), full.train_iter.epoch());
    EXPECT_EQ(without_time(resumed.trainer->get_extension<E::LogReport>("LogReport").log()), expected_log);
    EXPECT_EQ(without_time(E::LogReport::from_json(read_file(resumed_dir / "log"), "log")), expected_log);
    EXPECT_GE(resumed.trainer->elapsed_time(), 0.0);
    // The final snapshots hold the same model.
    const auto a = rensa::serializers::read_npz(full_dir / "snapshot_iter_30");
    const auto b = rensa::serializers::read_npz(resumed_dir / "snapshot_iter_30");
    for (const auto& [key, value] : a) {
      if (key.rfind("updater/model:main/", 0) != 0) continue;
      ASSERT_EQ(b.count(key), 1u) << key;
      EXPECT_EQ(std::memcmp(value.raw_data(), b.at(key).raw_data(), value.nbytes()), 0) << key;
    }
  }
}

TEST(TrainingRun, SnapshotHoldsTrainerState) {
  TempDir dir("snap");
  rensa::seed(5);
  RunSetup s(dir.path(), 10);
  s.trainer->run();
  const auto values = rensa::serializers::read_npz(dir / "snapshot_iter_10");
  for (const char* key : {"updater/iteration", "updater/model:main/predictor/0/W", "extensions/LogReport/_log",
                          "extensions/ExponentialShift/_t", "extension_triggers/snapshot/_previous_iteration",
                          "stop_trigger/_previous_iteration", "_snapshot_elapsed_time", "rng/offset"}) {
    EXPECT_EQ(values.count(key), 1u) << key;
  }
  EXPECT_EQ(values.at("updater/iteration").item<int64_t>(), 10);
  EXPECT_EQ(values.at("extensions/ExponentialShift/_t").item<int64_t>(), 10);
}

// The parameters of a run's snapshot file, by key.
std::map<std::string, rensa::Array> model_of(const std::string& file) {
  std::map<std::string, rensa::Array> out;
  for (auto& [key, value] : rensa::serializers::read_npz(file)) {
    if (key.rfind("updater/model:main/", 0) == 0) out.emplace(key, value);
  }
  return out;
}

void expect_same_arrays(const std::map<std::string, rensa::Array>& a, const std::map<std::string, rensa::Array>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [key, value] : a) {
    ASSERT_EQ(b.count(key), 1u) << key;
    EXPECT_EQ(std::memcmp(value.raw_data(), b.at(key).raw_data(), value.nbytes()), 0) << key;
  }
}

// Background writers write what the synchronous one writes, from copies taken at the trigger;
// autoload resumes a restarted run (the same command) from the newest file, bit for bit.
TEST(SnapshotOptions, WritersAndAutoloadResumeExactly) {
  constexpr int64_t kIterations = 30;
  TempDir ref_dir("ref");
  rensa::seed(11);
  RunSetup ref(ref_dir.path(), kIterations);
  ref.trainer->run();
  const auto expected = ref.param_bytes();
  const std::vector<std::pair<std::string, std::function<std::shared_ptr<E::SnapshotWriter>()>>> writers = {
      {"SimpleWriter", [] { return std::make_shared<E::SimpleWriter>(); }},
      {"ThreadWriter", [] { return std::make_shared<E::ThreadWriter>(); }},
      {"ThreadQueueWriter", [] { return std::make_shared<E::ThreadQueueWriter>(); }},
  };
  for (const auto& [name, make] : writers) {
    SCOPED_TRACE(name);
    TempDir dir("writer");
    rensa::seed(11);
    RunSetup first(dir.path(), kIterations, {.writer = make(), .autoload = true});  // nothing to load yet
    first.trainer->run();
    EXPECT_EQ(first.param_bytes(), expected);
    for (int64_t it : {10, 20, 30}) {
      const std::string file = "snapshot_iter_" + std::to_string(it);
      expect_same_arrays(model_of(ref_dir / file), model_of(dir / file));
    }
    // The job dies after iteration 20 is saved: the restarted command loads it by itself.
    std::filesystem::remove(dir / "snapshot_iter_30");
    rensa::seed(999);
    RunSetup again(dir.path(), kIterations, {.writer = make(), .autoload = true});
    again.trainer->run();
    EXPECT_EQ(again.param_bytes(), expected);
    EXPECT_EQ(without_time(again.trainer->get_extension<E::LogReport>("LogReport").log()),
              without_time(ref.trainer->get_extension<E::LogReport>("LogReport").log()));
  }
}

TEST(SnapshotOptions, ConditionRetentionAndErrors) {
  TempDir dir("cond");
  rensa::seed(3);
  int asked = 0;
  RunSetup s(dir.path(), 40,
             {.condition = [&] { return ++asked % 2 == 0; },
              .writer = std::make_shared<E::ThreadQueueWriter>(),
              .n_retains = 1});
  s.trainer->run();
  EXPECT_EQ(asked, 4);
  // Taken at 20 and 40; the background cleanup kept only the newest.
  EXPECT_FALSE(std::filesystem::exists(dir / "snapshot_iter_10"));
  EXPECT_FALSE(std::filesystem::exists(dir / "snapshot_iter_20"));
  EXPECT_TRUE(std::filesystem::exists(dir / "snapshot_iter_40"));

  // A background write that fails is the run's error, naming the file.
  for (bool queue : {false, true}) {
    TempDir bad("bad");
    std::filesystem::create_directories(std::filesystem::path(bad / "snapshot_iter_10") / "in_the_way");
    RunSetup r(bad.path(), 10,
               {.writer = queue ? std::shared_ptr<E::SnapshotWriter>(std::make_shared<E::ThreadQueueWriter>())
                                : std::make_shared<E::ThreadWriter>()});
    rensa::test::expect_error<rensa::IOError>([&] { r.trainer->run(); }, {"snapshot_iter_10"});
  }
  rensa::test::expect_error<rensa::ValueError>([] { E::snapshot("s", {1, "epoch"}, {.n_retains = 0}); },
                                               {"snapshot", "n_retains", "0"});
}

// snapshot_on_error saves the state at the error; the error still ends the run.
TEST(SnapshotOptions, SnapshotOnError) {
  TempDir dir("onerror");
  rensa::seed(4);
  RunSetup s(dir.path(), 30, {.snapshot_on_error = true});
  s.trainer->extend(rensa::training::make_extension(
      [](Trainer& t) {
        if (t.updater().iteration() == 7) throw rensa::ValueError("stop here");
      },
      "Failing"));
  rensa::test::expect_error<rensa::ValueError>([&] { s.trainer->run(); }, {"stop here"});
  ASSERT_TRUE(std::filesystem::exists(dir / "snapshot_iter_7"));
  EXPECT_EQ(rensa::serializers::read_npz(dir / "snapshot_iter_7").at("updater/iteration").item<int64_t>(), 7);

  // An autoload that fails (a damaged newest file) is the run's error, and snapshot_on_error
  // writes nothing: a snapshot of the fresh state (iteration 0) would be the newest file, and the
  // next autoload would start over from it.
  const std::string newest = dir / "snapshot_iter_9";
  std::ofstream(newest) << "damaged";
  RunSetup again(dir.path(), 30, {.snapshot_on_error = true, .autoload = true});
  rensa::test::expect_error<rensa::IOError>([&] { again.trainer->run(); }, {"snapshot_iter_9"});
  EXPECT_EQ(read_file(newest), "damaged");
  EXPECT_FALSE(std::filesystem::exists(dir / "snapshot_iter_0"));
}

// snapshot_object with autoload loads the object itself.
TEST(SnapshotOptions, ObjectAutoload) {
  TempDir dir("object");
  rensa::links::Linear saved(2, 3, rensa::links::LinearOptions{.seed = 1});
  rensa::serializers::save_npz(dir / "model_5.npz", saved);
  rensa::links::Linear model(2, 3, rensa::links::LinearOptions{.seed = 2});
  rensa::testing_training::FakeUpdater updater(2);
  Trainer trainer(updater, {1, "iteration"}, dir.path());
  trainer.extend(E::snapshot_object(model, "model_{.updater.iteration}.npz", {10, "iteration"}, {.autoload = true}));
  trainer.run();
  EXPECT_TRUE(rensa::array_equal(model.W().array(), saved.W().array()));
}

// The same seed and thread count give the same bits: a ConvNet step (convolution, batch
// normalization, dropout, a linear layer; oneDNN's kernels on 2 threads) run twice.
TEST(TrainingRun, TwoRunsGiveTheSameBits) {
  const int threads = rensa::get_num_threads();
  rensa::set_num_threads(2);
  const auto run = [] {
    rensa::seed(21);
    rensa::Sequential net;
    net.add(std::make_shared<rensa::links::Convolution2D>(3, 8, rensa::functions::Int2{3, 3}));
    net.add(std::make_shared<rensa::links::BatchNormalization>(8));
    net.add([](const rensa::Variable& x) { return rensa::functions::dropout(rensa::functions::relu(x), 0.3); });
    net.add(std::make_shared<rensa::links::Linear>(8 * 14 * 14, 5));
    rensa::optimizers::MomentumSGD opt(0.05, 0.9);
    opt.setup(net);
    const rensa::Array x = rensa::test::randn({16, 3, 16, 16}, rensa::Dtype::float32, 3);
    const rensa::Array t = rensa::Array::from_vector<int32_t>({0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0});
    for (int step = 0; step < 4; ++step) {
      opt.update([&] { return rensa::functions::softmax_cross_entropy(net(rensa::Variable(x)), t); });
    }
    return bytes_of_params(net);
  };
  const auto first = run();
  const auto second = run();
  rensa::set_num_threads(threads);
  ASSERT_EQ(first.size(), 6u);
  EXPECT_EQ(first, second);
}

}  // namespace
