// The training loop with a counting updater (order, names, triggers, errors, state) and the
// StandardUpdater on a real model.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "rensa/datasets/concat_examples.h"
#include "rensa/datasets/tuple_dataset.h"
#include "rensa/iterators/serial_iterator.h"
#include "rensa/links/classifier.h"
#include "rensa/links/linear.h"
#include "rensa/optimizers/sgd.h"
#include "rensa/serializers/npz.h"
#include "rensa/training/summary.h"
#include "rensa/training/trainer.h"
#include "rensa/training/updater.h"
#include "tests/unit/test_util.h"
#include "tests/unit/training/training_test_util.h"

namespace {

using rensa::testing_training::FakeUpdater;
using rensa::testing_training::TempDir;
using rensa::training::Extension;
using rensa::training::Trainer;
using rensa::training::Trigger;

// Records its calls into a shared log.
class Recorder : public Extension {
 public:
  Recorder(std::string tag, std::shared_ptr<std::vector<std::string>> log, int priority = rensa::training::kPriorityReader)
      : tag_(std::move(tag)), log_(std::move(log)), priority_(priority) {}
  void operator()(Trainer& trainer) override {
    log_->push_back(tag_ + "@" + std::to_string(trainer.updater().iteration()));
    ++calls;
  }
  int default_priority() const override { return priority_; }
  std::string default_name() const override { return "Recorder"; }
  void restore(Trainer&) override { log_->push_back(tag_ + ":restore"); }
  void initialize(Trainer&) override { log_->push_back(tag_ + ":init"); }
  void finalize(Trainer&) override { log_->push_back(tag_ + ":final"); }
  void on_error(Trainer&, const std::exception_ptr&) override { log_->push_back(tag_ + ":error"); }
  void serialize(rensa::serializers::Serializer& s) override { s.scalar("calls", calls); }
  int64_t calls = 0;

