// single_node: flat over the ranks of the one host (ChainerMN's single_node communicator).
#include "src/mn/variant.h"

namespace rensa::mn::detail {
namespace {

void reduce(ReduceContext& c, void* data, int64_t count, Dtype wire) {
  if (c.host_sum(data, count, wire)) return;
  allreduce_sum(c.intra(), data, count, wire);
}

}  // namespace

RENSA_MN_REGISTER_VARIANT(single_node,
                          {.info = {.name = "single_node",
                                    .summary = "`flat` over the host's ranks; every rank must be on one host",
                                    .hosts = HostGrouping::one},
                           .order = 4,
                           .reduce = reduce});

}  // namespace rensa::mn::detail
