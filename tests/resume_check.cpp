// Exact resume of a training example: COMMAND runs to its end; then again, stopped by SIGTERM (which
// the examples and scripts/mpirun turn into a snapshot of the step under way) soon after its first
// snapshot file appears, and resumed with --resume. The last snapshots of the two runs (every
// rank's, under mpirun) must hold the same model and optimizer state, bit for bit.
//   resume_check WORK_DIR COMMAND ARGS...   (the check adds --out and --resume)
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "tests/job_util.h"

namespace {

using namespace job_util;

// The iteration in a snapshot's file name ("snapshot_iter_40", "snapshot_mn_iter_40_rank_1_of_2.npz").
std::optional<int64_t> iteration_in(const std::string& name) {
  if (name.rfind("snapshot", 0) != 0) return std::nullopt;
  const auto at = name.find("iter_");
  if (at == std::string::npos) return std::nullopt;
  std::size_t end = at + 5;
  while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
  if (end == at + 5 || end - at - 5 > 18) return std::nullopt;
  return std::stoll(name.substr(at + 5, end - at - 5));
}

std::vector<std::string> snapshots(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (iteration_in(name)) out.push_back(name);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: resume_check WORK_DIR COMMAND ARGS...\n";
    return 2;
  }
  const fs::path work = argv[1];
  const std::vector<std::string> command(argv + 2, argv + argc);
  fs::remove_all(work);
  fs::create_directories(work);
  const double limit_s = 600;
  const auto run = [&](const std::string& name, std::vector<std::string> extra) {
    auto cmd = command;
    cmd.insert(cmd.end(), extra.begin(), extra.end());
    return spawn(cmd, work / (name + ".log"));
  };

  // The uninterrupted run.
  const fs::path whole = work / "whole", parts = work / "parts";
  if (wait_job(run("whole", {"--out", whole.string()}), limit_s, work / "whole.log") != 0) {
    fail("the uninterrupted run failed:\n" + read_text(work / "whole.log"));
  }
  // Stopped soon after its first snapshot...
  const pid_t job = run("stopped", {"--out", parts.string()});
  bool stopped = false;
  const double start = now_s();
  while (waitpid(job, nullptr, WNOHANG) == 0) {
    if (!snapshots(parts).empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      stopped = kill(job, SIGTERM) == 0;
      break;
    }
    if (now_s() - start > limit_s) fail("no snapshot after " + std::to_string(limit_s) + " s");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const int stop_rc = wait_job(job, limit_s, work / "stopped.log");
  const std::string stop_log = read_text(work / "stopped.log");
  if (!stopped || stop_rc == 0) fail("the run ended before it was stopped; give it more to do:\n" + stop_log);
  // ... and resumed.
  if (wait_job(run("resumed", {"--out", parts.string(), "--resume", parts.string()}), limit_s, work / "resumed.log") !=
      0) {
    fail("the resumed run failed:\n" + read_text(work / "resumed.log"));
  }
  const std::string resumed_log = read_text(work / "resumed.log");
  if (resumed_log.find("resumed from iteration") == std::string::npos) {
    fail("the resumed run did not say where it resumed:\n" + resumed_log);
  }

  // The last snapshots (of every rank) of both runs.
  std::vector<std::string> names = snapshots(whole);
  if (names.empty()) fail("the uninterrupted run wrote no snapshot");
  int64_t last = 0;
  for (const auto& n : names) last = std::max(last, *iteration_in(n));
  std::erase_if(names, [&](const std::string& n) { return *iteration_in(n) != last; });
  std::size_t arrays = 0;
  for (const auto& name : names) {
    const auto want = state_of(whole / name);
    if (!fs::exists(parts / name)) fail("the resumed run wrote no " + name);
    const auto got = state_of(parts / name);
    if (want.empty() || want.size() != got.size()) fail(name + ": the saved state differs in its entries");
    for (const auto& [key, a] : want) {
      const auto it = got.find(key);
      if (it == got.end() || !same_bits(a, it->second)) fail(name + ": '" + key + "' differs");
      ++arrays;
    }
  }
  std::cout << "resume_check: stopped and resumed ("
            << resumed_log.substr(resumed_log.find("resumed from iteration"), 40) << "...); " << arrays << " arrays of "
            << names.size() << " snapshot(s) of iteration " << last << " equal the uninterrupted run's bit for bit"
            << std::endl;
  return 0;
}