 private:
  std::string tag_;
  std::shared_ptr<std::vector<std::string>> log_;
  int priority_;
};

TEST(Trainer, RunsUntilStopTriggerAndCreatesOut) {
  TempDir dir("trainer");
  FakeUpdater updater(4);
  Trainer trainer(updater, {10, "iteration"}, dir / "out/nested");
  trainer.run();
  EXPECT_EQ(updater.updates, 10);
  EXPECT_TRUE(std::filesystem::is_directory(dir / "out/nested"));
  FakeUpdater u2(4);
  Trainer by_epoch(u2, {3, "epoch"}, dir / "out2");
  by_epoch.run();
  EXPECT_EQ(u2.updates, 12);
  rensa::test::expect_error<rensa::Error>([&] { by_epoch.run(); }, {"Trainer::run", "more than once"});
}

TEST(Trainer, PriorityOrderTriggersAndLifecycle) {
  TempDir dir("trainer");
  auto log = std::make_shared<std::vector<std::string>>();
  FakeUpdater updater(2);
  Trainer trainer(updater, {4, "iteration"}, dir.path());
  trainer.extend(Recorder("reader", log), {2, "iteration"});
  trainer.extend(Recorder("writer", log, rensa::training::kPriorityWriter));  // default trigger: each iteration
  trainer.extend(Recorder("late", log, -100), "", {1, "epoch"});
  trainer.extend(Recorder("reader2", log), {2, "iteration"});
  trainer.run();
  // Every restore (a snapshot's autoload) before any initialize.
  const std::vector<std::string> expected{
      "writer:restore", "reader:restore", "reader2:restore", "late:restore",      //
      "writer:init", "reader:init", "reader2:init", "late:init",                   //
      "writer@1",                                                                 //
      "writer@2",    "reader@2",    "reader2@2",    "late@2",                     //
      "writer@3",                                                                 //
      "writer@4",    "reader@4",    "reader2@4",    "late@4",                     //
      "writer:final", "reader:final", "reader2:final", "late:final"};
  EXPECT_EQ(*log, expected);
}

TEST(Trainer, NamesAreUniqueAndLookedUp) {
  FakeUpdater updater;
  Trainer trainer(updater, {1, "iteration"});
  auto log = std::make_shared<std::vector<std::string>>();
  trainer.extend(Recorder("a", log));
  trainer.extend(Recorder("b", log));
  trainer.extend(Recorder("c", log), "custom");
  Recorder named("d", log);
  named.set_name("given");
  trainer.extend(named);
  trainer.extend(Recorder("e", log));
  EXPECT_EQ(trainer.extension_names(), (std::vector<std::string>{"Recorder", "Recorder_1", "custom", "given",
                                                                  "Recorder_2"}));
  EXPECT_EQ(trainer.get_extension("Recorder_1").name(), "Recorder_1");
  EXPECT_EQ(trainer.get_extension<Recorder>("custom").calls, 0);
  rensa::test::expect_error<rensa::ValueError>([&] { trainer.get_extension("nope"); },
                                               {"get_extension", "nope", "Recorder_1", "custom"});
  rensa::test::expect_error<rensa::ValueError>(
      [&] { trainer.get_extension<rensa::training::LambdaExtension>("custom"); }, {"custom", "Recorder"});
}

TEST(Trainer, LambdaExtensionsAndObservation) {
  TempDir dir("trainer");
  FakeUpdater updater(3);
  Trainer trainer(updater, {6, "iteration"}, dir.path());
  std::vector<double> seen;
  // A writer puts a value in the observation; a reader after it sees it in the same iteration.
  trainer.extend(rensa::training::make_extension(
      [](Trainer& t) { rensa::training::report({{"x", static_cast<double>(t.updater().iteration())}}); }, "writer",
      {1, "iteration"}, rensa::training::kPriorityWriter));
  trainer.extend([&](Trainer& t) { seen.push_back(t.observation().at("x")); }, "reader", {1, "epoch"});
  trainer.run();
  EXPECT_EQ(seen, (std::vector<double>{3, 6}));
  EXPECT_EQ(trainer.get_extension("writer").default_name(), "writer");
}

TEST(Trainer, ErrorsCallOnErrorAndFinalizeThenPropagate) {
  TempDir dir("trainer");
  auto log = std::make_shared<std::vector<std::string>>();
  FakeUpdater updater;
  Trainer trainer(updater, {10, "iteration"}, dir.path());
  trainer.extend(Recorder("r", log));
  trainer.extend(
      [](Trainer& t) {
        if (t.updater().iteration() == 3) throw rensa::ValueError("boom at 3");
      },
      "thrower");
  rensa::test::expect_error<rensa::ValueError>([&] { trainer.run(); }, {"boom at 3"});
  EXPECT_EQ(updater.updates, 3);
  ASSERT_GE(log->size(), 3u);
  EXPECT_EQ((*log)[log->size() - 2], "r:error");
  EXPECT_EQ(log->back(), "r:final");
  EXPECT_FALSE(trainer.running());
}

TEST(Trainer, ExtendWhileRunningIsAnError) {
  TempDir dir("trainer");
  FakeUpdater updater;
  Trainer trainer(updater, {2, "iteration"}, dir.path());
  trainer.extend([](Trainer& t) { t.extend([](Trainer&) {}, "late"); }, "adder");
  rensa::test::expect_error<rensa::Error>([&] { trainer.run(); }, {"Trainer::extend", "late", "while the trainer runs"});
}

TEST(Trainer, InitializeSkippedForFinishedTrigger) {
  TempDir dir("trainer");
  auto log = std::make_shared<std::vector<std::string>>();
  FakeUpdater updater;
  Trainer trainer(updater, {3, "iteration"}, dir.path());
  // A schedule whose only point has passed (as after resuming beyond it).
  updater.set_iteration(1);
  Trigger finished(rensa::training::ManualScheduleTrigger({1}, "iteration"));
  EXPECT_TRUE(finished(trainer));
  ASSERT_TRUE(finished.finished());
  trainer.extend(Recorder("f", log), finished);  // copies the trigger with its state
  trainer.extend(Recorder("g", log), {1, "iteration"});
  trainer.run();
  EXPECT_EQ(std::count(log->begin(), log->end(), "f:init"), 0);
  EXPECT_EQ(std::count(log->begin(), log->end(), "g:init"), 1);
  EXPECT_EQ(std::count(log->begin(), log->end(), "f@2"), 0);
  EXPECT_EQ(std::count(log->begin(), log->end(), "f:final"), 1);
}

TEST(Trainer, ElapsedTimeAndSerialization) {
  TempDir dir("trainer");
  auto log = std::make_shared<std::vector<std::string>>();
  FakeUpdater updater(5);
  Trainer trainer(updater, {7, "iteration"}, dir.path());
  trainer.extend(Recorder("r", log), {2, "iteration"});
  EXPECT_EQ(trainer.elapsed_time(), 0.0);
  trainer.run();
  const double elapsed = trainer.elapsed_time();
  EXPECT_GT(elapsed, 0.0);
  EXPECT_EQ(trainer.elapsed_time(), elapsed);  // frozen after run

  rensa::serializers::DictionarySerializer saver;
  trainer.serialize(saver);
  const auto& saved = saver.target();
  for (const char* key : {"updater/iteration", "extensions/Recorder/calls",
                          "extension_triggers/Recorder/_previous_iteration", "stop_trigger/_previous_iteration",
                          "_snapshot_elapsed_time", "rng/seed", "rng/offset"}) {
    EXPECT_EQ(saved.count(key), 1u) << key;
  }
  EXPECT_EQ(saved.at("updater/iteration").item<int64_t>(), 7);
  EXPECT_EQ(saved.at("extensions/Recorder/calls").item<int64_t>(), 3);

  FakeUpdater u2(5);
  Trainer restored(u2, {10, "iteration"}, dir.path());
  auto log2 = std::make_shared<std::vector<std::string>>();
  restored.extend(Recorder("r", log2), {2, "iteration"});
  rensa::serializers::DictionaryDeserializer loader(saved, "snapshot");
  restored.serialize(loader);
  EXPECT_EQ(u2.iteration(), 7);
  EXPECT_EQ(restored.get_extension<Recorder>("Recorder").calls, 3);
  EXPECT_EQ(restored.elapsed_time(), elapsed);
  // Extending the run to 10 iterations: 3 more updates, the recorder fires at 8 and 10.
  restored.run();
  EXPECT_EQ(u2.updates, 3);
  EXPECT_EQ(restored.get_extension<Recorder>("Recorder").calls, 5);
  EXPECT_GE(restored.elapsed_time(), elapsed);
}

// --- StandardUpdater ---------------------------------------------------------------------------

struct TinyProblem {
  std::shared_ptr<rensa::datasets::TupleDataset> dataset;
  std::shared_ptr<rensa::links::Linear> predictor;
  std::unique_ptr<rensa::links::Classifier> model;
  rensa::optimizers::SGD optimizer{0.1};

