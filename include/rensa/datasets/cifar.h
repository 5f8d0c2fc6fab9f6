#pragma once
/// \file
/// CIFAR-10 and CIFAR-100 (Chainer's get_cifar10 and get_cifar100) from the datasets' binary
/// distribution in a local directory.
#include <string>
#include <utility>

#include "rensa/core/dtype.h"
#include "rensa/datasets/dataset.h"

namespace rensa::datasets {

/// Options of get_cifar10 and get_cifar100 (Chainer's arguments).
struct CifarOptions {
  /// Examples are {image, label} (label int32, 0-d); false: {image}.
  bool withlabel = true;
  /// 3: images (3, 32, 32); 1: (3072,) (R, then G, then B planes).
  int ndim = 3;
  /// Pixels are byte * scale / 255.
  double scale = 1.0;
  /// Element type of the images.
  Dtype dtype = Dtype::float32;
  /// The directory of the extracted binary archive; empty: get_dataset_root() + "/cifar-10-batches-bin"
  /// (CIFAR-10) or "/cifar-100-binary" (CIFAR-100).
  std::string dir{};
};

/// (train, test): 50000 and 10000 TupleDatasets from data_batch_1.bin .. data_batch_5.bin and
/// test_batch.bin (each record: 1 label byte, 3072 pixel bytes). IOError naming a missing or
/// malformed file (and, when missing, where the dataset comes from: cifar-10-binary.tar.gz of
/// https://www.cs.toronto.edu/~kriz/cifar.html); ValueError for ndim other than 1 or 3.
std::pair<DatasetPtr, DatasetPtr> get_cifar10(const CifarOptions& options = {});

/// (train, test): 50000 and 10000 TupleDatasets from train.bin and test.bin (each record: coarse
/// label byte, fine label byte, 3072 pixel bytes); the labels are the 100 fine classes, as in
/// Chainer. Errors as get_cifar10 (cifar-100-binary.tar.gz).
std::pair<DatasetPtr, DatasetPtr> get_cifar100(const CifarOptions& options = {});

}  // namespace rensa::datasets
