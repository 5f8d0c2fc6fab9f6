// two_dimensional: reduce-scatter within each host, allreduce of each slice across hosts by the
// ranks holding it, allgather within each host: every rank talks across hosts, each for 1/k of the
// data (k ranks per host, the same on every host).
#include <algorithm>
#include <vector>

#include "src/mn/variant.h"

namespace rensa::mn::detail {
namespace {

void reduce(ReduceContext& c, void* data, int64_t count, Dtype wire) {
  const HostTopology& t = c.topo;
  const int k = t.intra_size;
  if (k == 1) {
    allreduce_sum(c.inter(), data, count, wire);
    return;
  }
  const MPI_Datatype type = mpi_type(wire);
  std::vector<int> counts(static_cast<std::size_t>(k)), displs(static_cast<std::size_t>(k));
  int64_t off = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    counts[i] = static_cast<int>(count / k + (static_cast<int64_t>(i) < count % k ? 1 : 0));
    displs[i] = static_cast<int>(off);
    off += counts[i];
  }
  const auto me = static_cast<std::size_t>(t.intra_rank);
  const std::size_t isz = itemsize(wire);
  char* mine = static_cast<char*>(data) + static_cast<std::size_t>(displs[me]) * isz;
  // Within the host through shared memory when it can (every rank then has the host's sum, of
  // which it owns one slice across hosts).
  if (c.host_sum(data, count, wire)) {
    if (t.inter_size > 1) {
      if (counts[me] > 0) allreduce_sum(c.inter(), mine, counts[me], wire);
      RENSA_MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, type, data, counts.data(), displs.data(), type, c.intra()));
    }
    return;
  }
  Array slice = Array::empty({std::max(counts[me], 1)}, wire);
  RENSA_MPI_CHECK(
      MPI_Reduce_scatter(data, slice.raw_data(), counts.data(), type, mpi_op(wire, ReduceOp::sum), c.intra()));
  if (t.inter_size > 1 && counts[me] > 0) allreduce_sum(c.inter(), slice.raw_data(), counts[me], wire);
  std::copy_n(static_cast<const char*>(slice.raw_data()), static_cast<std::size_t>(counts[me]) * isz, mine);
  RENSA_MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, type, data, counts.data(), displs.data(), type, c.intra()));
}

}  // namespace

RENSA_MN_REGISTER_VARIANT(two_dimensional,
                          {.info = {.name = "two_dimensional",
                                    .summary = "reduce-scatter within each host, allreduce of each slice across hosts "
                                               "by the ranks holding it, allgather within each host (hosts must have "
                                               "equal numbers of ranks)",
                                    .hosts = HostGrouping::equal},
                           .order = 3,
                           .reduce = reduce});

}  // namespace rensa::mn::detail
