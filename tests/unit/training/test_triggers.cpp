// Firing schedules of the triggers, their state across serialization, and their argument checks.

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "rensa/serializers/npz.h"
#include "rensa/training/trainer.h"
#include "rensa/training/triggers.h"
#include "tests/unit/test_util.h"
#include "tests/unit/training/training_test_util.h"

namespace {

using rensa::testing_training::FakeUpdater;
using rensa::training::Trainer;
using rensa::training::Trigger;

// The iterations (1-based, after each update) at which `trigger` fires over `n` updates.
std::vector<int64_t> fire_points(Trigger trigger, int64_t n, int64_t per_epoch = 4) {
  FakeUpdater updater(per_epoch);
  Trainer trainer(updater, Trigger());
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) {
    updater.update();
    if (trigger(trainer)) out.push_back(updater.iteration());
  }
  return out;
}

TEST(IntervalTrigger, Iterations) {
  EXPECT_EQ(fire_points({3, "iteration"}, 10), (std::vector<int64_t>{3, 6, 9}));
  EXPECT_EQ(fire_points({1, "iteration"}, 3), (std::vector<int64_t>{1, 2, 3}));
}

TEST(IntervalTrigger, Epochs) {
  // 4 iterations per epoch: every 1 epoch fires at 4, 8, 12; every 2 epochs at 8.
  EXPECT_EQ(fire_points({1, "epoch"}, 12), (std::vector<int64_t>{4, 8, 12}));
  EXPECT_EQ(fire_points({2, "epoch"}, 12), (std::vector<int64_t>{8}));
}

TEST(IntervalTrigger, FractionalEpochsUseEpochDetail) {
  EXPECT_EQ(fire_points({0.5, "epoch"}, 8), (std::vector<int64_t>{2, 4, 6, 8}));
  // 3 iterations per epoch: epoch_detail 1/3, 2/3, 1, 4/3, ... fires when floor(detail / 0.5) changes.
  EXPECT_EQ(fire_points({0.5, "epoch"}, 6, 3), (std::vector<int64_t>{2, 3, 5, 6}));
}

TEST(IntervalTrigger, TrainingLengthAndAccessors) {
  rensa::training::IntervalTrigger t(20, "epoch");
  ASSERT_TRUE(t.training_length().has_value());
  EXPECT_EQ(t.training_length()->period, 20);
  EXPECT_EQ(t.training_length()->unit, "epoch");
  Trigger spec = {20, "epoch"};
  ASSERT_NE(spec.get<rensa::training::IntervalTrigger>(), nullptr);
  EXPECT_EQ(spec.get<rensa::training::IntervalTrigger>()->period(), 20);
  int64_t n = 7;
  Trigger from_var = {n, "iteration"};
  EXPECT_EQ(from_var.get<rensa::training::IntervalTrigger>()->period(), 7);
}

TEST(IntervalTrigger, BadArguments) {
  rensa::test::expect_error<rensa::ValueError>([] { Trigger t = {1, "epochs"}; },
                                                  {"IntervalTrigger", "\"epoch\"", "\"iteration\"", "epochs"});
  rensa::test::expect_error<rensa::ValueError>([] { Trigger t = {0, "epoch"}; }, {"IntervalTrigger", "positive"});
  rensa::test::expect_error<rensa::ValueError>([] { Trigger t = {1.5, "iteration"}; },
                                                  {"IntervalTrigger", "whole number"});
}

TEST(Trigger, NullNeverFiresAndLambdaWraps) {
  EXPECT_TRUE(fire_points(Trigger(), 5).empty());
  EXPECT_EQ(fire_points([](Trainer& t) { return t.updater().iteration() % 2 == 1; }, 5),
            (std::vector<int64_t>{1, 3, 5}));
}

TEST(Trigger, CopiesHaveTheirOwnState) {
  FakeUpdater updater(4);
  Trainer trainer(updater, Trigger());
  Trigger a = {2, "iteration"};
  updater.update();
  EXPECT_FALSE(a(trainer));
  Trigger b = a;  // copies previous_iteration = 1
  updater.update();
  EXPECT_TRUE(a(trainer));
  EXPECT_TRUE(b(trainer));  // b was not affected by a's second call
  EXPECT_FALSE(a(trainer));
}

