#pragma once
/// \file
/// What an MPI launcher told this process, read from the environment without any MPI call, and
/// error lines that stay whole when several ranks print at once.

#include <optional>
#include <string_view>

namespace rensa::mn {

/// This process's place in the job its launcher started.
struct LaunchedRank {
  /// This process's rank, 0 to size - 1.
  int rank = 0;
  /// Number of processes in the job.
  int size = 1;
};

/// The rank and size given by the launcher: Open MPI's mpirun (OMPI_COMM_WORLD_RANK/SIZE), or a
/// PMI launcher such as MPICH's and Intel MPI's mpiexec (PMI_RANK/PMI_SIZE). std::nullopt when the
/// process was not started by one (or the variables are malformed). Needs no MPI initialization, so
/// a program can see that it is one of several ranks before it decides whether to use MPI.
std::optional<LaunchedRank> launched_rank();

/// For a program that trains in one process unless told to use MPI: true, after printing why (one
/// line naming `program`), when the launcher started several processes of it, which would each
/// train alone on all the data and write the same output.
bool refuse_several_processes(std::string_view program, std::string_view flag = "--communicator");

/// Writes "rank R: <program>: <message>" (without "rank R: " outside an MPI job) and a newline to
/// stderr in one write, so the lines of ranks that fail together never interleave.
void print_error_line(std::string_view program, std::string_view message);

}  // namespace rensa::mn
