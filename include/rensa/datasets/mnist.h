#pragma once
/// \file
/// MNIST and Fashion-MNIST (Chainer's get_mnist / get_fashion_mnist) and the IDX file reader
/// they use. IDX files may be gzip-compressed (the usual *.gz names) or not.

#include <cstddef>
#include <string>
#include <vector>
#include <utility>

#include "rensa/core/array.h"
#include "rensa/core/dtype.h"
#include "rensa/datasets/dataset.h"

namespace rensa::datasets {

/// Where the dataset-fashion-mnist package installs Fashion-MNIST.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

/// Options of get_mnist / get_fashion_mnist, with Chainer's meanings and defaults.
struct MnistOptions {
  /// Examples are {image, label} when true, {image} when false.
  bool withlabel = true;
  /// Image shape: 1 -> (784,), 2 -> (28, 28), 3 -> (1, 28, 28) (or (3, 28, 28) with rgb_format).
  int ndim = 1;
  /// Pixels are scaled to [0, scale]: value = byte / 255 * scale.
  double scale = 1.0;
  /// Image dtype (any floating or integer dtype; scaling is computed in float32 or float64).
  Dtype dtype = Dtype::float32;
  /// Label dtype (0-d labels).
  Dtype label_dtype = Dtype::int32;
  /// With ndim 3, repeat the gray channel three times: (3, 28, 28).
  bool rgb_format = false;
  /// Directory of the four IDX files; empty means kFashionMnistDir for get_fashion_mnist.
  std::string dir{};
};

/// Loads Fashion-MNIST from options.dir (default kFashionMnistDir): (train, test) TupleDatasets of
/// 60000 and 10000 examples. A missing directory or file throws IOError naming the path and saying
/// to install the dataset-fashion-mnist package (scripts/setup does); a malformed file throws
/// IOError naming the file and what is wrong. See get_mnist for the files.
std::pair<DatasetPtr, DatasetPtr> get_fashion_mnist(const MnistOptions& options = {});

/// The names of Fashion-MNIST's ten classes, by label (Chainer's get_fashion_mnist_labels):
/// "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
/// "Ankle boot".
std::vector<std::string> get_fashion_mnist_labels();

/// Loads Kuzushiji-MNIST (Chainer's get_kuzushiji_mnist) from options.dir (default
/// get_dataset_root() + "/kuzushiji_mnist"): the NumPy files kmnist-train-imgs.npz,
/// kmnist-train-labels.npz, kmnist-test-imgs.npz and kmnist-test-labels.npz (array "arr_0";
/// http://codh.rois.ac.jp/kmnist/), into (train, test) as get_mnist shapes and scales them. IOError
/// naming a missing file (and where it comes from) or one without 28 x 28 uint8 images and labels
/// 0..9 of the same count.
std::pair<DatasetPtr, DatasetPtr> get_kuzushiji_mnist(const MnistOptions& options = {});

/// Kuzushiji-MNIST's classes by label: (romaji, the hiragana in UTF-8), e.g. {"o", "お"}
/// (Chainer's get_kuzushiji_mnist_labels).
std::vector<std::pair<std::string, std::string>> get_kuzushiji_mnist_labels();

/// Loads MNIST-format data from `dir` (options.dir is ignored): train-images-idx3-ubyte,
/// train-labels-idx1-ubyte, t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte, each with or
/// without a .gz suffix (the .gz name is preferred). Validates the magic numbers (0x00000803 images,
/// 0x00000801 labels), image size 28x28, equal image and label counts, the exact data length and
/// labels 0..9; every violation throws IOError naming the file. Each column is one array (the
/// examples are views into it). ValueError for bad options.
std::pair<DatasetPtr, DatasetPtr> get_mnist(const std::string& dir, const MnistOptions& options = {});

/// Parses an IDX image held in memory (gzip-compressed when it starts with the gzip magic bytes):
/// a uint8 array of the shape in its header. When `expected_ndim` >= 0 the magic number must be
/// 0x00000800 + expected_ndim. Only unsigned-byte data (type 0x08) is supported. Throws IOError,
/// naming `what`, for a bad magic, a truncated header, data shorter or longer than the header says,
/// or corrupt gzip data.
Array parse_idx(const void* data, std::size_t size, const std::string& what, int expected_ndim = -1);

/// Reads an IDX file (see parse_idx); IOError naming the path when it cannot be read.
Array read_idx(const std::string& path, int expected_ndim = -1);

}  // namespace rensa::datasets
