// hierarchical: reduce to the first rank of each host, allreduce among those, broadcast within each
// host, so only one rank per host talks across hosts.
#include "src/mn/variant.h"

namespace rensa::mn::detail {
namespace {

void reduce(ReduceContext& c, void* data, int64_t count, Dtype wire) {
  const HostTopology& t = c.topo;
  const MPI_Datatype type = mpi_type(wire);
  const int n = static_cast<int>(count);
  // Within the host through shared memory when it can: every rank of the host gets its sum.
  if (c.host_sum(data, count, wire)) {
    if (t.inter_size > 1) {
      if (t.intra_rank == 0) allreduce_sum(c.inter(), data, count, wire);
      RENSA_MPI_CHECK(MPI_Bcast(data, n, type, 0, c.intra()));
    }
    return;
  }
  if (t.intra_size > 1) {
    const MPI_Op op = mpi_op(wire, ReduceOp::sum);
    if (t.intra_rank == 0) {
      RENSA_MPI_CHECK(MPI_Reduce(MPI_IN_PLACE, data, n, type, op, 0, c.intra()));
    } else {
      RENSA_MPI_CHECK(MPI_Reduce(data, nullptr, n, type, op, 0, c.intra()));
    }
  }
  // inter() of intra_rank 0 holds the first rank of every host.
  if (t.intra_rank == 0 && t.inter_size > 1) allreduce_sum(c.inter(), data, count, wire);
  if (t.intra_size > 1) RENSA_MPI_CHECK(MPI_Bcast(data, n, type, 0, c.intra()));
}

}  // namespace

RENSA_MN_REGISTER_VARIANT(hierarchical,
                          {.info = {.name = "hierarchical",
                                    .summary = "reduce to the first rank of each host, allreduce among those ranks, "
                                               "broadcast within each host"},
                           .order = 2,
                           .reduce = reduce});

}  // namespace rensa::mn::detail
