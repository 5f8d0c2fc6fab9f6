// LogReport, PrintReport, ProgressBar, PlotReport, observe_value/observe_lr, FailOnNonNumber and
// snapshot file names.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "rensa/extensions/fail_on_non_number.h"
#include "rensa/extensions/log_report.h"
#include "rensa/extensions/plot_report.h"
#include "rensa/extensions/print_report.h"
#include "rensa/extensions/progress_bar.h"
#include "rensa/extensions/snapshot.h"
#include "rensa/extensions/value_observation.h"
#include "rensa/links/linear.h"
#include "rensa/optimizers/sgd.h"
#include "rensa/serializers/npz.h"
#include "rensa/training/trainer.h"
#include "src/extensions/terminal.h"
#include "tests/unit/test_util.h"
#include "tests/unit/training/training_test_util.h"

namespace {

namespace E = rensa::extensions;
using rensa::testing_training::FakeUpdater;
using rensa::testing_training::TempDir;
using rensa::training::Trainer;

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::set<std::string> listing(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

// Replaces the value of every "elapsed_time" with T (the only value that varies between runs).
std::string mask_elapsed(const std::string& text) {
  const std::string key = "\"elapsed_time\": ";
  std::string out;
  std::size_t pos = 0;
  for (std::size_t at = text.find(key); at != std::string::npos; at = text.find(key, pos)) {
    const std::size_t begin = at + key.size();
    out.append(text, pos, begin - pos);
    out.push_back('T');
    pos = text.find_first_not_of("0123456789.e+-", begin);
  }
  out.append(text, pos, std::string::npos);
  return out;
}

// Reports main/loss = iteration and main/accuracy = iteration / 4 at each iteration.
void add_reporter(Trainer& trainer) {
  trainer.extend(rensa::training::make_extension(
      [](Trainer& t) {
        const auto i = static_cast<double>(t.updater().iteration());
        rensa::training::report({{"main/loss", i}, {"main/accuracy", i / 4}});
      },
      "fake_model", {1, "iteration"}, rensa::training::kPriorityWriter));
}

// --- LogReport ---------------------------------------------------------------------------------

TEST(LogReport, WritesJsonEntriesAtomically) {
  TempDir dir("log");
  FakeUpdater updater(2);
  Trainer trainer(updater, {2, "epoch"}, dir.path());
  add_reporter(trainer);
  trainer.extend(E::LogReport());
  // Each write replaces the file (a new inode from the rename), and leaves no temporary file.
  std::vector<ino_t> inodes;
  trainer.extend(
      [&](Trainer&) {
        struct stat st {};
        ASSERT_EQ(::stat((dir / "log").c_str(), &st), 0);
        inodes.push_back(st.st_ino);
        EXPECT_EQ(listing(dir.path()), std::set<std::string>{"log"});
      },
      "probe", {1, "epoch"}, -1000);
  trainer.run();
  ASSERT_EQ(inodes.size(), 2u);
  EXPECT_NE(inodes[0], inodes[1]);

  const std::string text = mask_elapsed(read_file(dir / "log"));
  EXPECT_EQ(text,
            "[\n"
            "    {\n"
            "        \"main/accuracy\": 0.375,\n"
            "        \"main/loss\": 1.5,\n"
            "        \"epoch\": 1,\n"
            "        \"iteration\": 2,\n"
            "        \"elapsed_time\": T\n"
            "    },\n"
            "    {\n"
            "        \"main/accuracy\": 0.875,\n"
            "        \"main/loss\": 3.5,\n"
            "        \"epoch\": 2,\n"
            "        \"iteration\": 4,\n"
            "        \"elapsed_time\": T\n"
            "    }\n"
            "]");
  const auto& log = trainer.get_extension<E::LogReport>("LogReport").log();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_GT(log[1].at("elapsed_time"), 0.0);
  EXPECT_GE(log[1].at("elapsed_time"), log[0].at("elapsed_time"));
  EXPECT_EQ(E::LogReport::from_json(read_file(dir / "log"), "log"), log);
}

TEST(LogReport, KeysTriggerNamesAndPostprocess) {
  TempDir dir("log");
  FakeUpdater updater(10);
  Trainer trainer(updater, {4, "iteration"}, dir.path());
  add_reporter(trainer);
  E::LogReport report({"main/loss"}, {2, "iteration"}, "log_{iteration}");
  report.set_postprocess([](rensa::training::Observation& e) { e["doubled"] = 2 * e.at("main/loss"); });
  trainer.extend(report);
  trainer.run();
  EXPECT_EQ(listing(dir.path()), (std::set<std::string>{"log_2", "log_4"}));
  const auto& log = trainer.get_extension<E::LogReport>("LogReport").log();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[1].count("main/accuracy"), 0u);
  EXPECT_EQ(log[1].at("main/loss"), 3.5);
  EXPECT_EQ(log[1].at("doubled"), 7.0);
  EXPECT_EQ(log[1].at("epoch"), 0.0);
  EXPECT_EQ(log[1].at("iteration"), 4.0);
}

TEST(LogReport, NonFiniteValuesAndSerialization) {
  std::vector<rensa::training::Observation> log{{{"a", std::numeric_limits<double>::quiet_NaN()}, {"epoch", 1}},
                                                {{"a", 0.1 + 0.2}, {"epoch", 2}}};
  const auto back = E::LogReport::from_json(E::LogReport::to_json(log), "test");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_TRUE(std::isnan(back[0].at("a")));
  EXPECT_EQ(back[1].at("a"), 0.1 + 0.2);  // doubles round-trip exactly
  rensa::test::expect_error<rensa::IOError>([] { E::LogReport::from_json("{", "file x"); }, {"file x", "JSON"});

  // Mid-interval state (log and running summary) survives a save and load.
  TempDir dir("log");
  rensa::serializers::DictionarySerializer saved;
  {
    FakeUpdater updater(4);
    Trainer trainer(updater, {6, "iteration"}, dir.path());
    add_reporter(trainer);
    trainer.extend(E::LogReport());
    trainer.run();
    trainer.serialize(saved);
  }
  FakeUpdater updater(4);
  Trainer trainer(updater, {8, "iteration"}, dir.path());
  add_reporter(trainer);
  trainer.extend(E::LogReport());
  rensa::serializers::DictionaryDeserializer loader(saved.target(), "snapshot");
  trainer.serialize(loader);
  trainer.run();
  const auto& log2 = trainer.get_extension<E::LogReport>("LogReport").log();
  ASSERT_EQ(log2.size(), 2u);
  EXPECT_EQ(log2[0].at("main/loss"), 2.5);
  EXPECT_EQ(log2[1].at("main/loss"), 6.5);  // mean of 5, 6 (before the save) and 7, 8 (after)
}

// --- PrintReport -------------------------------------------------------------------------------

TEST(PrintReport, ChainerTableLayout) {
  TempDir dir("print");
  FakeUpdater updater(2);
  Trainer trainer(updater, {2, "epoch"}, dir.path());
  add_reporter(trainer);
  trainer.extend(E::LogReport());
  std::ostringstream out;
  trainer.extend(E::PrintReport({"epoch", "iteration", "main/loss", "validation/main/loss"}, "LogReport", out));
  trainer.run();
  EXPECT_EQ(out.str(),
            "epoch       iteration   main/loss   validation/main/loss\n"
            "1           2           1.5                               \n"
            "2           4           3.5                               \n");
}

TEST(PrintReport, OwnLogReportAndErrors) {
  TempDir dir("print");
  FakeUpdater updater(2);
  Trainer trainer(updater, {4, "iteration"}, dir.path());
  add_reporter(trainer);
  std::ostringstream out;
  trainer.extend(E::PrintReport({"iteration", "main/accuracy"}, E::LogReport({}, {2, "iteration"}, ""), out));
  trainer.run();
  EXPECT_EQ(out.str(),
            "iteration   main/accuracy\n"
            "2           0.375          \n"
            "4           0.875          \n");
  EXPECT_FALSE(std::filesystem::exists(dir / "log"));

  TempDir dir2("print");
  FakeUpdater u2(2);
  Trainer t2(u2, {1, "iteration"}, dir2.path());
  std::ostringstream out2;
  t2.extend(E::PrintReport({"epoch"}, "LogReport", out2));
  rensa::test::expect_error<rensa::ValueError>([&] { t2.run(); }, {"get_extension", "LogReport"});
}

// --- ProgressBar -------------------------------------------------------------------------------

TEST(ProgressBar, PlainLinesWhenNotATerminal) {
  TempDir dir("progress");
  FakeUpdater updater(4);
  Trainer trainer(updater, {2, "epoch"}, dir.path());
  std::ostringstream out;
  trainer.extend(E::ProgressBar(std::nullopt, 2, out));
  trainer.run();
  const std::string text = out.str();
  EXPECT_EQ(text.find('\033'), std::string::npos);
  EXPECT_EQ(text.find('\r'), std::string::npos);
  std::vector<std::string> lines;
  std::istringstream is(text);
  for (std::string line; std::getline(is, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].rfind("iteration 2, epoch 0 / 2 epochs: total 25.00%, this epoch 50.00%, ", 0), 0u) << lines[0];
  EXPECT_EQ(lines[3].rfind("iteration 8, epoch 2 / 2 epochs: total 100.00%, this epoch 0.00%, ", 0), 0u) << lines[3];
  EXPECT_NE(lines[1].find("iters/sec, estimated time to finish: "), std::string::npos) << lines[1];
}

TEST(ProgressBar, RedrawsInPlaceOnATerminal) {
  TempDir dir("progress");
  FakeUpdater updater(4);
  Trainer trainer(updater, {8, "iteration"}, dir.path());
  std::ostringstream out;
  E::ProgressBar bar(rensa::training::TrainingLength{8, "iteration"}, 4, out, 10);
  bar.set_terminal(true);
  trainer.extend(bar);
  trainer.run();
  const std::string text = out.str();
  EXPECT_NE(text.find("\r\033[2K     total [#####.....]  50.00%\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\r\033[2Kthis epoch [..........]   0.00%\n"), std::string::npos) << text;
  EXPECT_NE(text.find("         8 iter, 2 epoch / 8 iterations\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\033[4A\r"), std::string::npos);
  EXPECT_EQ(text.substr(text.size() - 3), "\033[J");  // finalize clears the bar
  rensa::test::expect_error<rensa::ValueError>([] { E::ProgressBar(std::nullopt, 0); },
                                               {"ProgressBar", "update_interval"});
}

// Under mpirun every rank's stdout is a pseudo-terminal whatever mpirun writes to: only RENSA_TERMINAL
// (which scripts/mpirun sets from its own stdout) makes the bar redraw there.
TEST(ProgressBar, TerminalFromTheEnvironment) {
  using rensa::extensions::detail::is_terminal;
  for (const char* v : {"RENSA_TERMINAL", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"}) unsetenv(v);
  std::ostringstream file;
  EXPECT_FALSE(is_terminal(file));
  EXPECT_EQ(is_terminal(std::cout), isatty(STDOUT_FILENO) == 1);
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  EXPECT_FALSE(is_terminal(std::cout));
  EXPECT_FALSE(is_terminal(std::cerr));
  setenv("RENSA_TERMINAL", "1", 1);
  EXPECT_TRUE(is_terminal(std::cout));
  EXPECT_FALSE(is_terminal(file));
  setenv("RENSA_TERMINAL", "0", 1);
  unsetenv("OMPI_COMM_WORLD_SIZE");
  EXPECT_FALSE(is_terminal(std::cerr));
  setenv("RENSA_TERMINAL", "yes", 1);
  rensa::test::expect_error<rensa::ValueError>([] { is_terminal(std::cout); }, {"RENSA_TERMINAL", "'yes'"});
  unsetenv("RENSA_TERMINAL");
}

// --- observe_value / observe_lr ----------------------------------------------------------------

TEST(ObserveValue, ObservesLearningRate) {
  TempDir dir("observe");
  rensa::optimizers::SGD sgd(0.25);
  rensa::optimizers::MomentumSGD other(0.5);
  FakeUpdater updater(2);
  updater.optimizers["main"] = &sgd;
  Trainer trainer(updater, {2, "iteration"}, dir.path());
  trainer.extend(E::observe_lr());
  trainer.extend(E::observe_lr(other, "other_lr"));
  trainer.extend(
      E::observe_value("twice", [](Trainer& t) { return 2.0 * static_cast<double>(t.updater().iteration()); }));
  std::vector<rensa::training::Observation> seen;
  trainer.extend([&](Trainer& t) { seen.push_back(t.observation()); }, "probe");
  trainer.run();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].at("lr"), 0.25);
  EXPECT_EQ(seen[1].at("other_lr"), 0.5);
  EXPECT_EQ(seen[1].at("twice"), 4.0);
  EXPECT_EQ(trainer.get_extension("observe_lr").default_name(), "observe_lr");
}

// --- FailOnNonNumber ---------------------------------------------------------------------------

TEST(FailOnNonNumber, NamesTheParameter) {
  TempDir dir("fail");
  rensa::links::Linear linear(2, 3, rensa::links::LinearOptions{.seed = 1});
  rensa::optimizers::SGD sgd(0.1);
  sgd.setup(linear);
  FakeUpdater updater(2);
  updater.optimizers["main"] = &sgd;
  {
    Trainer trainer(updater, {3, "iteration"}, dir.path());
    trainer.extend(E::FailOnNonNumber());
    trainer.run();  // all finite
  }
  updater.set_iteration(0);
  Trainer trainer(updater, {5, "iteration"}, dir.path());
  trainer.extend(E::FailOnNonNumber());
  trainer.extend(
      [&](Trainer& t) {
        if (t.updater().iteration() == 2) linear.b().array().fill(std::numeric_limits<double>::quiet_NaN());
      },
      "poison", {1, "iteration"}, rensa::training::kPriorityWriter);
  rensa::test::expect_error<rensa::Error>([&] { trainer.run(); },
                                          {"FailOnNonNumber", "'/b'", "'main'", "nan", "iteration 2", "debug mode"});

  linear.b().array().fill(0.0);
  linear.W().set_grad(rensa::Variable(rensa::Array::full({3, 2}, std::numeric_limits<double>::infinity())));
  updater.set_iteration(0);
  Trainer t3(updater, {1, "iteration"}, dir.path());
  t3.extend(E::FailOnNonNumber());
  rensa::test::expect_error<rensa::Error>([&] { t3.run(); }, {"FailOnNonNumber", "gradient", "'/W'", "inf"});
  Trainer t4(updater, {1, "iteration"}, dir.path());
  t4.extend(E::FailOnNonNumber(/*check_grad=*/false));
  t4.run();
}

// --- PlotReport --------------------------------------------------------------------------------

TEST(PlotReport, WritesPngWithGnuplot) {
  TempDir dir("plot");
  E::PlotReport plot({"main/loss", "main/accuracy"}, "epoch");
  if (!plot.available()) GTEST_SKIP() << "gnuplot is not installed";
  FakeUpdater updater(2);
  Trainer trainer(updater, {3, "epoch"}, dir.path());
  add_reporter(trainer);
  trainer.extend(plot);
  trainer.run();
  const std::string png = read_file(dir / "plot.png");
  ASSERT_GE(png.size(), 8u);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(listing(dir.path()), std::set<std::string>{"plot.png"});  // no temporary files left
  const auto& data = trainer.get_extension<E::PlotReport>("PlotReport").data();
  ASSERT_EQ(data.at("main/loss").size(), 3u);
  EXPECT_EQ(data.at("main/loss")[2], (std::pair<double, double>{3.0, 5.5}));

  // The points survive a snapshot.
  rensa::serializers::DictionarySerializer saved;
  trainer.get_extension<E::PlotReport>("PlotReport").serialize(saved);
  rensa::serializers::DictionaryDeserializer loader(saved.target(), "snapshot");
  E::PlotReport restored({"main/loss", "main/accuracy"}, "epoch");
  restored.serialize(loader);
  EXPECT_EQ(restored.data(), data);
}

TEST(PlotReport, MissingGnuplotWarnsOnceAndTrainingGoesOn) {
  TempDir dir("plot");
  E::PlotReport plot({"main/loss"}, "iteration", {1, "iteration"});
  plot.set_gnuplot(dir / "no-such-gnuplot");
  EXPECT_FALSE(plot.available());
  FakeUpdater updater(2);
  Trainer trainer(updater, {3, "iteration"}, dir.path());
  add_reporter(trainer);
  trainer.extend(plot);
  testing::internal::CaptureStderr();
  trainer.run();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(updater.updates, 3);
  EXPECT_NE(err.find("PlotReport"), std::string::npos);
  EXPECT_NE(err.find("no-such-gnuplot"), std::string::npos);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1);
  EXPECT_TRUE(listing(dir.path()).empty());
  rensa::test::expect_error<rensa::ValueError>([] { E::PlotReport({}); }, {"PlotReport", "y keys"});
}

