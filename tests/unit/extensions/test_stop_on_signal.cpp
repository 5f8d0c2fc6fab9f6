// StopOnSignal: a signal finishes the iteration, saves, and ends run() with Interrupted; handlers are
// restored; a second signal ends the process. Snapshot retention and resuming from a directory.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "rensa/extensions/snapshot.h"
#include "rensa/extensions/stop_on_signal.h"
#include "rensa/training/trainer.h"
#include "tests/unit/test_util.h"
#include "tests/unit/training/training_test_util.h"

namespace {

namespace E = rensa::extensions;
namespace fs = std::filesystem;
using rensa::testing_training::FakeUpdater;
using rensa::testing_training::TempDir;
using rensa::training::Trainer;

// The handler of `sig` now.
void (*handler_of(int sig))(int) {
  struct sigaction now {};
  sigaction(sig, nullptr, &now);
  return now.sa_handler;
}

// Runs 10 iterations (4 per epoch) with StopOnSignal saving through a snapshot; raises `sig` in the
// extension of iteration `at` (0: never).
std::optional<E::Interrupted> run_until(const TempDir& dir, int sig, int64_t at, FakeUpdater& updater,
                                        std::function<int(int)> any_rank = {}) {
  Trainer trainer(updater, {10, "iteration"}, dir.path());
  auto snap = std::make_shared<E::Snapshot>(E::snapshot());
  trainer.extend(snap);
  trainer.extend(std::make_shared<E::StopOnSignal>(
                     [snap](Trainer& t) {
                       (*snap)(t);
                       return snap->path_for(t);
                     },
                     std::move(any_rank)),
                 "stop");
  trainer.extend([&](Trainer& t) {
    if (t.updater().iteration() == at) raise(sig);
  });
  try {
    trainer.run();
  } catch (const E::Interrupted& e) {
    return e;
  }
  return std::nullopt;
}

TEST(StopOnSignal, FinishesTheIterationSavesAndStops) {
  for (int sig : {SIGINT, SIGTERM, SIGUSR1}) {
    SCOPED_TRACE(sig);
    TempDir dir("stop_on_signal");
    FakeUpdater updater(4);
    const auto before = handler_of(sig);
    const auto stopped = run_until(dir, sig, 6, updater);
    ASSERT_TRUE(stopped.has_value());
    EXPECT_EQ(updater.iteration(), 6);
    EXPECT_EQ(stopped->signal(), sig);
    EXPECT_EQ(stopped->exit_code(), 128 + sig);
    EXPECT_EQ(stopped->snapshot_path(), dir / "snapshot_iter_6");
    EXPECT_TRUE(fs::exists(dir / "snapshot_iter_6"));
    const std::string what = stopped->what();
    EXPECT_NE(what.find("after iteration 6 (epoch 1.50)"), std::string::npos) << what;
    EXPECT_NE(what.find(sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGUSR1"), std::string::npos) << what;
    EXPECT_NE(what.find("snapshot saved: " + dir / "snapshot_iter_6"), std::string::npos) << what;
    EXPECT_EQ(handler_of(sig), before);  // restored by finalize
    EXPECT_EQ(E::StopOnSignal::received(), sig);
  }
}

TEST(StopOnSignal, DestroyingACopyLeavesTheRunningOneAlone) {
  // Regression: a copy once took the original's "installed" flag, and destroying it put the previous
  // handlers back and freed the process-wide slot while the original was still running.
  TempDir dir("stop_on_signal");
  FakeUpdater updater(4);
  Trainer trainer(updater, {10, "iteration"}, dir.path());
  const auto before = handler_of(SIGTERM);
  E::StopOnSignal running;
  running.initialize(trainer);
  const auto installed = handler_of(SIGTERM);
  EXPECT_NE(installed, before);
  { const E::StopOnSignal copy(running); }
  EXPECT_EQ(handler_of(SIGTERM), installed);
  // The slot is still taken: a second one cannot start.
  E::StopOnSignal second;
  rensa::test::expect_error<rensa::Error>([&] { second.initialize(trainer); }, {"already running"});
  running.finalize(trainer);
  EXPECT_EQ(handler_of(SIGTERM), before);
}

TEST(StopOnSignal, WithoutASignalTrainsToTheEnd) {
  // Regression: this test expected SIG_DFL afterwards and so failed whenever the suite itself ran with
  // SIGINT ignored (started in the background by a non-interactive shell). It now sets both kinds of
  // disposition itself and expects each back.
  for (auto disposition : {SIG_DFL, SIG_IGN}) {
    const auto outer = std::signal(SIGINT, disposition);
    TempDir dir("stop_on_signal");
    FakeUpdater updater(4);
    EXPECT_FALSE(run_until(dir, SIGINT, 0, updater).has_value());
    EXPECT_EQ(updater.iteration(), 10);
    EXPECT_EQ(handler_of(SIGINT), disposition);
    std::signal(SIGINT, outer);
  }
}

// Under rensa::mn the ranks agree: a signal another rank received stops this one too.
TEST(StopOnSignal, StopsWhenAnyRankSaysSo) {
  TempDir dir("stop_on_signal");
  FakeUpdater updater(4);
  int calls = 0;
  const auto stopped = run_until(dir, SIGINT, 0, updater, [&](int mine) {
    EXPECT_EQ(mine, 0);
    return ++calls == 3 ? SIGTERM : 0;
  });
  ASSERT_TRUE(stopped.has_value());
  EXPECT_EQ(updater.iteration(), 3);
  EXPECT_EQ(stopped->signal(), SIGTERM);
}

TEST(StopOnSignal, OneAtATime) {
  TempDir dir("stop_on_signal");
  FakeUpdater updater(4);
  Trainer trainer(updater, {1, "iteration"}, dir.path());
  E::StopOnSignal a, b;
  a.initialize(trainer);
  rensa::test::expect_error<rensa::Error>([&] { b.initialize(trainer); }, {"StopOnSignal", "already running"});
  a.finalize(trainer);
  b.initialize(trainer);  // free again
  b.finalize(trainer);
}

TEST(StopOnSignalDeathTest, ASecondSignalEndsTheProcess) {
  EXPECT_EXIT(
      {
        TempDir dir("stop_on_signal");
        FakeUpdater updater(4);
        Trainer trainer(updater, {1, "iteration"}, dir.path());
        E::StopOnSignal stop;
        stop.initialize(trainer);
        raise(SIGINT);
        raise(SIGINT);
        std::exit(0);
      },
      ::testing::KilledBySignal(SIGINT), "");
}

// Regression: a snapshot whose condition said no at the stop left no file where the message
// pointed; a stop writes whatever the condition says, through the snapshot's writer.
TEST(StopOnSignal, SavesDespiteTheSnapshotsCondition) {
  TempDir dir("stop_condition");
  FakeUpdater updater(4);
  Trainer trainer(updater, {10, "iteration"}, dir.path());
  auto snap = std::make_shared<E::Snapshot>(E::snapshot(
      "snapshot_iter_{.updater.iteration}", {1, "epoch"},
      {.condition = [] { return false; }, .writer = std::make_shared<E::ThreadQueueWriter>()}));
  trainer.extend(snap);
  trainer.extend(E::stop_on_signal(snap));
  trainer.extend([](Trainer& t) {
    if (t.updater().iteration() == 5) raise(SIGTERM);
  });
  std::optional<E::Interrupted> stopped;
  try {
    trainer.run();
  } catch (const E::Interrupted& e) {
    stopped = e;
  }
  ASSERT_TRUE(stopped.has_value());
  EXPECT_EQ(stopped->snapshot_path(), dir / "snapshot_iter_5");
  EXPECT_TRUE(fs::exists(dir / "snapshot_iter_5"));
  EXPECT_FALSE(fs::exists(dir / "snapshot_iter_4"));  // the epoch's: the condition said no
}

TEST(Snapshot, RetainsTheNewestFilesOfTheDirectory) {
  TempDir dir("snapshot_retain");
  std::ofstream(dir / "snapshot_iter_1") << "an earlier run's";
  fs::last_write_time(dir / "snapshot_iter_1", fs::file_time_type::clock::now() - std::chrono::hours(1));
  std::ofstream(dir / "other") << "not a snapshot";
  FakeUpdater updater(1);
  Trainer trainer(updater, {5, "iteration"}, dir.path());
  trainer.extend(E::snapshot("snapshot_iter_{.updater.iteration}", {1, "iteration"}, 2));
  trainer.run();
  EXPECT_EQ(E::find_snapshots("snapshot_iter_{.updater.iteration}", dir.path()),
            (std::vector<std::string>{dir / "snapshot_iter_4", dir / "snapshot_iter_5"}));
  EXPECT_TRUE(fs::exists(dir / "other"));
}

// Written within one tick of the file clock, snapshot_iter_10 is still newer than snapshot_iter_9.
TEST(Snapshot, EqualTimesOrderByIteration) {
  TempDir dir("snapshot_order");
  const auto now = fs::file_time_type::clock::now();
  for (const char* name : {"snapshot_iter_10", "snapshot_iter_9", "snapshot_iter_100"}) {
    std::ofstream(dir / name) << name;
    fs::last_write_time(dir / name, now);
  }
  EXPECT_EQ(E::find_snapshots("snapshot_iter_{.updater.iteration}", dir.path()),
            (std::vector<std::string>{dir / "snapshot_iter_9", dir / "snapshot_iter_10", dir / "snapshot_iter_100"}));
}

TEST(Snapshot, ResumesFromAFileOrTheNewestInADirectory) {
  TempDir dir("snapshot_resume");
  {
    FakeUpdater updater(2);
    Trainer trainer(updater, {3, "epoch"}, dir.path());
    trainer.extend(E::snapshot());
    trainer.run();
  }
  FakeUpdater updater(2);
  Trainer trainer(updater, {5, "epoch"}, dir.path());
  const E::Snapshot snap = E::snapshot();
  EXPECT_EQ(E::find_latest_snapshot(snap.filename(), dir.path()), dir / "snapshot_iter_6");
  EXPECT_EQ(snap.resume(trainer, dir.path()), dir / "snapshot_iter_6");
  EXPECT_EQ(snap.resume(trainer, dir / "snapshot_iter_2"), dir / "snapshot_iter_2");
  TempDir empty("snapshot_empty");
  rensa::test::expect_error<rensa::IOError>([&] { snap.resume(trainer, empty.path()); },
                                            {"snapshot: no snapshot in", empty.path(), "snapshot_iter_"});
  EXPECT_FALSE(E::find_latest_snapshot(snap.filename(), empty / "absent").has_value());
  rensa::test::expect_error<rensa::ValueError>([] { E::find_snapshots("{iteration}/snap", "."); },
                                               {"find_snapshots", "directory part"});
}

}  // namespace
