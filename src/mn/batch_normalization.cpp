// Multi-node batch normalization: the core batch normalization with its per-channel sums reduced over
// the ranks by a differentiable allreduce (no MPI here beyond the communicator).
#include "rensa/mn/batch_normalization.h"

#include <utility>
#include <vector>

#include "rensa/core/error.h"
#include "rensa/core/function_node.h"

namespace rensa::mn {
namespace {

void check_comm(const Communicator& comm, const char* op) {
  RENSA_CHECK(comm.valid(), ValueError, op, ": null communicator (default-constructed)");
}

std::function<Variable(const Variable&)> sum_over_ranks(Communicator comm) {
  return [comm = std::move(comm)](const Variable& partial) { return functions::allreduce(partial, comm); };
}

}  // namespace

namespace functions {

Variable allreduce(const Variable& x, Communicator comm) {
  rensa::detail::ForwardEntry entry("mn_allreduce", x);
  RENSA_CHECK(!x.is_null(), ValueError, "mn::functions::allreduce: x is null");
  check_comm(comm, "mn::functions::allreduce");
  Array y = comm.allreduce(x.array(), ReduceOp::sum);
  return record1("mn_allreduce", {x}, std::move(y), [comm](const BackwardContext& ctx) {
    // d(sum over ranks of every rank's loss) / d(this rank's x): the sum of the output gradients.
    return std::vector<Variable>{allreduce(ctx.grad_output(), comm)};
  });
}

}  // namespace functions

MultiNodeBatchNormalization::MultiNodeBatchNormalization(int64_t size, Communicator comm,
                                                         links::BatchNormalizationOptions options)
    : links::BatchNormalization(size, options), comm_(std::move(comm)) {
  check_comm(comm_, "MultiNodeBatchNormalization");
  set_allreduce_sum(sum_over_ranks(comm_));
}

int convert_batch_normalization(Link& model, const Communicator& comm) {
  check_comm(comm, "convert_batch_normalization");
  int converted = 0;
  for (const auto& [path, link] : model.namedlinks()) {
    if (auto* bn = dynamic_cast<links::BatchNormalization*>(link)) {
      bn->set_allreduce_sum(sum_over_ranks(comm));
      ++converted;
    }
  }
  return converted;
}

}  // namespace rensa::mn