TEST(ManualScheduleTrigger, FiresAtPoints) {
  EXPECT_EQ(fire_points(rensa::training::ManualScheduleTrigger({2, 5, 7}, "iteration"), 10),
            (std::vector<int64_t>{2, 5, 7}));
  EXPECT_EQ(fire_points(rensa::training::ManualScheduleTrigger({0.5, 2}, "epoch"), 12),
            (std::vector<int64_t>{2, 8}));
  FakeUpdater updater(4);
  Trainer trainer(updater, Trigger());
  rensa::training::ManualScheduleTrigger t({2}, "iteration");
  updater.update();
  t(trainer);
  EXPECT_FALSE(t.finished());
  updater.update();
  EXPECT_TRUE(t(trainer));
  EXPECT_TRUE(t.finished());
  rensa::test::expect_error<rensa::ValueError>(
      [] { rensa::training::ManualScheduleTrigger({1}, "epochs"); }, {"ManualScheduleTrigger", "\"epoch\"", "epochs"});
}

// Feeds `values[i]` as observation "v" at iteration i+1 and records where the trigger fires.
std::vector<int64_t> best_points(Trigger trigger, const std::vector<double>& values) {
  FakeUpdater updater(2);
  Trainer trainer(updater, Trigger());
  std::vector<int64_t> out;
  for (double v : values) {
    updater.update();
    trainer.observation()["v"] = v;
    if (trigger(trainer)) out.push_back(updater.iteration());
  }
  return out;
}

TEST(BestValueTrigger, MinAndMaxOverIntervalMeans) {
  // Per 2-iteration interval means: 2, 1, 3, 0.5.
  const std::vector<double> values{1, 3, 0, 2, 3, 3, 0, 1};
  EXPECT_EQ(best_points(rensa::training::MinValueTrigger("v", {2, "iteration"}), values),
            (std::vector<int64_t>{2, 4, 8}));
  EXPECT_EQ(best_points(rensa::training::MaxValueTrigger("v", {2, "iteration"}), values),
            (std::vector<int64_t>{2, 6}));
  // By epoch (2 iterations each here).
  EXPECT_EQ(best_points(rensa::training::MinValueTrigger("v"), values), (std::vector<int64_t>{2, 4, 8}));
}

TEST(EarlyStoppingTrigger, StopsAfterPatience) {
  using rensa::training::EarlyStoppingTrigger;
  // Interval means (per iteration): 5, 4, 4.5, 4.2, 4.1 -> improvements at 1, 2; then 3 without.
  const std::vector<double> values{5, 4, 4.5, 4.2, 4.1, 3};
  EXPECT_EQ(best_points(EarlyStoppingTrigger({1, "iteration"}, "v", 3, "min", {100, "iteration"}), values),
            (std::vector<int64_t>{5}));
  // Max trigger wins regardless.
  EXPECT_EQ(best_points(EarlyStoppingTrigger({1, "iteration"}, "v", 10, "min", {3, "iteration"}), values).front(), 3);
  // "auto" maximizes accuracy.
  EarlyStoppingTrigger acc({1, "iteration"}, "main/accuracy", 1);
  EXPECT_TRUE(acc.training_length().has_value());
  EXPECT_EQ(acc.training_length()->period, 100);
  rensa::test::expect_error<rensa::ValueError>([] { EarlyStoppingTrigger({1, "epoch"}, "v", 3, "up"); },
                                                  {"EarlyStoppingTrigger", "\"min\"", "up"});
}

// A trigger saved after k calls and loaded into a fresh one fires exactly as the original.
template <class MakeTrigger>
void expect_resumes(MakeTrigger make, int64_t n, int64_t split, bool observe) {
  auto run = [&](Trigger& trigger, FakeUpdater& updater, Trainer& trainer, int64_t from, int64_t to) {
    std::vector<int64_t> out;
    for (int64_t i = from; i < to; ++i) {
      updater.update();
      if (observe) trainer.observation()["v"] = static_cast<double>((i * 7) % 5);
      if (trigger(trainer)) out.push_back(updater.iteration());
    }
    return out;
  };
  FakeUpdater u1(3);
  Trainer t1(u1, Trigger());
  Trigger full = make();
  const std::vector<int64_t> expected = run(full, u1, t1, 0, n);
  EXPECT_FALSE(expected.empty());

  FakeUpdater u2(3);
  Trainer t2(u2, Trigger());
  Trigger first = make();
  std::vector<int64_t> got = run(first, u2, t2, 0, split);
  rensa::serializers::DictionarySerializer saver;
  first.serialize(saver);
  rensa::serializers::DictionaryDeserializer loader(saver.target(), "trigger");
  FakeUpdater u3(3);
  u3.set_iteration(split);
  Trainer t3(u3, Trigger());
  Trigger second = make();
  second.serialize(loader);
  const std::vector<int64_t> rest = run(second, u3, t3, split, n);
  got.insert(got.end(), rest.begin(), rest.end());
  EXPECT_EQ(got, expected);
}

