#pragma once
// Where each rank of a communicator is: which host, and its place within its host and across hosts.
// Every rank holds the same picture, so a decision made from it (a variant refusing a grouping, the
// watchdog naming the ranks of other hosts) is made alike on every rank.
#include <mpi.h>

#include <string>
#include <vector>

#include "src/mn/mpi_util.h"

namespace rensa::mn::detail {

struct HostTopology {
  int rank = 0, size = 1;
  int intra_rank = 0, intra_size = 1;   // within this rank's host
  int inter_rank = 0, inter_size = 1;   // this rank's host, and the number of hosts
  std::string host;                     // the name this rank is grouped by
  std::vector<int> host_sizes;          // ranks per host, by host index (hosts numbered by first rank)
  std::vector<int> host_of;             // host index of each rank
  std::vector<std::string> host_names;  // by host index

  /// Groups the ranks of `world` by each one's `host` name (names longer than 255 bytes are cut).
  /// Collective over `world`.
  static HostTopology gather(MPI_Comm world, std::string host);
  /// This rank's communicators over `world`: `intra` holds the ranks of its host (by rank), `inter`
  /// the ranks with its intra_rank on every host (by host). Both return MPI errors. Collective.
  void split(MPI_Comm world, MpiComm& intra, MpiComm& inter) const;
  /// "(3, 1)": the host sizes for messages.
  std::string describe_sizes() const;
};

}  // namespace rensa::mn::detail
