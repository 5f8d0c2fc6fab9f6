// extensions::Timeline on a real training run: the trace file (Chrome's format) holds each step's
// data wait, forward, backward and update inside the step, the extensions, thread names; the summary
// per interval adds up; nothing is recorded once the trainer is done.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "rensa/rensa.h"
#include "rensa/training.h"
#include "tests/unit/test_util.h"
#include "tests/unit/training/training_test_util.h"

namespace rensa {
namespace {

namespace E = extensions;
using testing_training::TempDir;
using training::Trainer;

std::shared_ptr<datasets::TupleDataset> data(int64_t n) {
  std::vector<float> x;
  std::vector<int32_t> t;
  for (int64_t i = 0; i < n; ++i) {
    x.push_back(static_cast<float>(i % 7) - 3.0f);
    x.push_back(static_cast<float>(i % 5) - 2.0f);
    t.push_back(static_cast<int32_t>(i % 2));
  }
  return std::make_shared<datasets::TupleDataset>(
      std::vector<Array>{Array::from_vector(x, {n, 2}), Array::from_vector(t, {n})});
}

TEST(TimelineExtension, WritesEveryStepsPhasesAndReportsTheSummary) {
  TempDir dir("timeline");
  auto train = data(40);
  links::Classifier model(std::make_shared<links::Linear>(2, 2, links::LinearOptions{.seed = 5}));
  optimizers::SGD optimizer(0.1);
  optimizer.setup(model);
  iterators::SerialIterator it(train, 10, {.repeat = true, .shuffle = false, .seed = 0});
  training::StandardUpdater updater(it, optimizer);
  Trainer trainer(updater, {3, "epoch"}, dir.path());
  auto tl = std::make_shared<E::Timeline>(E::TimelineOptions{.filename = "trace.json", .trigger = {1, "epoch"}});
  trainer.extend(tl);
  trainer.extend(E::LogReport());
  trainer.run();
  EXPECT_FALSE(timeline::recording());

  // The summary of the last epoch, and in every log entry.
  const E::TimelineSummary& s = tl->last_summary();
  EXPECT_EQ(s.steps, 4);
  EXPECT_GT(s.step, 0);
  EXPECT_GT(s.compute, 0);
  EXPECT_LE(s.compute + s.data_wait, s.step * 1.0001);
  EXPECT_EQ(s.communication, 0);
  EXPECT_EQ(s.exposed, 0);
  const auto& log = trainer.get_extension<E::LogReport>("LogReport").log();
  ASSERT_EQ(log.size(), 3u);
  for (const auto& entry : log) {
    for (const char* key :
         {"timeline/step", "timeline/compute", "timeline/communication", "timeline/exposed", "timeline/data_wait"}) {
      EXPECT_TRUE(entry.count(key)) << key;
    }
  }

  std::ifstream in(dir / "trace.json");
  ASSERT_TRUE(in);
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::map<std::string, int> count;
  std::vector<std::pair<double, double>> steps;
  bool named = false;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "M") {
      if (e.at("name") == "thread_name" && e.at("args").at("name") == "training") named = true;
      continue;
    }
    ASSERT_EQ(e.at("ph"), "X");
    const std::string name = e.at("name");
    ++count[name];
    EXPECT_GE(e.at("dur").get<double>(), 0.0) << name;
    if (name == "step")
      steps.emplace_back(e.at("ts").get<double>(), e.at("ts").get<double>() + e.at("dur").get<double>());
  }
  EXPECT_TRUE(named);
  EXPECT_EQ(count["step"], 12);
  EXPECT_EQ(count["data"], 12);
  EXPECT_EQ(count["forward"], 12);
  EXPECT_EQ(count["backward"], 12);
  EXPECT_EQ(count["update"], 12);
  EXPECT_EQ(count["Timeline"], 3);    // the extensions, by name
  EXPECT_EQ(count["LogReport"], 12);  // it collects every iteration
  // Every forward lies inside a step.
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X" || e.at("name") != "forward") continue;
    const double b = e.at("ts"), end = b + e.at("dur").get<double>();
    bool inside = false;
    for (const auto& [sb, se] : steps) inside = inside || (sb <= b && end <= se);
    EXPECT_TRUE(inside) << "forward at " << b;
  }
}

TEST(TimelineExtension, BadOptionsAndTwoAtOnce) {
  test::expect_error<ValueError>([] { E::Timeline t(E::TimelineOptions{.filename = ""}); }, {"Timeline", "filename"});
  test::expect_error<ValueError>([] { E::Timeline t(E::TimelineOptions{.max_events = -2}); }, {"max_events", "-2"});
  TempDir dir("timeline_twice");
  testing_training::FakeUpdater u;
  Trainer trainer(u, {1, "iteration"}, dir.path());
  trainer.extend(std::make_shared<E::Timeline>(), "first");
  trainer.extend(std::make_shared<E::Timeline>(E::TimelineOptions{.filename = "other.json"}), "second");
  test::expect_error<ValueError>([&] { trainer.run(); }, {"already active"});
  EXPECT_FALSE(timeline::recording());
}

}  // namespace
}  // namespace rensa
