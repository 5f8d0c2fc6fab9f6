#pragma once
/// \file
/// create_empty_dataset (ChainerMN's): a dataset of empty examples, for the ranks of a model-parallel
/// job that take no data (their inputs arrive by mn::functions::recv) but must step in time with the
/// ranks that do.
#include "rensa/datasets/dataset.h"

namespace rensa::mn {

/// A dataset with as many examples as `dataset`, each an empty Example (no columns): iterated with
/// the same batch size it gives the same number of iterations per epoch, and the updater calls the
/// model with no inputs. ValueError for a null dataset.
datasets::DatasetPtr create_empty_dataset(const datasets::DatasetPtr& dataset);

}  // namespace rensa::mn
