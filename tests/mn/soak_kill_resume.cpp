// Soak test of checkpointing under failure: train_mnist with 2 ranks is killed (SIGKILL of a random
// rank at a random moment) and resumed, again and again, then runs to the end. Every resume must
// start from the newest iteration that both ranks had complete when the job died; the final
// parameters and optimizer state must equal an uninterrupted run's bit for bit; no temporary file
// and no unreadable snapshot may be left. Not an MPI program itself: it starts the jobs.
// With "restart", the job is started once, through MPIRUN's --max-restarts, which starts it again
// after each kill (the example then resumes from its output directory by itself).
//   soak_kill_resume TRAIN_MNIST MPIRUN WORK_DIR [KILLS] [SEED] [restart]
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "rensa/serializers/npz.h"
#include "tests/job_util.h"

namespace fs = std::filesystem;

namespace {

using namespace job_util;

constexpr int kRanks = 2;

// The parent of process `pid`, or 0.
pid_t parent_of(pid_t pid) {
  const std::string stat = read_text(fs::path("/proc") / std::to_string(pid) / "stat");
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 2));
  char state = 0;
  pid_t ppid = 0;
  rest >> state >> ppid;
  return ppid;
}

// The process of MPI rank `rank` among the descendants of launcher `launcher` (scripts/mpirun runs
// mpirun as its child), if it runs yet; with `attempt`, only of that attempt of a restarting launcher.
std::optional<pid_t> rank_pid(pid_t launcher, int rank, int attempt = -1) {
  const std::string want = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
  const std::string want_attempt = "RENSA_RESTART=" + std::to_string(attempt);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    bool below = false;
    for (pid_t p = parent_of(std::stoi(name)), hops = 0; p > 1 && hops < 8 && !below; p = parent_of(p), ++hops) {
      below = p == launcher;
    }
    if (!below) continue;
    const std::string env = read_text(e.path() / "environ");
    bool is_rank = false, is_attempt = attempt < 0;
    for (std::size_t at = 0; at < env.size();) {
      const std::size_t end = env.find('\0', at);
      const std::string_view var(env.data() + at, (end == std::string::npos ? env.size() : end) - at);
      is_rank = is_rank || var == want;
      is_attempt = is_attempt || var == want_attempt;
      if (end == std::string::npos) break;
      at = end + 1;
    }
    if (is_rank && is_attempt) return std::stoi(name);
  }
  return std::nullopt;
}

// The decimal number at the start of `s`, if any.
std::optional<int64_t> leading_number(std::string_view s) {
  std::size_t n = 0;
  while (n < s.size() && n < 18 && s[n] >= '0' && s[n] <= '9') ++n;
  if (n == 0) return std::nullopt;
  return std::stoll(std::string(s.substr(0, n)));
}

