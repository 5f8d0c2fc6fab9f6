#pragma once
/// \file
/// Iterators for model-parallel jobs (ChainerMN's chainermn.iterators): one rank reads the batches and
/// the others receive them, or every rank reads its own copy in the same shuffled order.
#include <cstdint>
#include <memory>
#include <optional>

#include "rensa/datasets/dataset.h"
#include "rensa/iterators/iterator.h"
#include "rensa/iterators/serial_iterator.h"
#include "rensa/mn/communicator.h"

namespace rensa::mn {

/// ChainerMN's create_multi_node_iterator(actual_iterator, communicator, rank_master=0): on rank_master,
/// `actual_iterator` reads the batches and each next() broadcasts the batch (stacked by
/// datasets::concat_examples, so a batch's examples must have the same shapes per column) and the
/// epoch position to the other ranks, whose iterator returns the same batch and the same epoch,
/// epoch_detail and is_new_epoch. next() is collective: every rank calls it at the same points.
/// The other ranks pass a null actual_iterator (theirs is ignored). serialize saves and loads the
/// master's iterator; the others take the position from the next batch. reset() on every rank resets
/// the master's iterator. ValueError for a null communicator, rank_master outside it, or a null
/// actual_iterator on rank_master (on every rank alike).
std::unique_ptr<iterators::Iterator> create_multi_node_iterator(std::unique_ptr<iterators::Iterator> actual_iterator,
                                                                Communicator communicator, int rank_master = 0);

/// ChainerMN's create_synchronized_iterator: a SerialIterator over this rank's `dataset` whose shuffling
/// seed is rank 0's (options.seed on rank 0, or drawn there), so every rank visits its dataset in the
/// same order and batches line up across ranks (an encoder and its decoder on two ranks, say). Rensa
/// iterators fix their seed at construction, so this takes the iterator's arguments rather than an
/// iterator. Collective; the datasets must have the same size (ValueError on every rank otherwise).
std::unique_ptr<iterators::SerialIterator> create_synchronized_iterator(const datasets::DatasetPtr& dataset,
                                                                        int64_t batch_size,
                                                                        const Communicator& communicator,
                                                                        iterators::SerialIteratorOptions options = {});

}  // namespace rensa::mn
