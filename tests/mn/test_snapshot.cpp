// Per-rank snapshots: a run stopped and resumed from the newest iteration every rank has complete
// ends with exactly the parameters of the uninterrupted run (also with double buffering, whose
// not-yet-applied gradients are part of the state); a missing or unreadable file on one rank moves
// every rank back to an older iteration; files of other rank counts are ignored; retention.
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rensa/mn/multi_node_optimizer.h"
#include "rensa/mn/scatter.h"
#include "rensa/mn/snapshot.h"
#include "tests/mn/train_test_util.h"
#include "tests/unit/test_util.h"

namespace rensa::mn::test {
namespace {

namespace fs = std::filesystem;
using rensa::test::expect_error;

// A fresh directory that every rank shares (rank 0 names it), removed at the end.
class SharedDir {
 public:
  SharedDir() {
    Communicator c = comm();
    std::string name;
    if (c.rank() == 0) {
      name = (fs::temp_directory_path() /
              ("rensa_mn_snapshot_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++)))
                 .string();
      fs::remove_all(name);
      fs::create_directories(name);
    }
    path_ = c.bcast_bytes(name);
    c.barrier();
  }
  ~SharedDir() {
    comm().barrier();
    if (comm().rank() == 0) {
      std::error_code ec;
      fs::remove_all(path_, ec);
    }
  }
  const std::string& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::string path_;
};

struct Result {
  std::vector<double> params;
  std::optional<int64_t> loaded;
  int64_t iteration = 0;
};

// Trains until iteration `stop`, snapshotting every 3 iterations into `dir`; resumes first when
// `resume` is set. With `lazy`, l1's W is inferred at the first call, so a resumed run loads the
// optimizer (and its pending gradients) while W does not exist yet.
// With `replica_sets`, every rank's iterator draws the same order, so the ranks of a set hold the
// same state.
Result train(const std::string& dir, int64_t stop, bool resume, bool double_buffering, bool lazy = false,
             bool autoload = false, std::optional<std::vector<std::vector<int>>> replica_sets = std::nullopt) {
  Communicator c = comm();
  rensa::seed(5);  // the lazy W is drawn from the default generator
  const auto data = scatter_dataset(three_class_points(40), c, {.shuffle = true, .seed = 2});
  L::Classifier model(std::make_shared<Net>(2, 8, 3, 11, lazy));
  auto opt = create_multi_node_optimizer(std::make_unique<optimizers::Adam>(0.01), c,
                                         {.double_buffering = double_buffering, .bucket_cap = 128});
  opt->setup(model);
  iterators::SerialIterator it(data, 4, {.seed = 3 + (replica_sets ? 0 : static_cast<uint64_t>(c.rank()))});
  training::StandardUpdater updater(it, *opt);
  training::Trainer trainer(updater, {stop, "iteration"}, dir);
  auto snap = multi_node_snapshot(
      c, {.trigger = {3, "iteration"}, .autoload = autoload, .replica_sets = replica_sets.value_or(std::vector<std::vector<int>>{})});
  trainer.extend(snap);
  Result r;
  if (resume) r.loaded = snap->maybe_load(trainer);
  trainer.run();
  r.params = flatten(param_values(model));
  r.iteration = updater.iteration();
  return r;
}

void expect_bitwise_resume(bool double_buffering, bool lazy = false) {
  Communicator c = comm();
  SharedDir whole, parts;
  const Result want = train(whole.path(), 12, false, double_buffering, lazy);
  train(parts.path(), 7, false, double_buffering, lazy);  // snapshots at 3 and 6
  const Result got = train(parts.path(), 12, true, double_buffering, lazy);
  ASSERT_TRUE(got.loaded.has_value());
  EXPECT_EQ(*got.loaded, 6);
  EXPECT_EQ(got.iteration, 12);
  EXPECT_EQ(got.params, want.params) << "double buffering " << double_buffering << ", lazy " << lazy;
}

TEST(MultiNodeSnapshot, ResumeIsBitForBit) {
  expect_bitwise_resume(false);
}

TEST(MultiNodeSnapshot, ResumeIsBitForBitWithDoubleBuffering) {
  expect_bitwise_resume(true);
}

// Regression: resuming with double buffering and a lazily initialized link failed with "6 pending
// gradients were saved but 3 match parameters of the model".
TEST(MultiNodeSnapshot, ResumeIsBitForBitWithLazyLinks) {
  expect_bitwise_resume(false, true);
  expect_bitwise_resume(true, true);
}

// autoload: the same command run again resumes by itself (maybe_load at the start of run()).
TEST(MultiNodeSnapshot, AutoloadResumesTheSameCommand) {
  SharedDir whole, parts;
  const Result want = train(whole.path(), 12, false, false);
  const Result first = train(parts.path(), 7, false, false, false, true);  // nothing to load: from the start
  EXPECT_EQ(first.iteration, 7);
  const Result got = train(parts.path(), 12, false, false, false, true);
  EXPECT_EQ(got.iteration, 12);
  EXPECT_EQ(got.params, want.params);
}

// Replica sets (ChainerMN's): only the first rank of each set writes; the others load its state,
// sent to them; the resumed run ends as the uninterrupted one.
TEST(MultiNodeSnapshot, ReplicaSetsWriteOnceAndResumeExactly) {
  Communicator c = comm();
  std::vector<int> all(static_cast<std::size_t>(c.size()));
  for (int r = 0; r < c.size(); ++r) all[static_cast<std::size_t>(r)] = r;
  // One set of every rank; and {0} with the rest as a second set.
  for (const auto& sets : {std::vector<std::vector<int>>{all}, std::vector<std::vector<int>>{{0}}}) {
    SharedDir whole, parts;
    const Result want = train(whole.path(), 12, false, false, false, false, sets);
    train(parts.path(), 7, false, false, false, false, sets);
    c.barrier();
    std::set<std::string> files;
    for (const auto& e : fs::directory_iterator(parts.path())) files.insert(e.path().filename().string());
    const std::string n = std::to_string(c.size());
    std::set<std::string> expected{"snapshot_mn_iter_3_rank_0_of_" + n + ".npz", "snapshot_mn_iter_6_rank_0_of_" + n + ".npz"};
    if (sets.size() == 1 && sets[0].size() == 1) {  // {0}: the rest write as rank 1
      expected.insert("snapshot_mn_iter_3_rank_1_of_" + n + ".npz");
      expected.insert("snapshot_mn_iter_6_rank_1_of_" + n + ".npz");
    }
    EXPECT_EQ(files, expected);
    c.barrier();
    const Result got = train(parts.path(), 12, true, false, false, false, sets);
    ASSERT_TRUE(got.loaded.has_value());
    EXPECT_EQ(*got.loaded, 6);
    EXPECT_EQ(got.params, want.params);
  }
  expect_error<ValueError>([&] { multi_node_snapshot(c, {.replica_sets = {{0, c.size()}}}); },
                           {"multi_node_snapshot", "replica set 0", "rank " + std::to_string(c.size())});
  expect_error<ValueError>([&] { multi_node_snapshot(c, {.replica_sets = {{0}, {1, 0}}}); },
                           {"multi_node_snapshot", "rank 0", "replica sets 0 and 1"});
}

TEST(MultiNodeSnapshot, ResumesFromTheNewestIterationEveryRankHas) {
  Communicator c = comm();
  SharedDir whole, parts;
  const Result want = train(whole.path(), 12, false, false);
  train(parts.path(), 10, false, false);  // snapshots at 3, 6, 9
  const auto file = [&](int64_t it, int rank, int size) {
    return (fs::path(parts.path()) / ("snapshot_mn_iter_" + std::to_string(it) + "_rank_" + std::to_string(rank) +
                                      "_of_" + std::to_string(size) + ".npz"))
        .string();
  };
  c.barrier();
  if (c.rank() == 0) {
    // The last rank never finished iteration 9; rank 0's iteration 6 is damaged; a job of another
    // size left a newer file.
    fs::remove(file(9, c.size() - 1, c.size()));
    std::ofstream(file(6, 0, c.size()), std::ios::binary) << "not a zip file";
    std::ofstream(file(99, 0, c.size() + 1), std::ios::binary) << "other job";
  }
  c.barrier();
  const Result got = train(parts.path(), 12, true, false);
  ASSERT_TRUE(got.loaded.has_value());
  EXPECT_EQ(*got.loaded, c.size() == 1 ? 9 : 3);
  EXPECT_EQ(got.params, want.params);
}

// Trains to iteration 12 with stop_on_signal; the last rank raises `sig` after iteration `at` (0:
// never). Resumes first from `resume_from` when it is not empty.
Result train_until_signal(const std::string& dir, int sig, int64_t at, const std::string& resume_from,
                          std::optional<extensions::Interrupted>* stopped) {
  Communicator c = comm();
  const auto data = scatter_dataset(three_class_points(40), c, {.shuffle = true, .seed = 2});
  L::Classifier model(std::make_shared<Net>(2, 8, 3, 11));
  auto opt = create_multi_node_optimizer(std::make_unique<optimizers::Adam>(0.01), c);
  opt->setup(model);
  iterators::SerialIterator it(data, 4, {.seed = 3 + static_cast<uint64_t>(c.rank())});
  training::StandardUpdater updater(it, *opt);
  training::Trainer trainer(updater, {12, "iteration"}, dir);
  auto snap = multi_node_snapshot(c, {.trigger = {4, "iteration"}});
  trainer.extend(snap);
  trainer.extend(stop_on_signal(c, snap));
  trainer.extend([&](training::Trainer& t) {
    if (c.rank() == c.size() - 1 && t.updater().iteration() == at) raise(sig);
  });
  Result r;
  if (!resume_from.empty()) r.loaded = snap->resume(trainer, resume_from);
  try {
    trainer.run();
  } catch (const extensions::Interrupted& e) {
    *stopped = e;
  }
  r.params = flatten(param_values(model));
  r.iteration = updater.iteration();
  return r;
}

// A signal on one rank stops every rank after the same iteration, each with its snapshot of it; the
// run resumed from that snapshot (by directory, or by one rank's file) ends with the parameters of
// the uninterrupted run.
TEST(MultiNodeSnapshot, StopOnSignalStopsEveryRankAfterTheSameIteration) {
  Communicator c = comm();
  SharedDir whole, parts;
  std::optional<extensions::Interrupted> stopped;
  const Result want = train_until_signal(whole.path(), SIGUSR1, 0, "", &stopped);
  EXPECT_FALSE(stopped.has_value());
  EXPECT_EQ(want.iteration, 12);
  for (int sig : {SIGUSR1, SIGTERM}) {
    SCOPED_TRACE(sig);
    stopped.reset();
    const Result first = train_until_signal(parts.path(), sig, 5, "", &stopped);
    ASSERT_TRUE(stopped.has_value());
    EXPECT_EQ(first.iteration, 5);
    EXPECT_EQ(stopped->signal(), sig);
    EXPECT_EQ(stopped->exit_code(), 128 + sig);
    EXPECT_NE(std::string(stopped->what()).find("after iteration 5 (epoch"), std::string::npos) << stopped->what();
    EXPECT_TRUE(fs::exists(stopped->snapshot_path())) << stopped->snapshot_path();
    c.barrier();
    const std::string from =
        sig == SIGUSR1
            ? parts.path()
            : (fs::path(parts.path()) / ("snapshot_mn_iter_5_rank_0_of_" + std::to_string(c.size()) + ".npz")).string();
    stopped.reset();
    const Result rest = train_until_signal(parts.path(), sig, 0, from, &stopped);
    EXPECT_FALSE(stopped.has_value());
    ASSERT_TRUE(rest.loaded.has_value());
    EXPECT_EQ(*rest.loaded, 5);
    EXPECT_EQ(rest.params, want.params);
    c.barrier();
    if (c.rank() == 0) {
      for (const auto& e : fs::directory_iterator(parts.path())) fs::remove(e.path());
    }
    c.barrier();
  }
}

TEST(MultiNodeSnapshot, ResumeNamesWhatIsMissing) {
  Communicator c = comm();
  SharedDir dir;
  L::Classifier model(std::make_shared<Net>(2, 8, 3, 11));
  optimizers::SGD opt(0.1);
  opt.setup(model);
  iterators::SerialIterator it(scatter_dataset(three_class_points(16), c), 2, {.seed = 1});
  training::StandardUpdater updater(it, opt);
  training::Trainer trainer(updater, {5, "iteration"}, dir.path());
  auto snap = multi_node_snapshot(c);
  trainer.extend(snap);
  expect_error<IOError>([&] { snap->resume(trainer, dir.path()); }, {"no snapshot in", dir.path(), "ranks have"});
  const std::string missing =
      (fs::path(dir.path()) / ("snapshot_mn_iter_7_rank_0_of_" + std::to_string(c.size()) + ".npz")).string();
  expect_error<IOError>([&] { snap->resume(trainer, missing); }, {"iteration 7", "not every one"});
  expect_error<ValueError>([&] { snap->resume(trainer, dir.path() + "/log"); },
                           {"neither a directory nor a snapshot file"});
}

TEST(MultiNodeSnapshot, NothingToResume) {
  SharedDir dir;
  const Result got = train(dir.path(), 2, true, false);
  EXPECT_FALSE(got.loaded.has_value());
  EXPECT_EQ(got.iteration, 2);
}

TEST(MultiNodeSnapshot, RetainsTheNewestFiles) {
  Communicator c = comm();
  SharedDir dir;
  L::Classifier model(std::make_shared<Net>(2, 8, 3, 11));
  auto opt = create_multi_node_optimizer(std::make_unique<optimizers::SGD>(0.1), c);
  opt->setup(model);
  iterators::SerialIterator it(scatter_dataset(three_class_points(16), c), 2, {.seed = 1});
  training::StandardUpdater updater(it, *opt);
  training::Trainer trainer(updater, {5, "iteration"}, dir.path());
  auto snap = multi_node_snapshot(c, {.trigger = {1, "iteration"}, .n_retains = 2});
  trainer.extend(snap);
  trainer.run();
  EXPECT_EQ(snap->local_iterations(trainer), (std::vector<int64_t>{4, 5}));
  EXPECT_TRUE(fs::exists(snap->path_for(trainer, 5)));
}

// Regression: a rank killed while writing left ".snapshot_mn_iter_…npz.tmpPID-…" forever. Each rank
// removes the stale temporaries of its own file names, and nothing else.
TEST(MultiNodeSnapshot, RemovesStaleTemporariesOfItsOwnFiles) {
  Communicator c = comm();
  SharedDir dir;
  // Above any pid_max, so no process on this host has it.
  const std::string dead = "999999999";
  const auto temp = [&](int rank, int size) {
    return (fs::path(dir.path()) / (".snapshot_mn_iter_3_rank_" + std::to_string(rank) + "_of_" + std::to_string(size) +
                                    ".npz.tmp" + dead + "-ab12-0"))
        .string();
  };
  const std::string other_job = temp(0, c.size() + 1);
  const std::string other_name = (fs::path(dir.path()) / (".model.npz.tmp" + dead + "-ab12-0")).string();
  if (c.rank() == 0) {
    for (int r = 0; r < c.size(); ++r) std::ofstream(temp(r, c.size())) << "partial";
    std::ofstream(other_job) << "another job's";
    std::ofstream(other_name) << "another writer's";
  }
  c.barrier();
  train(dir.path(), 2, true, false);
  c.barrier();
  for (int r = 0; r < c.size(); ++r) EXPECT_FALSE(fs::exists(temp(r, c.size()))) << "rank " << r;
  EXPECT_TRUE(fs::exists(other_job));
  EXPECT_TRUE(fs::exists(other_name));
}

TEST(MultiNodeSnapshot, Errors) {
  Communicator c = comm();
  expect_error<ValueError>([&] { multi_node_snapshot(c, {.name = ""}); }, {"multi_node_snapshot", "name"});
  expect_error<ValueError>([&] { multi_node_snapshot(c, {.name = "a/b"}); }, {"multi_node_snapshot", "'a/b'"});
  expect_error<ValueError>([&] { multi_node_snapshot(c, {.n_retains = 0}); }, {"n_retains", "0"});
}

}  // namespace
}  // namespace rensa::mn::test
