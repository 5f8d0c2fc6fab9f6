// CIFAR-10 and CIFAR-100 from their binary distribution.

#include "rensa/datasets/cifar.h"

#include <filesystem>
#include <vector>

#include "rensa/core/error.h"
#include "rensa/datasets/dataset_root.h"
#include "rensa/datasets/image_io.h"
#include "rensa/datasets/tuple_dataset.h"
#include "src/datasets/pixels.h"

namespace rensa::datasets {
namespace {

constexpr int64_t kPixels = 3 * 32 * 32;

struct Variant {
  const char* who;
  const char* subdir;
  const char* archive;
  int label_bytes;  // 1 (CIFAR-10) or 2 (CIFAR-100: coarse, fine)
  int classes;
};

constexpr Variant kCifar10{"get_cifar10", "cifar-10-batches-bin", "cifar-10-binary.tar.gz", 1, 10};
constexpr Variant kCifar100{"get_cifar100", "cifar-100-binary", "cifar-100-binary.tar.gz", 2, 100};

/// The records of `files`, concatenated: pixels and labels.
DatasetPtr load(const std::filesystem::path& dir, const std::vector<std::string>& files, const Variant& v,
                const CifarOptions& o) {
  std::vector<unsigned char> pixels;
  std::vector<int32_t> labels;
  const int64_t record = v.label_bytes + kPixels;
  for (const std::string& name : files) {
    const std::string path = (dir / name).string();
    std::error_code ec;
    RENSA_CHECK(std::filesystem::is_regular_file(path, ec), IOError, v.who, ": ", path, " not found; download ",
                v.archive, " from https://www.cs.toronto.edu/~kriz/cifar.html and extract it into ",
                dir.parent_path().string(), " (or set CifarOptions::dir)");
    const std::string bytes = read_file_bytes(path);
    RENSA_CHECK(!bytes.empty() && bytes.size() % static_cast<std::size_t>(record) == 0, IOError, v.who, ": ", path,
                " has ", bytes.size(), " bytes, not a whole number of ", record, "-byte records");
    const int64_t n = static_cast<int64_t>(bytes.size()) / record;
    for (int64_t i = 0; i < n; ++i) {
      const auto* r = reinterpret_cast<const unsigned char*>(bytes.data()) + i * record;
      const int label = r[v.label_bytes - 1];  // CIFAR-100: the fine label
      RENSA_CHECK(label < v.classes, IOError, v.who, ": ", path, ": record ", i, " has label ", label,
                  ", outside 0..", v.classes - 1);
      labels.push_back(label);
      pixels.insert(pixels.end(), r + v.label_bytes, r + record);
    }
  }
  const auto n = static_cast<int64_t>(labels.size());
  const Shape shape = o.ndim == 1 ? Shape{n, kPixels} : Shape{n, 3, 32, 32};
  Array x = detail::scale_pixels(pixels.data(), shape, n, kPixels, 1, o.scale, o.dtype);
  if (!o.withlabel) return std::make_shared<TupleDataset>(std::vector<Array>{x});
  return std::make_shared<TupleDataset>(std::vector<Array>{x, Array::from_vector(labels, Shape{n})});
}

std::pair<DatasetPtr, DatasetPtr> get_cifar(const Variant& v, const CifarOptions& o,
                                            const std::vector<std::string>& train, const std::string& test) {
  RENSA_CHECK(o.ndim == 1 || o.ndim == 3, ValueError, v.who, ": ndim must be 1 or 3, got ", o.ndim);
  const std::filesystem::path dir = o.dir.empty() ? std::filesystem::path(get_dataset_root()) / v.subdir : std::filesystem::path(o.dir);
  return {load(dir, train, v, o), load(dir, {test}, v, o)};
}

}  // namespace

std::pair<DatasetPtr, DatasetPtr> get_cifar10(const CifarOptions& options) {
  return get_cifar(kCifar10, options,
                   {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"},
                   "test_batch.bin");
}

std::pair<DatasetPtr, DatasetPtr> get_cifar100(const CifarOptions& options) {
  return get_cifar(kCifar100, options, {"train.bin"}, "test.bin");
}

}  // namespace rensa::datasets
