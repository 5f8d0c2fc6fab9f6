#pragma once
/// \file
/// recompute_batch_norm_statistics: replaces the running averages of every batch normalization in a
/// model by population statistics over one pass of data. It runs a model over an iterator, so it is
/// a training utility, not part of links.

#include <cstddef>
#include <cstdint>

#include "rensa/iterators/iterator.h"
#include "rensa/links/link.h"

namespace rensa::training {

/// Recomputes the statistics of every links::BatchNormalization in `model` as population
/// statistics over one pass of `it` (the 15-minute ImageNet recipe): resets their N, runs
/// model(batch column `column`) in training mode without backprop for every batch until the
/// iterator finishes (std::nullopt) or completes an epoch, then leaves finetune mode off so that
/// test mode uses the result. `model` maps inputs to outputs (pass a Classifier's predictor, not the
/// Classifier); give a fresh iterator, best one without repeat or shuffle (it is read, not reset).
/// Returns the number of batches used. IndexError when a batch has no column `column`; on any
/// error the layers' finetune flags are restored.
int64_t recompute_batch_norm_statistics(Link& model, iterators::Iterator& it, std::size_t column = 0);

}  // namespace rensa::training

namespace rensa::links {
/// The name it had when it lived in links (L::recompute_batch_norm_statistics).
using training::recompute_batch_norm_statistics;
}  // namespace rensa::links
