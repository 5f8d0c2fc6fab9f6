// main() of the MPI test binaries: initializes MPI through create_communicator, runs every test on
// every rank, and makes every rank exit with the same code, non-zero when a test failed on any rank.
// Ranks other than 0 print only their failures (prefixed with the rank).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <stdexcept>

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

const CommunicatorVariant& variant(const std::string& name) {
  for (const CommunicatorVariant& v : communicator_variants()) {
    if (v.name == name) return v;
  }
  throw std::invalid_argument("no communicator variant named " + name);
}

std::vector<int> host_sizes(int ranks_per_host) {
  const int size = world().size();
  if (ranks_per_host > 0) {
    std::vector<int> sizes;
    for (int first = 0; first < size; first += ranks_per_host) sizes.push_back(std::min(ranks_per_host, size - first));
    return sizes;
  }
  // The world groups by host name: every rank's (host, its size), hosts numbered by their first rank.
  const Array mine = Array::from_vector(std::vector<int32_t>{world().inter_rank(), world().intra_size()});
  std::vector<int> sizes(static_cast<std::size_t>(world().inter_size()), 0);
  for (const Array& a : world().allgather(mine)) {
    const auto v = a.to_vector<int32_t>();
    sizes[static_cast<std::size_t>(v[0])] = v[1];
  }
  return sizes;
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
