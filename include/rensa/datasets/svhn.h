#pragma once
/// \file
/// SVHN, the Street View House Numbers (Chainer's get_svhn), from the .mat files of its 32 x 32
/// cropped-digits format in a local directory.
#include <string>
#include <vector>

#include "rensa/core/dtype.h"
#include "rensa/datasets/dataset.h"

namespace rensa::datasets {

/// Options of get_svhn (Chainer's arguments).
struct SvhnOptions {
  /// Return (image, label) pairs; false: images only.
  bool withlabel = true;
  /// Pixels are byte * scale / 255.
  double scale = 1.0;
  /// Element type of the images.
  Dtype dtype = Dtype::float32;
  /// Element type of the labels.
  Dtype label_dtype = Dtype::int32;
  /// Also load extra_32x32.mat (531,131 more examples).
  bool add_extra = false;
  /// The directory of train_32x32.mat, test_32x32.mat (and extra_32x32.mat); empty:
  /// get_dataset_root() + "/svhn".
  std::string dir{};
};

/// {train, test} (and extra with add_extra): TupleDatasets of (3, 32, 32) images and labels 0..9
/// (the files' label 10, the digit 0, becomes 0, as in Chainer). IOError naming a missing file (and
/// where it comes from: http://ufldl.stanford.edu/housenumbers/) or a malformed one.
std::vector<DatasetPtr> get_svhn(const SvhnOptions& options = {});

}  // namespace rensa::datasets
