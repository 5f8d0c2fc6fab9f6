// main() of the MPI test binaries: initializes MPI through create_communicator, runs every test on
// every rank, and makes every rank exit with the same code, non-zero when a test failed on any rank.
// Ranks other than 0 print only their failures (prefixed with the rank).
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <memory>

#include "rensa/core/array.h"
#include "tests/mn/mn_test_util.h"

namespace rensa::mn::testing {
namespace {
Communicator* g_world = nullptr;

// Prints failed assertions of a rank whose normal output is silenced.
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::cerr << "[rank " << rank_ << "] " << (r.file_name() ? r.file_name() : "?") << ":" << r.line_number()
              << ": failure\n"
              << r.summary() << std::endl;
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed()) {
      std::cerr << "[rank " << rank_ << "] FAILED " << info.test_suite_name() << "." << info.name() << std::endl;
    }
  }

 private:
  int rank_;
};
}  // namespace

Communicator& world() {
  return *g_world;
}

CommunicatorOptions test_options() {
  CommunicatorOptions o;
  o.check_collectives = 1;
  o.timeout = std::chrono::seconds(60);
  return o;
}
}  // namespace rensa::mn::testing

int main(int argc, char** argv) {
  auto comm = rensa::mn::create_communicator("flat", argc, argv, rensa::mn::testing::test_options());
  rensa::mn::testing::g_world = &comm;
  ::testing::InitGoogleTest(&argc, argv);
  if (comm.rank() != 0 && std::getenv("RENSA_MN_TEST_ALL_RANKS") == nullptr) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new rensa::mn::testing::FailurePrinter(comm.rank()));
  }
  const int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  // Every rank returns the same code: a failure anywhere fails the job on every rank.
  const int any_failed =
      comm.allreduce(rensa::Array::scalar(failed, rensa::Dtype::int32), rensa::mn::ReduceOp::max).item<int>();
  if (comm.rank() == 0 && any_failed && !failed) std::cerr << "a test failed on another rank (see its output)\n";
  rensa::mn::testing::g_world = nullptr;
  return any_failed;
}
