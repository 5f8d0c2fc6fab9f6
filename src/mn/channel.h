#pragma once
// One family of MPI communicators and the state of the thread that uses it: the user's thread uses
// the foreground channel, the start_mean_grad thread the background one, so their collectives never
// interleave on one MPI communicator.
#include <cstdint>
#include <memory>

#include "rensa/core/array.h"
#include "src/mn/failure.h"
#include "src/mn/mpi_util.h"
#include "src/mn/shm_allreduce.h"

namespace rensa::mn::detail {

class CommunicatorImpl;

struct Channel {
  MpiComm world;     // all ranks
  MpiComm intra;     // the ranks of this host, by rank
  MpiComm inter;     // the ranks with this intra_rank on every host, by host
  uint64_t seq = 0;  // collectives issued on this channel
  WaitSlot slot;     // what the watchdog looks at
  const char* label = "";
  int index = 0;                            // 0: foreground, 1: background (its line in the progress board)
  const CommunicatorImpl* owner = nullptr;  // for the watchdog's diagnosis
  Array pack;                               // the gradient pack buffer, kept between steps (bytes)

  /// The shared-memory reducer of this host's ranks (CommunicatorOptions::shared_memory), mapped at
  /// the first call, which every rank of the host makes at the same point; null when `enabled` is
  /// false, the host has one rank, or the segment could not be mapped. Collective over `intra`.
  ShmAllreduce* host_reducer(bool enabled, int intra_size);

 private:
  std::unique_ptr<ShmAllreduce> shm_;
  int shm_state_ = 0;  // 0: not tried, 1: mapped, -1: unavailable
};

}  // namespace rensa::mn::detail
