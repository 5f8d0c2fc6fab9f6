// flat: all gradients packed into one buffer per wire dtype, one allreduce over every rank (through
// shared memory when every rank is on one host). naive: the same, one gradient at a time.
#include "src/mn/variant.h"

namespace rensa::mn::detail {
namespace {

void reduce(ReduceContext& c, void* data, int64_t count, Dtype wire) {
  if (c.topo.inter_size == 1 && c.host_sum(data, count, wire)) return;
  allreduce_sum(c.world(), data, count, wire);
}

}  // namespace

RENSA_MN_REGISTER_VARIANT(naive,
                          {.info = {.name = "naive", .summary = "one `MPI_Allreduce` per parameter (the baseline)"},
                           .order = 0,
                           .per_array = true,
                           .reduce = reduce});
RENSA_MN_REGISTER_VARIANT(flat, {.info = {.name = "flat",
                                          .summary = "all gradients packed into one buffer per wire dtype, in "
                                                     "`namedparams()` order; one allreduce"},
                                 .order = 1,
                                 .reduce = reduce});

}  // namespace rensa::mn::detail
