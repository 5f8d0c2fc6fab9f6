#pragma once
/// \file
/// TransformDataset: applies a function to every example of a base dataset when it is read
/// (Chainer's TransformDataset), e.g. for data augmentation.

#include <cstdint>
#include <functional>

#include "rensa/datasets/dataset.h"

namespace rensa::datasets {

/// Example `i` is transform(base->get_example(i)). The transform runs on every read (nothing is
/// cached) and must be safe to call from several threads at once (MultithreadIterator does).
/// A transform that draws random numbers should use its own thread-safe stream, such as
/// transforms::RandomStream (image_transforms.h): the default generator is per thread, so its
/// numbers would depend on which thread reads.
class TransformDataset final : public Dataset {
 public:
  /// A function from example to example.
  using Transform = std::function<Example(Example)>;
  /// ValueError when `base` or `transform` is empty.
  TransformDataset(DatasetPtr base, Transform transform);
  int64_t size() const override { return base_->size(); }
  /// IndexError (naming the dataset and its size) unless 0 <= i < size().
  Example get_example(int64_t i) const override;
  /// The dataset transformed.
  const DatasetPtr& base() const { return base_; }

 private:
  DatasetPtr base_;
  Transform transform_;
};

}  // namespace rensa::datasets