// --- snapshot ----------------------------------------------------------------------------------

TEST(Snapshot, FileNamesRetentionAndObjects) {
  TempDir dir("snapshot");
  rensa::links::Linear linear(2, 2, rensa::links::LinearOptions{.seed = 1});
  FakeUpdater updater(3);
  Trainer trainer(updater, {6, "iteration"}, dir.path());
  trainer.extend(E::snapshot("snap_{.updater.epoch}_{.updater.iteration}", {2, "iteration"}, 2));
  trainer.extend(E::snapshot_object(linear, "model_{.updater.iteration}.npz", {3, "iteration"}));
  trainer.run();
  EXPECT_EQ(listing(dir.path()),
            (std::set<std::string>{"snap_1_4", "snap_2_6", "model_3.npz", "model_6.npz"}));  // snap_0_2 removed
  const auto model = rensa::serializers::read_npz(dir / "model_6.npz");
  EXPECT_EQ(model.count("W"), 1u);
  EXPECT_EQ(model.count("b"), 1u);
  EXPECT_EQ(E::format_filename("a{{b}}_{epoch}", trainer), "a{b}_2");
  rensa::test::expect_error<rensa::ValueError>([&] { E::format_filename("x_{.updater.foo}", trainer); },
                                               {"format_filename", "{.updater.foo}", "{.updater.iteration}"});
}

