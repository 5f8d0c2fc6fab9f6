// Failure is loud: MPI jobs of mn_failure_helper in which one rank throws, is killed, is stopped,
// segfaults, leaves early, or calls a mismatched collective must end non-zero, quickly, with one line
// naming the rank, the host and the operation. This binary is not itself an MPI program: CTest runs
// it with RENSA_MN_TEST_NP (the job size), RENSA_MPIEXEC and RENSA_MPIEXEC_FLAGS.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#ifndef RENSA_MN_FAILURE_HELPER
#error "RENSA_MN_FAILURE_HELPER must name the helper program"
#endif

namespace {

struct JobResult {
  int exit_code = -1;  // the launcher's exit status (128 + signal when it was killed)
  bool timed_out = false;
  double seconds = 0;
  std::string output;  // stdout and stderr of the whole job
};

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

int job_size() {
  return std::atoi(env_or("RENSA_MN_TEST_NP", "2").c_str());
}

// Runs `mpiexec -n <np> <flags> helper <args...>` with `env` added to the environment, killing it
// after `deadline_s`.
JobResult run_job(const std::vector<std::string>& args, double deadline_s = 60,
                  const std::vector<std::pair<std::string, std::string>>& env = {}) {
  std::vector<std::string> argv{env_or("RENSA_MPIEXEC", "mpiexec"), "-n", std::to_string(job_size())};
  std::istringstream flags(env_or("RENSA_MPIEXEC_FLAGS", "--oversubscribe --bind-to none"));
  for (std::string f; flags >> f;) argv.push_back(f);
  argv.push_back(RENSA_MN_FAILURE_HELPER);
  argv.insert(argv.end(), args.begin(), args.end());
  // Open MPI refuses root without these (CTest sets them; a developer's shell may not).
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);

  int fds[2];
  if (pipe(fds) != 0) return {};
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);  // the whole job in one process group, so a timeout can end all of it
    for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    execvp(cargv[0], cargv.data());
    _exit(127);
  }
  close(fds[1]);
  JobResult result;
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  int status = 0;
  bool exited = false;
  double exited_at = 0;
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      char buf[4096];
      const ssize_t n = read(fds[0], buf, sizeof(buf));
      if (n > 0) {
        result.output.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      if (n == 0 && exited) break;  // EOF
    }
    if (!exited && waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      exited_at = elapsed();
    }
    // A stopped rank may keep the pipe open: stop reading shortly after the launcher is gone.
    if (exited && elapsed() - exited_at > 1.0) break;
    if (!exited && elapsed() > deadline_s) {
      result.timed_out = true;
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      exited = true;
      exited_at = elapsed();
    }
  }
  close(fds[0]);
  kill(-pid, SIGKILL);  // anything the launcher left behind (a stopped rank, say)
  result.seconds = exited_at;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::cout << "job '" << args[0] << "' with " << job_size() << " ranks: exit " << result.exit_code << " after "
            << result.seconds << " s" << std::endl;
  return result;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

#define EXPECT_OUTPUT(result, part) \
  EXPECT_TRUE(contains((result).output, part)) << "missing: " << (part) << "\noutput:\n" << (result).output

std::string culprit() {
  return "rank " + std::to_string(job_size() - 1) + " on host ";
}

