#pragma once
// Allreduce among the ranks of one host through a shared-memory segment: each rank copies a chunk
// of its data into its slot, reduces its 1/k of the chunk over every slot into its own slot (in rank
// order, accumulating in compute_t, so every rank gets bitwise the same result), and copies each
// 1/k back from the slot of the rank that reduced it. Two barriers per chunk (per-rank counters on
// their own cache lines; a rank that waits long sleeps on a futex, so it leaves its core to the
// rank it waits for), double-buffered slots. Much faster than MPI_Allreduce over Open MPI's
// shared-memory transport for large arrays, which copies every message through FIFOs.
#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "rensa/core/dtype.h"
#include "rensa/mn/communicator.h"
#include "src/mn/shared_segment.h"

namespace rensa::mn::detail {

class ShmAllreduce {
 public:
  ShmAllreduce() = default;
  ShmAllreduce(const ShmAllreduce&) = delete;
  ShmAllreduce& operator=(const ShmAllreduce&) = delete;

  /// Maps one segment shared by the ranks of `comm` (SharedSegment). Collective over `comm`; returns
  /// the same on every rank: false when any rank could not map it (another machine, say).
  bool init(MPI_Comm comm);
  /// Reduces `n` elements of `dtype` at `in` over the ranks into `out` (may equal `in`) with `op`
  /// (mean reduces as sum). Collective over the ranks of init's `comm`.
  void allreduce(const void* in, void* out, int64_t n, Dtype dtype, ReduceOp op);
  /// Writes elements [off, off + m) of this rank's input into `slot`.
  using Fill = std::function<void(int64_t off, int64_t m, void* slot)>;
  /// Takes elements [off, off + m) of the result from `src`.
  using Drain = std::function<void(int64_t off, int64_t m, const void* src)>;
  /// The same with the input written straight into this rank's slots and the result read straight
  /// out of the slots that hold it: gradients are packed and unpacked without a staging buffer.
  void allreduce(int64_t n, Dtype dtype, ReduceOp op, const Fill& fill, const Drain& drain);

 private:
  void barrier();

  SharedSegment segment_;
  char* slots_ = nullptr;  // 2 buffers x k slots x kSlotBytes
  int rank_ = 0, size_ = 1;
  struct Arrival;
  Arrival* arrived_ = nullptr;  // rank r's barrier count and sleepers, on a cache line of its own
  uint32_t generation_ = 0;     // barriers passed (mod 2^32)
  uint64_t chunks_ = 0;
};

}  // namespace rensa::mn::detail