// The process id of a child that has exited: a writer that died.
long dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return static_cast<long>(pid);
}

// Regression: a run killed while writing a snapshot left its temporary file forever.
TEST(Snapshot, RemovesStaleTemporariesOfItsOwnNamesOnly) {
  TempDir dir("snapshot");
  const std::string dead = std::to_string(dead_pid());
  const std::string mine = std::to_string(::getpid());
  const std::vector<std::string> stale = {".snap_0_2.tmp" + dead + "-1f2e3d-0", ".snap_1_4.tmp" + dead + "-abc-12"};
  const std::vector<std::string> kept = {".snap_1_4.tmp" + mine + "-abc-0",   // a live writer's
                                         ".other_3.tmp" + dead + "-abc-0",    // another extension's name
                                         ".snap_1_4.tmpx" + dead + "-abc-0",  // not the temporary-name pattern
                                         "snap_0_2.tmp" + dead + "-abc-0",    // not hidden
                                         "snap_0_2"};
  for (const auto& f : stale) std::ofstream(dir / f) << "partial";
  for (const auto& f : kept) std::ofstream(dir / f) << "keep";
  FakeUpdater updater(3);
  Trainer trainer(updater, {1, "iteration"}, dir.path());
  trainer.extend(E::snapshot("snap_{.updater.epoch}_{.updater.iteration}", {2, "iteration"}));
  trainer.run();
  std::set<std::string> want(kept.begin(), kept.end());
  EXPECT_EQ(listing(dir.path()), want);
}

