#pragma once
// A communicator variant is a strategy: how a buffer of packed gradients is summed over the ranks,
// given where the ranks are (HostTopology). Everything else (packing, channels, fingerprints, the
// watchdog, the start_mean_grad thread) is CommunicatorImpl's and the same for every variant. Each
// variant is one file in src/mn/variants/ that registers its entry in the table with
// RENSA_MN_REGISTER_VARIANT; create_communicator, communicator_variants() and the tests read it.
#include <mpi.h>

#include <cstdint>
#include <string_view>

#include "rensa/core/dtype.h"
#include "rensa/mn/communicator.h"
#include "src/mn/channel.h"
#include "src/mn/host_topology.h"

namespace rensa::mn::detail {

/// What a variant's reduction may use: this rank's place among the hosts, and the MPI communicators
/// of the channel it runs on (the user's thread's or the start_mean_grad thread's).
class ReduceContext {
 public:
  ReduceContext(const HostTopology& topo, Channel& ch, bool shared_memory)
      : topo(topo), ch_(ch), shared_memory_(shared_memory) {}
  const HostTopology& topo;
  MPI_Comm world() const { return ch_.world.get(); }
  /// The ranks of this host, by rank.
  MPI_Comm intra() const { return ch_.intra.get(); }
  /// The ranks with this intra_rank on every host, by host.
  MPI_Comm inter() const { return ch_.inter.get(); }
  /// Sums `count` elements of `wire` at `data` over this host's ranks in place through shared
  /// memory, in rank order (bitwise the same on every rank); false, with nothing done, when shared
  /// memory is off or unavailable or the host has one rank. Collective over intra().
  bool host_sum(void* data, int64_t count, Dtype wire);

 private:
  Channel& ch_;
  bool shared_memory_;
};

/// Sums `count` elements of dtype `wire` at `data` over all ranks, in place. The elements are packed
/// gradients already divided by the number of ranks; `count` fits an int. Every rank must end with
/// the same bits; collectives go on `c`'s communicators only, in the same order on every rank.
using ReduceFn = void (*)(ReduceContext& c, void* data, int64_t count, Dtype wire);

struct VariantEntry {
  CommunicatorVariant info;
  int order = 0;           // its place in communicator_variants()
  bool per_array = false;  // one reduction per gradient instead of one per pack (naive)
  ReduceFn reduce = nullptr;
};

/// Adds `entry` to the table (at static initialization; a second entry of one name is a logic error).
bool register_variant(const VariantEntry& entry);
#define RENSA_MN_REGISTER_VARIANT(id, ...) \
  [[maybe_unused]] static const bool rensa_mn_variant_##id = ::rensa::mn::detail::register_variant(__VA_ARGS__)

/// The entry named `name`; ValueError listing the valid names when there is none.
const VariantEntry& find_variant(std::string_view name);
/// ValueError when `entry` does not run on `topo`'s hosts, naming the variants that would.
void check_hosts(const VariantEntry& entry, const HostTopology& topo);

/// MPI_Allreduce of `count` elements of `wire` at `data`, summed in place over `comm`.
void allreduce_sum(MPI_Comm comm, void* data, int64_t count, Dtype wire);

}  // namespace rensa::mn::detail
