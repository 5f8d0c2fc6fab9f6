// What the MPI launcher told this process (environment only), refusing to run as several
// independent processes, and whole error lines.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "rensa/mn/launch.h"

namespace {

namespace mn = rensa::mn;

// Sets the launcher variables for the length of a test, and clears them afterwards.
class Launcher : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* v : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE"}) unsetenv(v);
  }
};

TEST_F(Launcher, NoneOutsideAnMpiJob) {
  EXPECT_FALSE(mn::launched_rank().has_value());
  EXPECT_FALSE(mn::refuse_several_processes("prog"));
}

TEST_F(Launcher, OpenMpiAndPmiVariables) {
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  auto r = mn::launched_rank();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->rank, 1);
  EXPECT_EQ(r->size, 4);
  clear();
  setenv("PMI_RANK", "0", 1);
  setenv("PMI_SIZE", "2", 1);
  r = mn::launched_rank();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->rank, 0);
  EXPECT_EQ(r->size, 2);
}

TEST_F(Launcher, MalformedVariablesAreIgnored) {
  for (const auto& [rank, size] : {std::pair{"1", ""}, {"x", "2"}, {"2", "2"}, {"-1", "2"}, {"0", "0"}, {"0", "2x"}}) {
    setenv("OMPI_COMM_WORLD_RANK", rank, 1);
    setenv("OMPI_COMM_WORLD_SIZE", size, 1);
    EXPECT_FALSE(mn::launched_rank().has_value()) << rank << " of " << size;
  }
}

TEST_F(Launcher, RefusesSeveralProcessesWithOneLine) {
  setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
  EXPECT_FALSE(mn::refuse_several_processes("prog"));  // mpirun -n 1 is one process
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  testing::internal::CaptureStderr();
  EXPECT_TRUE(mn::refuse_several_processes("prog"));
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "rank 1: prog: this is process 1 of 2 started by an MPI launcher, but --communicator is not given; "
            "pass --communicator flat to train data-parallel, or start one process\n");
}

TEST_F(Launcher, ErrorLinesArePrefixedWithTheRank) {
  testing::internal::CaptureStderr();
  mn::print_error_line("prog", "it broke");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "prog: it broke\n");
  setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  testing::internal::CaptureStderr();
  mn::print_error_line("prog", "it broke\n");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "rank 3: prog: it broke\n");
}

}  // namespace
