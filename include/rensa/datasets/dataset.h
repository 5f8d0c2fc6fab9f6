#pragma once
/// \file
/// Datasets (Chainer's): random access to examples; an example is a tuple of arrays (x, t, ...).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rensa/core/array.h"

namespace rensa::datasets {

/// One example: its columns (e.g. {image, label}); labels are 0-d arrays.
using Example = std::vector<Array>;

/// Random-access dataset. get_example must be safe to call from several threads at once.
class Dataset {
 public:
  virtual ~Dataset() = default;
  /// Number of examples.
  virtual int64_t size() const = 0;
  /// Example `i` in [0, size()); IndexError otherwise.
  virtual Example get_example(int64_t i) const = 0;
  /// The examples `indices` (in that order) as bytes from which datasets::decode_dataset
  /// (image_dataset.h) rebuilds such a dataset in another process, without the examples' data:
  /// the file-list datasets give their paths, labels and options, so that mn::scatter_dataset sends
  /// file names, never pixels. std::nullopt (the default) for datasets that hold their examples.
  virtual std::optional<std::string> encode_subset(const std::vector<int64_t>& indices) const {
    (void)indices;
    return std::nullopt;
  }
};

/// A shared, read-only dataset.
using DatasetPtr = std::shared_ptr<const Dataset>;

}  // namespace rensa::datasets