TEST(Triggers, SerializeResumesExactly) {
  expect_resumes([] { return Trigger{0.5, "epoch"}; }, 20, 7, false);
  expect_resumes([] { return Trigger{4, "iteration"}; }, 20, 7, false);
  expect_resumes([] { return Trigger(rensa::training::ManualScheduleTrigger({2, 9, 15}, "iteration")); }, 20, 9,
                 false);
  expect_resumes([] { return Trigger(rensa::training::MinValueTrigger("v", {4, "iteration"})); }, 30, 10, true);
  expect_resumes([] { return Trigger(rensa::training::MaxValueTrigger("v", {1, "epoch"})); }, 30, 10, true);
  expect_resumes(
      [] {
        return Trigger(rensa::training::EarlyStoppingTrigger({2, "iteration"}, "v", 2, "min", {100, "iteration"}));
      },
      30, 5, true);
}

}  // namespace

namespace {

TEST(OnceTrigger, FiresAtTheFirstIterationOnly) {
  EXPECT_EQ(fire_points(rensa::training::OnceTrigger(), 5), (std::vector<int64_t>{1}));
  rensa::training::OnceTrigger t;
  EXPECT_FALSE(t.finished());
  FakeUpdater u;
  Trainer trainer(u, Trigger());
  EXPECT_TRUE(t(trainer));
  EXPECT_TRUE(t.finished());
}

// Chainer's semantics across a snapshot: the flag is saved; call_on_resume fires once more after a
// resume; a snapshot without the flag counts as "has fired".
TEST(OnceTrigger, ResumeFollowsCallOnResume) {
  FakeUpdater u;
  Trainer trainer(u, Trigger());
  rensa::training::OnceTrigger fired;
  fired(trainer);
  rensa::serializers::DictionarySerializer saver;
  fired.serialize(saver);
  for (bool call_on_resume : {false, true}) {
    rensa::serializers::DictionaryDeserializer loader(saver.target(), "trigger");
    rensa::training::OnceTrigger resumed(call_on_resume);
    resumed.serialize(loader);
    EXPECT_EQ(resumed.finished(), !call_on_resume);
    EXPECT_EQ(resumed(trainer), call_on_resume);
    EXPECT_FALSE(resumed(trainer));
  }
  rensa::serializers::DictionarySerializer empty;
  rensa::serializers::DictionaryDeserializer loader(empty.target(), "trigger");
  rensa::training::OnceTrigger late;
  late.serialize(loader);
  EXPECT_TRUE(late.finished());
}

TEST(TimeTrigger, FiresEachPeriodOfElapsedTime) {
  FakeUpdater u;
  Trainer trainer(u, {1, "iteration"});
  rensa::training::TimeTrigger t(1e-3);
  EXPECT_FALSE(t(trainer));  // not running: elapsed time 0
  // Elapsed time is the trainer's, so drive it through a run of the trainer.
  std::vector<double> fired;
  rensa::testing_training::TempDir dir("time_trigger");
  Trainer timed(u, {3, "iteration"}, dir.path());
  timed.extend(
      [&](Trainer& tr) {
        const auto start = std::chrono::steady_clock::now();
        while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(2)) {
        }
        if (t(tr)) fired.push_back(tr.elapsed_time());
      },
      "spin", {1, "iteration"});
  timed.run();
  EXPECT_EQ(fired.size(), 3u);  // 2 ms per iteration passes a 1 ms boundary every time
  rensa::serializers::DictionarySerializer saver;
  t.serialize(saver);
  EXPECT_THROW(rensa::training::TimeTrigger(0), rensa::ValueError);
}

}  // namespace
