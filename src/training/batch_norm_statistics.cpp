// Population statistics of batch normalization over one pass of data.
#include "rensa/training/batch_norm_statistics.h"

#include <vector>

#include "rensa/core/config.h"
#include "rensa/core/error.h"
#include "rensa/links/normalization.h"

namespace rensa::training {

int64_t recompute_batch_norm_statistics(Link& model, iterators::Iterator& it, std::size_t column) {
  std::vector<links::BatchNormalization*> bns;
  for (auto& [path, link] : model.namedlinks()) {
    if (auto* bn = dynamic_cast<links::BatchNormalization*>(link)) bns.push_back(bn);
  }
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
    while (auto arrays = it.next_arrays()) {
      RENSA_CHECK(column < arrays->size(), IndexError, "recompute_batch_norm_statistics: column ", column,
                  " of a batch with ", arrays->size(), " columns");
      model(Variable((*arrays)[column].to(model.device())));
      ++batches;
      if (it.is_new_epoch()) break;
    }
  } catch (...) {
    for (std::size_t i = 0; i < bns.size(); ++i) bns[i]->set_finetune(was_finetune[i]);
    throw;
  }
  for (auto* bn : bns) bn->set_finetune(false);
  return batches;
}

}  // namespace rensa::training
