#pragma once
/// \file
/// Batch normalization over the global batch of every rank (ChainerMN's MultiNodeBatchNormalization
/// and create_mnbn_model), and the differentiable allreduce it is built on.
///
/// Each BatchNormalization normally takes its statistics over its own rank's batch. With small
/// per-rank batches those statistics are noisy; the multi-node form takes them over the batches of
/// all ranks, exactly (unequal batches and ranks with an empty batch included), so N ranks train as
/// one process on the concatenated batch. It costs two small blocking allreduces per layer in
/// forward and two in backward (per-channel sums).

#include <cstdint>

#include "rensa/core/variable.h"
#include "rensa/links/link.h"
#include "rensa/links/normalization.h"
#include "rensa/mn/communicator.h"

namespace rensa::mn {

namespace functions {

/// The elementwise sum of `x` over the ranks of `comm`, on every rank (comm.allreduce with
/// ReduceOp::sum), recorded for backprop: the gradient of x is the sum over ranks of the gradients
/// of the output, itself computed with this function, so higher-order gradients work. Every rank
/// must pass the same shape and dtype, and every rank must run forward and backward through it at
/// the same points in the same order (same graph on every rank; a rank whose x does not require a
/// gradient while another's does would leave the others waiting in backward). Blocking, on the
/// calling thread; it may run while gradient averaging started with start_mean_grad (by the
/// multi-node optimizer during backward) is in flight, which uses MPI communicators of its own.
/// ValueError for a null x or communicator.
Variable allreduce(const Variable& x, Communicator comm);

}  // namespace functions

/// A BatchNormalization whose training-mode statistics (mean and variance per channel) are taken
/// over the batches of every rank of `comm` (functions::allreduce of per-channel sums), so that the
/// output, the gradients and the running averages are those of one BatchNormalization on the
/// concatenation of every rank's batch (gamma and beta get this rank's share of their gradients,
/// which the multi-node optimizer combines like any parameter's). Unequal batches are exact; a rank may pass an empty
/// batch (N = 0) as long as some rank has data (ValueError on every rank otherwise). Test mode uses the running
/// averages and does not communicate. Training-mode forward and backward are collective: every rank must call them at
/// the same points (training::recompute_batch_norm_statistics too: give every rank the same number of batches).
/// Parameters, persistent values and options are BatchNormalization's. ValueError for a null communicator.
class MultiNodeBatchNormalization : public links::BatchNormalization {
 public:
  /// As BatchNormalization(size, options), with the statistics over the ranks of `comm`.
  MultiNodeBatchNormalization(int64_t size, Communicator comm, links::BatchNormalizationOptions options = {});

  /// The communicator the statistics are summed over.
  const Communicator& communicator() const { return comm_; }

 private:
  Communicator comm_;
};

/// Makes every BatchNormalization in `model` (model.namedlinks(), `model` itself included) take its
/// statistics over the batches of every rank of `comm`, as MultiNodeBatchNormalization does, and
/// returns how many it converted. Links are members of their parents in C++, so the conversion is in
/// place rather than a converted copy (ChainerMN's create_mnbn_model): parameters, running averages
/// and options stay. Converting again replaces the communicator. Call it on every rank, before
/// training. ValueError for a null communicator.
int convert_batch_normalization(Link& model, const Communicator& comm);

}  // namespace rensa::mn
