#pragma once
/// \file
/// Population statistics of batch normalization over every rank's shard of the data: the multi-node
/// form of training::recompute_batch_norm_statistics.

#include <cstddef>
#include <cstdint>

#include "rensa/iterators/iterator.h"
#include "rensa/links/link.h"
#include "rensa/mn/communicator.h"

namespace rensa::mn {

/// training::recompute_batch_norm_statistics over the union of every rank's batches. Each rank runs
/// `model` (column `column` of each batch, training mode, no backprop) over one pass of its own
/// iterator, as the single-process function does; then the statistics of every links::BatchNormalization
/// are combined over the ranks, in float64, weighted by each rank's count of batches: every rank ends
/// with the avg_mean, avg_var and N that one process running the same batches would hold (the mean
/// over all batches of their means and unbiased variances; with equal batches, the population mean).
/// Layers that already take their statistics over every rank (MultiNodeBatchNormalization,
/// convert_batch_normalization) are left as their pass made them, the same on every rank; such a
/// model runs its batches in step, so every rank must have the same number of batches (ValueError on
/// every rank, at the first batch some rank lacks, otherwise).
///
/// Collective: call it on every rank with the same model structure (a rank that finishes its pass early
/// waits for the others within the communicator's timeout). Returns the number of batches
/// over every rank (the sum of each rank's). ValueError on every rank, before any batch, when the
/// ranks' models differ in their batch normalizations (paths, sizes, dtypes, multi-node or not), and
/// for a null communicator; errors of a batch as the single-process function.
int64_t recompute_batch_norm_statistics(Link& model, iterators::Iterator& it, Communicator comm,
                                        std::size_t column = 0);

}  // namespace rensa::mn
