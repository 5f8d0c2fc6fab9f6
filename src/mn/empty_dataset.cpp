// create_empty_dataset: the size of a dataset, and nothing else.
#include "rensa/mn/empty_dataset.h"

#include <memory>

#include "rensa/core/error.h"

namespace rensa::mn {
namespace {

class EmptyDataset final : public datasets::Dataset {
 public:
  explicit EmptyDataset(int64_t size) : size_(size) {}
  int64_t size() const override { return size_; }
  datasets::Example get_example(int64_t i) const override {
    RENSA_CHECK(i >= 0 && i < size_, IndexError, "create_empty_dataset: index ", i, " is out of range for size ",
                size_);
    return {};
  }

 private:
  int64_t size_;
};

}  // namespace

datasets::DatasetPtr create_empty_dataset(const datasets::DatasetPtr& dataset) {
  RENSA_CHECK(dataset != nullptr, ValueError, "create_empty_dataset: null dataset");
  return std::make_shared<EmptyDataset>(dataset->size());
}

}  // namespace rensa::mn