TEST(Failure, HealthyJobExitsZero) {
  const JobResult r = run_job({"ok"});
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(Failure, UncaughtExceptionAbortsTheJob) {
  const JobResult r = run_job({"throw"});
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_OUTPUT(r, culprit());
  EXPECT_OUTPUT(r, "boom on purpose (uncaught std::runtime_error)");
}

TEST(Failure, MismatchedCollectiveGivesAClearError) {
  const JobResult r = run_job({"mismatch"});
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_OUTPUT(r, ": allreduce #5 (flat, ");
  EXPECT_OUTPUT(r,
                "collective mismatch: rank 0 calls allreduce(sum, float32, 1000 elements) as operation #5 but rank " +
                    std::to_string(job_size() - 1) + " calls allreduce(sum, float32, 7 elements)");
}

TEST(Failure, KilledRankEndsTheJobWithinTenSeconds) {
  const JobResult r = run_job({"sigkill"});
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(r.seconds, 10.0);
}

TEST(Failure, FatalSignalIsReportedAndAbortsTheJob) {
  const JobResult r = run_job({"segv"});
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_OUTPUT(r, culprit());
  EXPECT_OUTPUT(r, "fatal signal SIGSEGV");
}

TEST(Failure, StoppedRankEndsTheJobAfterTheTimeout) {
  const JobResult r = run_job({"sigstop", "2000"});
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_GE(r.seconds, 2.0);  // the others waited the whole timeout
  EXPECT_LT(r.seconds, 2.0 + 8.0);
  // Whichever waiting rank notices first aborts the job (not the stopped one), and names the rank it
  // waits for: the ranks of one host see each other's progress.
  EXPECT_OUTPUT(r, " on host ");
  EXPECT_FALSE(contains(r.output, "\n" + culprit())) << r.output;
  EXPECT_OUTPUT(r, ": allreduce #5 (flat, 4.0 kB): no progress for ");
  EXPECT_OUTPUT(r, "(timeout 2.0 s)");
  EXPECT_OUTPUT(r, "waiting for " + culprit());
  EXPECT_OUTPUT(r, "(last entered #4), which has not reached this operation");
}

TEST(Failure, TimeoutComesFromTheEnvironment) {
  const JobResult r = run_job({"sigstop"}, 60, {{"RENSA_MN_TIMEOUT", "1.5"}});
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_GE(r.seconds, 1.5);
  EXPECT_LT(r.seconds, 1.5 + 8.0);
  EXPECT_OUTPUT(r, "(timeout 1.5 s)");
  const JobResult bad = run_job({"ok"}, 60, {{"RENSA_MN_TIMEOUT", "5 min"}});
  EXPECT_FALSE(bad.timed_out);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_LT(bad.seconds, 10.0);
  EXPECT_OUTPUT(bad, "create_communicator: RENSA_MN_TIMEOUT must be a non-negative number of seconds");
  EXPECT_OUTPUT(bad, "'5 min'");
  const JobResult tiny = run_job({"ok"}, 60, {{"RENSA_MN_TIMEOUT", "0.0004"}});
  EXPECT_NE(tiny.exit_code, 0);
  EXPECT_OUTPUT(tiny, "RENSA_MN_TIMEOUT '0.0004' rounds to 0 ms, which means never");
}

TEST(Failure, StoppedPeerOfARecvIsNamed) {
  const JobResult r = run_job({"recv", "2000"});
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(r.seconds, 2.0 + 8.0);
  if (contains(r.output, "recv #1")) {  // else a rank waiting in allreduce noticed first
    EXPECT_OUTPUT(r, "rank 0 on host ");
    EXPECT_OUTPUT(r, ": recv #1 from rank " + std::to_string(job_size() - 1) + " (flat, tag 7)");
    EXPECT_OUTPUT(r, "waiting for " + culprit());
  } else {
    // With 4 ranks, the others wait for rank 0 (in its recv) and for the stopped rank.
    EXPECT_OUTPUT(r, "waiting for rank 0 on host ");
    EXPECT_OUTPUT(r, ", " + culprit());
  }
}

TEST(Failure, SendWithoutItsRecvEndsTheJobAtExit) {
  const JobResult r = run_job({"unreceived", "2000"});
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_OUTPUT(r, culprit());
  EXPECT_OUTPUT(r, "at exit: rank 0 sent rank " + std::to_string(job_size() - 1) +
                       " a message with tag 7 (flat) that rank " + std::to_string(job_size() - 1) +
                       " never received: a send without its recv");
}

TEST(Failure, DifferentiableSendWhoseGradientNeverComesNamesBothRanksAndTag) {
  const JobResult r = run_job({"mn_send", "2000"});
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(r.seconds, 2.0 + 8.0);
  EXPECT_OUTPUT(r, "rank 0 on host ");
  EXPECT_OUTPUT(r, ": mn::functions::send (backward): recv #3 from rank " + std::to_string(job_size() - 1) +
                       " (flat, tag 4): no progress for ");
  EXPECT_OUTPUT(r, "waiting for " + culprit());
}

TEST(Failure, GradientOfTheWrongShapeNamesBothRanksTagAndShapes) {
  const JobResult r = run_job({"mn_shape", "2000"});
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_OUTPUT(r, "rank 0 on host ");
  EXPECT_OUTPUT(r, "mn::functions::send (backward): rank 0 sent variable 0 as float32 (2, 3) to rank " +
                       std::to_string(job_size() - 1) + " with tag 4 but rank " + std::to_string(job_size() - 1) +
                       " returned a gradient of float32 (3,)");
}

TEST(Failure, RecvObjWithoutItsSendNamesBothRanksAndTag) {
  const JobResult r = run_job({"recv_obj", "2000"});
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(r.seconds, 2.0 + 8.0);
  EXPECT_OUTPUT(r, "rank 0 on host ");
  EXPECT_OUTPUT(r,
                ": recv_obj: recv #1 from rank " + std::to_string(job_size() - 1) + " (flat, tag 8): no progress for ");
  EXPECT_OUTPUT(r, "waiting for " + culprit());
}

TEST(Failure, SplitAgainstAnotherCollectiveGivesAClearError) {
  const JobResult r = run_job({"split"});
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_OUTPUT(r, "collective mismatch: rank 0 calls split() as operation #5 but rank " +
                       std::to_string(job_size() - 1) + " calls allreduce(sum, float32, 1000 elements)");
}

TEST(Failure, StoppedRankOfASplitCommunicatorIsNamedWithItsWorldRank) {
  const JobResult r = run_job({"sub_stop", "2000"});
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(r.seconds, 2.0 + 8.0);
  EXPECT_OUTPUT(r, ": allreduce #1 (flat, 4.0 kB): no progress for ");
  EXPECT_OUTPUT(r, "waiting for rank 0 (world rank " + std::to_string(job_size() - 1) + ") on host ");
}

TEST(Failure, StoppedRankEndsBackgroundRequestsToo) {
  const JobResult r = run_job({"background", "2000"});
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(r.seconds, 2.0 + 8.0);
  EXPECT_OUTPUT(r, ": mean_grad #1 (flat, 262.1 kB, background): no progress for ");
  EXPECT_OUTPUT(r, "waiting for " + culprit());
  EXPECT_OUTPUT(r, "(entered no collective of this communicator yet)");
}

// A rank stopped inside an operation every rank has entered is named by its silence: its process's
// heartbeat on the host's progress board ages. The stopped rank, resumed by Open MPI to be ended,
// prints nothing (its watchdog does not count the time it was stopped).
TEST(Failure, RankStoppedInsideAnAllreduceIsNamed) {
  const JobResult r = run_job({"inside", "2000"});
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(r.seconds, 1.0 + 2.0 + 8.0);
  EXPECT_OUTPUT(r, ": allreduce #5 (flat, 4.0 kB): no progress for ");
  EXPECT_OUTPUT(r, "waiting for " + culprit());
  EXPECT_OUTPUT(r, "(no sign of life for ");
  EXPECT_OUTPUT(r, "stopped inside this operation");
  EXPECT_FALSE(contains(r.output, "\n" + culprit())) << r.output;
}

TEST(Failure, RankStoppedInsideABackgroundAllreduceIsNamed) {
  const JobResult r = run_job({"background_inside", "2000"});
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(r.seconds, 1.0 + 2.0 + 8.0);
  EXPECT_OUTPUT(r, ": mean_grad #1 (flat, 262.1 kB, background): no progress for ");
  EXPECT_OUTPUT(r, "waiting for " + culprit());
  EXPECT_OUTPUT(r, "stopped inside this operation");
  EXPECT_FALSE(contains(r.output, "\n" + culprit())) << r.output;
}

TEST(Failure, RankLeavingEarlyDoesNotHangTheOthers) {
  const JobResult r = run_job({"exit", "2000"});
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(r.seconds, 2.0 + 8.0);
  EXPECT_OUTPUT(r, "no progress for ");
}

}  // namespace