  explicit TinyProblem(int64_t n = 6) {
    std::vector<float> x;
    std::vector<int32_t> t;
    for (int64_t i = 0; i < n; ++i) {
      x.push_back(static_cast<float>(i % 2 ? 1.0 : -1.0));
      x.push_back(0.5f);
      t.push_back(static_cast<int32_t>(i % 2));
    }
    dataset = std::make_shared<rensa::datasets::TupleDataset>(
        std::vector<rensa::Array>{rensa::Array::from_vector(x, {n, 2}), rensa::Array::from_vector(t, {n})});
    predictor = std::make_shared<rensa::links::Linear>(2, 2, rensa::links::LinearOptions{.seed = 3});
    model = std::make_unique<rensa::links::Classifier>(predictor);
    optimizer.setup(*model);
  }
};

TEST(StandardUpdater, UpdatesReportsAndCountsEpochs) {
  TempDir dir("updater");
  TinyProblem p(6);
  rensa::iterators::SerialIterator it(p.dataset, 3, {.repeat = true, .shuffle = false, .seed = 0});
  rensa::training::StandardUpdater updater(it, p.optimizer);
  EXPECT_EQ(&updater.get_optimizer("main"), &p.optimizer);
  EXPECT_EQ(&updater.get_iterator("main"), &it);
  rensa::test::expect_error<rensa::ValueError>([&] { updater.get_optimizer("other"); },
                                               {"get_optimizer", "other", "\"main\""});
  Trainer trainer(updater, {5, "iteration"}, dir.path());
  std::vector<std::string> keys;
  trainer.extend([&](Trainer& t) {
    for (const auto& [k, v] : t.observation()) keys.push_back(k);
  });
  const auto before = p.predictor->W().array().copy();
  trainer.run();
  EXPECT_EQ(updater.iteration(), 5);
  EXPECT_EQ(updater.epoch(), 2);
  EXPECT_DOUBLE_EQ(updater.epoch_detail(), 2.5);
  EXPECT_EQ(p.optimizer.epoch(), 2);  // new_epoch() at the end of each epoch
  EXPECT_EQ(p.optimizer.t(), 5);
  EXPECT_FALSE(rensa::allclose(before, p.predictor->W().array(), 0, 0, false));
  // Each iteration: the classifier's accuracy and loss, and the updater's data_wait.
  ASSERT_EQ(keys.size(), 15u);
  EXPECT_EQ(keys[0], "main/accuracy");
  EXPECT_EQ(keys[1], "main/data_wait");
  EXPECT_EQ(keys[2], "main/loss");
  EXPECT_GE(updater.last_data_wait(), 0.0);
}

TEST(StandardUpdater, CustomLossFunctionAndConverter) {
  TinyProblem p(4);
  rensa::iterators::SerialIterator it(p.dataset, 2, {.repeat = true, .shuffle = false, .seed = 0});
  int converted = 0;
  int64_t columns = 0;
  rensa::training::StandardUpdater updater(
      it, p.optimizer,
      {.converter =
           [&](const rensa::iterators::Batch& batch, rensa::Device device) {
             ++converted;
             return rensa::datasets::concat_examples(batch, device);
           },
       .loss_func =
           [&](const std::vector<rensa::Variable>& in) {
             columns = static_cast<int64_t>(in.size());
             return p.model->forward(in);
           }});
  updater.update();
  EXPECT_EQ(converted, 1);
  EXPECT_EQ(columns, 2);
  EXPECT_EQ(updater.iteration(), 1);
}

TEST(StandardUpdater, SerializeKeysAndErrors) {
  TinyProblem p(4);
  rensa::iterators::SerialIterator it(p.dataset, 2, {.repeat = false, .shuffle = false, .seed = 0});
  rensa::training::StandardUpdater updater(it, p.optimizer);
  updater.update();
  rensa::serializers::DictionarySerializer saver;
  updater.serialize(saver);
  bool has_iterator = false, has_model = false;
  for (const auto& [k, v] : saver.target()) {
    has_iterator = has_iterator || k.rfind("iterator:main/", 0) == 0;
    has_model = has_model || k == "model:main/predictor/W";
  }
  EXPECT_TRUE(has_iterator);
  EXPECT_TRUE(has_model);
  EXPECT_EQ(saver.target().at("iteration").item<int64_t>(), 1);
  updater.update();
  rensa::test::expect_error<rensa::ValueError>([&] { updater.update(); }, {"StandardUpdater", "exhausted"});

  rensa::optimizers::SGD unattached;
  rensa::test::expect_error<rensa::ValueError>([&] { rensa::training::StandardUpdater u(it, unattached); },
                                               {"StandardUpdater", "setup"});
}

TEST(StandardUpdater, OptimizersNeedNoMainUnlessTheDefaultStepRuns) {
  // A GAN's updater names its optimizers "gen" and "dis" (Chainer allows it); the default step
  // then says which one it misses.
  TinyProblem p(4);
  rensa::iterators::SerialIterator it(p.dataset, 2, {.shuffle = false, .seed = 0});
  rensa::training::StandardUpdater updater({{"main", &it}}, {{"gen", &p.optimizer}});
  EXPECT_EQ(&updater.get_optimizer("gen"), &p.optimizer);
  rensa::test::expect_error<rensa::ValueError>([&] { updater.update(); }, {"get_optimizer", "'main'", "gen"});
  rensa::test::expect_error<rensa::ValueError>(
      [&] { rensa::training::StandardUpdater u({{"main", &it}}, std::map<std::string, rensa::optimizers::Optimizer*>{}); },
      {"StandardUpdater", "no optimizer"});
}

TEST(DictSummary, WeightedMeanStdAndSerialization) {
  rensa::training::DictSummary s;
  s.add({{"a", 1.0}, {"b", 2.0}}, 3);
  s.add({{"a", 4.0}}, 1);
  const auto mean = s.mean();
  EXPECT_DOUBLE_EQ(mean.at("a"), (3.0 + 4.0) / 4.0);
  EXPECT_DOUBLE_EQ(mean.at("b"), 2.0);
  EXPECT_NEAR(s.std().at("a"), std::sqrt((3 * 1.0 + 16.0) / 4.0 - 1.75 * 1.75), 1e-12);
  rensa::serializers::DictionarySerializer saver;
  s.serialize(saver);
  rensa::serializers::DictionaryDeserializer loader(saver.target(), "summary");
  rensa::training::DictSummary t;
  t.add("junk", 1.0);
  t.serialize(loader);
  EXPECT_EQ(t.mean(), mean);
  EXPECT_EQ(t.entries().count("junk"), 0u);
  rensa::test::expect_error<rensa::ValueError>([&] { s.add("a", 1.0, 0.0); }, {"DictSummary", "'a'", "positive"});
}

// Chainer's Summary: one scalar's weighted mean and standard deviation, saved under Chainer's keys.
TEST(Summary, MeanStatisticsMergeAndSerialization) {
  rensa::training::Summary s;
  rensa::test::expect_error<rensa::ValueError>([&] { (void)s.compute_mean(); }, {"Summary", "no value"});
  s.add(2.0);
  s.add(5.0, 3.0);
  EXPECT_DOUBLE_EQ(s.compute_mean(), (2.0 + 15.0) / 4.0);
  const auto [mean, stddev] = s.make_statistics();
  EXPECT_DOUBLE_EQ(mean, 4.25);
  EXPECT_NEAR(stddev, std::sqrt((4.0 + 75.0) / 4.0 - 4.25 * 4.25), 1e-12);
  rensa::training::Summary other;
  other.add(1.0, 4.0);
  s.merge(other);
  EXPECT_DOUBLE_EQ(s.compute_mean(), (17.0 + 4.0) / 8.0);
  rensa::serializers::DictionarySerializer saver;
  s.serialize(saver);
  EXPECT_EQ(saver.target().count("_x"), 1u);
  EXPECT_EQ(saver.target().count("_x2"), 1u);
  EXPECT_EQ(saver.target().at("_n").item<double>(), 8.0);
  rensa::serializers::DictionaryDeserializer loader(saver.target(), "summary");
  rensa::training::Summary t;
  t.serialize(loader);
  EXPECT_EQ(t.compute_mean(), s.compute_mean());
  rensa::test::expect_error<rensa::ValueError>([&] { s.add(1.0, -1.0); }, {"Summary", "positive", "-1"});
}

// get_current_reporter is the trainer's inside its loop; add_observers names sub-links by prefix.
TEST(Reporter, CurrentReporterAndAddObservers) {
  rensa::test::expect_error<rensa::ValueError>([] { (void)rensa::get_current_reporter(); },
                                               {"get_current_reporter", "no reporter"});
  rensa::Chain root;
  auto l1 = std::make_shared<rensa::links::Linear>(2, 2);
  root.add_link("l1", l1);
  rensa::Reporter reporter;
  reporter.add_observers("main", root.namedlinks(true));
  rensa::Observation obs;
  {
    rensa::Reporter::Scope scope(reporter, obs);
    EXPECT_EQ(&rensa::get_current_reporter(), &reporter);
    rensa::report({{"loss", 1.5}}, l1.get());
  }
  EXPECT_EQ(obs, (rensa::Observation{{"main/l1/loss", 1.5}}));
  EXPECT_EQ(root.namedlinks(true).size(), 1u);
  EXPECT_EQ(root.namedlinks().front().first, "/");

  TempDir dir("reporter");
  FakeUpdater updater(2);
  Trainer trainer(updater, {1, "iteration"}, dir.path());
  const rensa::Reporter* seen = nullptr;
  trainer.extend(rensa::training::make_extension([&](Trainer&) { seen = &rensa::get_current_reporter(); }));
  trainer.run();
  EXPECT_EQ(seen, &trainer.reporter());
}

}  // namespace
