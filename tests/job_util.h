#pragma once
// What the tests that start whole jobs share (the soak of kills and resumes, the resume check of
// every example): starting a command in a process group of its own with its output in a file,
// waiting for it with a time limit, and comparing the model and optimizer state of snapshots.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rensa/serializers/npz.h"

namespace job_util {

namespace fs = std::filesystem;

[[noreturn]] inline void fail(const std::string& why) {
  std::cerr << "FAILED: " << why << std::endl;
  std::exit(1);
}

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Starts `argv` in a process group of its own with stdout and stderr into `log`.
inline pid_t spawn(const std::vector<std::string>& argv, const fs::path& log) {
  const pid_t pid = fork();
  if (pid < 0) fail("fork failed");
  if (pid == 0) {
    setpgid(0, 0);
    const std::string path = log.string();
    FILE* out = std::freopen(path.c_str(), "w", stdout);
    if (out == nullptr || dup2(fileno(stdout), STDERR_FILENO) < 0) _exit(126);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  return pid;
}

// Waits for the job; kills its group and fails after `limit_s`.
inline int wait_job(pid_t pid, double limit_s, const fs::path& log) {
  const double start = now_s();
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (now_s() - start > limit_s) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      fail("a job ran past " + std::to_string(limit_s) + " s:\n" + read_text(log));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(-pid, SIGKILL);  // anything left in the group
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Model and optimizer arrays of a snapshot (the rest holds times and logs).
inline std::map<std::string, rensa::Array> state_of(const fs::path& file) {
  std::map<std::string, rensa::Array> out;
  for (auto& [key, a] : rensa::serializers::read_npz(file.string())) {
    if (key.rfind("updater/model:", 0) == 0 || key.rfind("updater/optimizer:", 0) == 0) out[key] = a;
  }
  return out;
}

inline bool same_bits(const rensa::Array& a, const rensa::Array& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

}  // namespace job_util
