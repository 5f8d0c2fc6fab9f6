// rensa::mn::timeline: every rank's file, rank 0's merged file with a track per rank on one clock,
// each gradient bucket's allreduce on the communication thread and the training thread's waits,
// and the slowest rank in the summary.
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "rensa/mn/multi_node_optimizer.h"
#include "rensa/mn/scatter.h"
#include "rensa/mn/timeline.h"
#include "tests/mn/train_test_util.h"
#include "tests/unit/test_util.h"
#include "tests/unit/training/training_test_util.h"

namespace rensa::mn::test {
namespace {

using rensa::test::expect_error;
using rensa::testing_training::TempDir;

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  return nlohmann::json::parse(in);
}

TEST(MultiNodeTimeline, PerRankAndMergedFiles) {
  Communicator c = comm();
  const int me = c.rank(), n = c.size();
  TempDir dir("mn_timeline");
  const auto data = scatter_dataset(three_class_points(16 * n), c, {.shuffle = false, .seed = 0});
  L::Classifier model(std::make_shared<L::Linear>(2, 3, L::LinearOptions{.seed = 3}));
  auto opt = create_multi_node_optimizer(std::make_unique<optimizers::SGD>(0.1), c, {.bucket_cap = 16});
  opt->setup(model);
  iterators::SerialIterator it(data, 4, {.shuffle = false, .seed = 0});
  training::StandardUpdater updater(it, *opt);
  training::Trainer trainer(updater, {2, "epoch"}, dir.path());
  auto tl = timeline(c, {.filename = "tl.json", .trigger = {1, "epoch"}});
  trainer.extend(tl);
  trainer.run();

  const auto obs = trainer.observation();
  ASSERT_TRUE(obs.count("timeline/slowest_rank"));
  EXPECT_GE(obs.at("timeline/slowest_rank"), 0);
  EXPECT_LT(obs.at("timeline/slowest_rank"), n);
  EXPECT_GE(obs.at("timeline/slowest_step"), tl->last_summary().step);
  EXPECT_GT(tl->last_summary().communication, 0);
  EXPECT_GT(tl->last_summary().exposed, 0);
  EXPECT_LT(tl->last_summary().exposed, 1);

  // This rank's own file: its allreduce requests on the communication thread (two buckets a step).
  const nlohmann::json mine = read_json(dir / ("tl.rank" + std::to_string(me) + ".json"));
  std::map<int, std::string> threads;
  std::map<std::string, int> count;
  for (const auto& e : mine.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name") threads[e.at("tid")] = e.at("args").at("name");
  }
  for (const auto& e : mine.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    ++count[e.at("name").get<std::string>()];
    if (e.at("name") == "allreduce") {
      EXPECT_EQ(threads[e.at("tid")], "communication");
    }
    if (e.at("name") == "step") {
      EXPECT_EQ(threads[e.at("tid")], "training");
    }
  }
  EXPECT_EQ(count["step"], 8);
  EXPECT_EQ(count["launch bucket"], 16);
  EXPECT_EQ(count["allreduce"], 16);
  EXPECT_EQ(count["wait"], 16);

  if (me != 0) {
    EXPECT_FALSE(std::filesystem::exists(dir / "tl.json"));
    return;
  }
  // Rank 0's merged file: a process per rank, every rank's steps, on one clock (the steps of one
  // iteration end together: each waits for every rank's gradients).
  const nlohmann::json merged = read_json(dir / "tl.json");
  std::set<std::string> processes;
  std::map<int, std::vector<double>> step_ends;
  for (const auto& e : merged.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "process_name") processes.insert(e.at("args").at("name"));
    if (e.at("ph") == "X" && e.at("name") == "step") {
      step_ends[e.at("pid")].push_back(e.at("ts").get<double>() + e.at("dur").get<double>());
    }
  }
  EXPECT_EQ(static_cast<int>(processes.size()), n);
  EXPECT_TRUE(processes.count("rank " + std::to_string(n - 1)));
  ASSERT_EQ(static_cast<int>(step_ends.size()), n);
  for (const auto& [pid, ends] : step_ends) {
    ASSERT_EQ(ends.size(), 8u) << "rank " << pid;
    // Within 0.5 s of rank 0's (microseconds): clocks aligned, not one rank's clock far off.
    EXPECT_NEAR(ends.back(), step_ends[0].back(), 5e5) << "rank " << pid;
  }
}

TEST(MultiNodeTimeline, NullCommunicator) {
  expect_error<ValueError>([] { (void)timeline(Communicator()); }, {"mn::timeline", "null communicator"});
}

}  // namespace
}  // namespace rensa::mn::test