// Iterations for which every rank has its snapshot file in `dir`.
std::vector<int64_t> complete_iterations(const fs::path& dir) {
  const std::string prefix = "snapshot_mn_iter_";
  std::map<int64_t, int> count;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const auto it = leading_number(std::string_view(name).substr(prefix.size()));
    if (!it) continue;
    for (int r = 0; r < kRanks; ++r) {
      if (name == prefix + std::to_string(*it) + "_rank_" + std::to_string(r) + "_of_" + std::to_string(kRanks) +
                      ".npz") {
        ++count[*it];
      }
    }
  }
  std::vector<int64_t> out;
  for (const auto& [it, n] : count) {
    if (n == kRanks) out.push_back(it);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: soak_kill_resume TRAIN_MNIST MPIRUN WORK_DIR [KILLS] [SEED] [restart]\n";
    return 2;
  }
  const bool through_launcher = argc > 6 && std::string_view(argv[6]) == "restart";
  const std::string exe = argv[1], mpirun = argv[2];
  const fs::path work = argv[3];
  const int kills = argc > 4 ? std::atoi(argv[4]) : 20;
  const unsigned seed = argc > 5 ? static_cast<unsigned>(std::atoi(argv[5])) : 1;
  fs::remove_all(work);
  fs::create_directories(work);
  const std::vector<std::string> train = {mpirun, "-n", std::to_string(kRanks), exe, "--communicator", "flat",
                                          "--epoch", "60", "--limit", "2000", "--batchsize", "50", "--unit", "100"};
  const double limit_s = 300;

  // The uninterrupted run, and how long it takes.
  auto reference = train;
  reference.insert(reference.end(), {"--out", (work / "reference").string()});
  const double t0 = now_s();
  if (wait_job(spawn(reference, work / "reference.log"), limit_s, work / "reference.log") != 0) {
    fail("the uninterrupted run failed:\n" + read_text(work / "reference.log"));
  }
  const double duration = now_s() - t0;
  const auto finals = complete_iterations(work / "reference");
  if (finals.empty()) fail("the uninterrupted run wrote no snapshot");
  const int64_t last = finals.back();
  std::cout << "soak: uninterrupted run: " << duration << " s, " << last << " iterations" << std::endl;

  std::mt19937 rng(seed);
  const fs::path out = work / "killed";
  int survived = 0, resumes = 0, fresh_starts = 0, restarts = 0;
  if (through_launcher) {
    // One command; the launcher restarts the job after each kill, up to kills + 1 times.
    auto cmd = train;
    // The delay doubles per restart: a short one for a few kills, none for a soak of many.
    cmd.insert(cmd.begin() + 1,
               {"--max-restarts", std::to_string(kills + 1), "--restart-delay", kills <= 3 ? "0.2" : "0"});
    cmd.insert(cmd.end(), {"--out", out.string()});
    const fs::path log = work / "launcher.log";
    const pid_t job = spawn(cmd, log);
    std::vector<pid_t> killed;
    // Soon after each start, so that every kill lands before the run is over.
    std::uniform_real_distribution<double> when(0.3, std::max(0.6, 0.15 * duration));
    while (survived < kills && waitpid(job, nullptr, WNOHANG) == 0) {
      // Each attempt's ranks are new processes: kill one of them a random while after it starts.
      const int victim = std::uniform_int_distribution<int>(0, kRanks - 1)(rng);
      const auto pid = rank_pid(job, victim, survived);  // attempt k follows the k-th kill
      if (!pid || std::find(killed.begin(), killed.end(), *pid) != killed.end()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      const double start = now_s(), at = when(rng);
      while (now_s() - start < at && waitpid(job, nullptr, WNOHANG) == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      if (kill(*pid, SIGKILL) == 0) {
        killed.push_back(*pid);
        ++survived;
      }
    }
    const int rc = wait_job(job, limit_s * (kills + 2), log);
    const std::string text = read_text(log);
    if (rc != 0) fail("the restarted job failed (exit " + std::to_string(rc) + "):\n" + text);
    for (std::size_t at = 0; (at = text.find("mpirun: the job failed", at)) != std::string::npos; ++at) ++restarts;
    for (std::size_t at = 0; (at = text.find("resumed from iteration", at)) != std::string::npos; ++at) ++resumes;
    if (survived < kills) {
      fail("the job ended after " + std::to_string(survived) + " of " + std::to_string(kills) + " kills:\n" + text);
    }
    if (restarts != survived) {
      fail(std::to_string(survived) + " kills but " + std::to_string(restarts) + " restarts were logged:\n" + text);
    }
    std::cout << "soak: through the launcher: " << survived << " kills, " << restarts << " restarts, " << resumes
              << " resumes" << std::endl;
  }
  for (int round = 0; !through_launcher; ++round) {
    const auto have = complete_iterations(out);
    if (!have.empty() && have.back() == last) {
      if (survived >= kills) break;
      // Finished before enough kills (timings vary): start over.
      fs::remove_all(out);
      ++restarts;
      continue;
    }
    if (round > 6 * kills + 10) fail("no progress after " + std::to_string(round) + " rounds");
    auto cmd = train;
    cmd.insert(cmd.end(), {"--out", out.string()});
    if (!have.empty()) cmd.insert(cmd.end(), {"--resume", out.string()});
    const fs::path log = work / ("round_" + std::to_string(round) + ".log");
    const pid_t job = spawn(cmd, log);
    const bool killing = survived < kills;
    if (killing) {
      // A random rank dies at a random moment of what is left of the run.
      const double left = 1.0 - (have.empty() ? 0.0 : static_cast<double>(have.back()) / static_cast<double>(last));
      // A quarter of the kills hit the start (MPI set-up, loading); the others hit training, before
      // 80% of what is left so that a job rarely ends before its kill.
      std::uniform_real_distribution<double> early(0.1, 1.0),
          later(1.0, 1.0 + 0.8 * std::max(0.0, duration - 1.0) * left);
      const double at = std::uniform_int_distribution<int>(0, 3)(rng) == 0 ? early(rng) : later(rng);
      const int victim = std::uniform_int_distribution<int>(0, kRanks - 1)(rng);
      const double start = now_s();
      while (waitpid(job, nullptr, WNOHANG) == 0) {
        if (now_s() - start >= at) {
          if (const auto pid = rank_pid(job, victim)) {
            kill(*pid, SIGKILL);
            ++survived;
            break;
          }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    const int rc = wait_job(job, limit_s, log);
    const std::string text = read_text(log);
    if (!killing && rc != 0) fail("round " + std::to_string(round) + " failed (exit " + std::to_string(rc) + "):\n" + text);
    if (have.empty()) {
      ++fresh_starts;
      continue;
    }
    const std::string said = "resumed from iteration ";
    const std::size_t at = text.find(said);
    if (at != std::string::npos) {
      ++resumes;
      const auto from = leading_number(std::string_view(text).substr(at + said.size()));
      if (from != have.back()) {
        fail("round " + std::to_string(round) + " resumed from iteration " + (from ? std::to_string(*from) : "?") +
             ", not from the newest complete one, " + std::to_string(have.back()));
      }
    } else if (rc == 0) {
      fail("round " + std::to_string(round) + " did not say where it resumed:\n" + text);
    }  // else killed before it had loaded
  }

  // The end state: bit for bit the uninterrupted run's; nothing temporary or broken left behind.
  const auto mine = complete_iterations(out);
  if (mine.empty() || mine.back() != last) fail("the killed run did not reach iteration " + std::to_string(last));
  for (int r = 0; r < kRanks; ++r) {
    const std::string name = "snapshot_mn_iter_" + std::to_string(last) + "_rank_" + std::to_string(r) + "_of_" +
                             std::to_string(kRanks) + ".npz";
    const auto want = state_of(work / "reference" / name);
    const auto got = state_of(out / name);
    if (want.empty() || want.size() != got.size()) fail("rank " + std::to_string(r) + ": the saved state differs");
    for (const auto& [key, a] : want) {
      const auto it = got.find(key);
      if (it == got.end() || !same_bits(a, it->second)) fail("rank " + std::to_string(r) + ": '" + key + "' differs");
    }
  }
  for (const auto& e : fs::directory_iterator(out)) {
    const std::string name = e.path().filename().string();
    if (name[0] == '.' && name.find(".tmp") != std::string::npos) fail("a temporary file was left: " + name);
    if (name.rfind("snapshot_mn_", 0) == 0) {
      try {
        rensa::serializers::read_npz(e.path().string());
      } catch (const std::exception& x) {
        fail("an unreadable snapshot was left: " + std::string(x.what()));
      }
    }
  }
  if (through_launcher) {
    std::cout << "soak: " << survived << " kills survived through " << restarts << " automatic restarts ("
              << resumes << " resumed from a snapshot)";
  } else {
    std::cout << "soak: " << survived << " kills survived (" << resumes << " resumes checked, " << fresh_starts
              << " fresh starts, " << restarts << " runs that ended before their kill and started over)";
  }
  std::cout << "; the final state equals the uninterrupted run's bit for bit" << std::endl;
  return 0;
}