// Regression: a run killed while plotting left ".loss.png.XXXXXX" files that no run removed.
TEST(PlotReport, RemovesStaleTemporariesOfItsPlot) {
  TempDir dir("plot");
  const std::string dead = std::to_string(dead_pid());
  const std::vector<std::string> stale = {".loss.png.data.tmp" + dead + "-a1-0", ".loss.png.gp.tmp" + dead + "-a1-0",
                                          ".loss.png.tmp.tmp" + dead + "-a1-0"};
  const std::vector<std::string> kept = {".acc.png.gp.tmp" + dead + "-a1-0", ".loss.png.log.tmp" + dead + "-a1-0"};
  for (const auto& f : stale) std::ofstream(dir / f) << "partial";
  for (const auto& f : kept) std::ofstream(dir / f) << "keep";
  FakeUpdater updater(3);
  Trainer trainer(updater, {1, "iteration"}, dir.path());
  E::PlotReport plot({"main/loss"}, "iteration", {1, "iteration"}, "loss.png");
  plot.set_gnuplot("no-such-gnuplot");
  trainer.extend(plot);
  testing::internal::CaptureStderr();
  trainer.run();
  testing::internal::GetCapturedStderr();
  EXPECT_EQ(listing(dir.path()), std::set<std::string>(kept.begin(), kept.end()));
}

TEST(Snapshot, FilenameMatches) {
  EXPECT_TRUE(E::filename_matches("snapshot_iter_{.updater.iteration}", "snapshot_iter_120"));
  EXPECT_TRUE(E::filename_matches("a{{b}}_{epoch}.npz", "a{b}_7.npz"));
  EXPECT_TRUE(E::filename_matches("s_{epoch}_{iteration}", "s_1_2_3"));
  EXPECT_FALSE(E::filename_matches("snapshot_iter_{iteration}", "snapshot_iter_"));
  EXPECT_FALSE(E::filename_matches("snapshot_iter_{iteration}", "snapshot_iter_1/x"));
  EXPECT_FALSE(E::filename_matches("snapshot_iter_{iteration}", "model_iter_1"));
  EXPECT_FALSE(E::filename_matches("model.npz", "model.npz.bak"));
  EXPECT_FALSE(E::filename_matches("x_{iteration", "x_1"));
}

}  // namespace
