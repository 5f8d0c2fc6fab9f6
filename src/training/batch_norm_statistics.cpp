// Population statistics of batch normalization over one pass of data.
#include "rensa/training/batch_norm_statistics.h"

#include <optional>
#include <vector>

#include "rensa/core/config.h"
#include "rensa/core/error.h"
#include "rensa/links/normalization.h"
#include "src/training/batch_norm_statistics_pass.h"

namespace rensa::training {
namespace detail {

std::vector<links::BatchNormalization*> batch_normalizations(Link& model) {
  std::vector<links::BatchNormalization*> bns;
  for (auto& [path, link] : model.namedlinks()) {
    if (auto* bn = dynamic_cast<links::BatchNormalization*>(link)) bns.push_back(bn);
  }
  return bns;
}

int64_t recompute_pass(Link& model, iterators::Iterator& it, std::size_t column, const BatchGate& gate) {
  const std::vector<links::BatchNormalization*> bns = batch_normalizations(model);
  std::vector<bool> was_finetune;
  for (auto* bn : bns) {
    was_finetune.push_back(bn->finetune());
    bn->start_finetuning();
    bn->set_finetune(true);
  }
  int64_t batches = 0;
  try {
    auto train = using_config("train", true);
    auto nograd = no_backprop_mode();
    bool epoch_done = false;
    while (true) {
      std::optional<std::vector<Array>> arrays;
      if (!epoch_done) arrays = it.next_arrays();
      if (gate ? !gate(arrays.has_value()) : !arrays) break;
      RENSA_CHECK(arrays.has_value(), ValueError,
                  "recompute_batch_norm_statistics: the batch gate went on without a batch on this process");
      RENSA_CHECK(column < arrays->size(), IndexError, "recompute_batch_norm_statistics: column ", column,
                  " of a batch with ", arrays->size(), " columns");
      model(Variable((*arrays)[column].to(model.device())));
      ++batches;
      epoch_done = it.is_new_epoch();
    }
  } catch (...) {
    for (std::size_t i = 0; i < bns.size(); ++i) bns[i]->set_finetune(was_finetune[i]);
    throw;
  }
  for (auto* bn : bns) bn->set_finetune(false);
  return batches;
}

}  // namespace detail

int64_t recompute_batch_norm_statistics(Link& model, iterators::Iterator& it, std::size_t column) {
  return detail::recompute_pass(model, it, column, nullptr);
}

}  // namespace rensa::training
