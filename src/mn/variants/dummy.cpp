// dummy: packs and unpacks like flat but sends nothing, for measuring what the rest costs.
#include "src/mn/variant.h"

namespace rensa::mn::detail {
namespace {

void reduce(ReduceContext&, void*, int64_t, Dtype) {}

}  // namespace

RENSA_MN_REGISTER_VARIANT(dummy, {.info = {.name = "dummy",
                                           .summary = "packs and unpacks like `flat` but sends nothing: gradients "
                                                      "keep their local values. For measuring what communication costs",
                                           .communicates = false},
                                  .order = 5,
                                  .reduce = reduce});

}  // namespace rensa::mn::detail
