// SVHN from its .mat files: X (32, 32, 3, N) uint8 and y (N, 1), column-major.

#include "rensa/datasets/svhn.h"

#include <filesystem>

#include "rensa/core/error.h"
#include "rensa/datasets/dataset_root.h"
#include "rensa/datasets/image_io.h"
#include "rensa/datasets/tuple_dataset.h"
#include "src/datasets/mat_file.h"
#include "src/datasets/pixels.h"

namespace rensa::datasets {
namespace {

DatasetPtr load(const std::filesystem::path& dir, const std::string& name, const SvhnOptions& o) {
  const std::string path = (dir / name).string();
  std::error_code ec;
  RENSA_CHECK(std::filesystem::is_regular_file(path, ec), IOError, "get_svhn: ", path, " not found; download ", name,
              " from http://ufldl.stanford.edu/housenumbers/ into ", dir.string(), " (or set SvhnOptions::dir)");
  const std::string bytes = read_file_bytes(path);
  const auto arrays = detail::parse_mat(bytes.data(), bytes.size(), "get_svhn: " + path);
  const auto x = arrays.find("X"), y = arrays.find("y");
  RENSA_CHECK(x != arrays.end() && y != arrays.end(), IOError, "get_svhn: ", path, " lacks the matrices X and y");
  // Reversed MATLAB dimensions: X is (N, 3, 32, 32) over (n, c, w, h), y (1, N).
  const Shape& xs = x->second.shape();
  RENSA_CHECK(x->second.dtype() == Dtype::uint8 && xs.size() == 4 && xs[1] == 3 && xs[2] == 32 && xs[3] == 32,
              IOError, "get_svhn: ", path, ": X must be 32 x 32 x 3 x N uint8, found reversed shape ", xs);
  const int64_t n = xs[0];
  RENSA_CHECK(y->second.size() == n, IOError, "get_svhn: ", path, ": ", n, " images but ", y->second.size(),
              " labels");
  // (n, c, w, h) -> (n, c, h, w), Chainer's transpose(3, 2, 0, 1).
  const Array chw = x->second.transpose({0, 1, 3, 2}).copy();
  const Array images = detail::scale_pixels(static_cast<const unsigned char*>(chw.raw_data()), Shape{n, 3, 32, 32}, n,
                                            3 * 32 * 32, 1, o.scale, o.dtype);
  if (!o.withlabel) return std::make_shared<TupleDataset>(std::vector<Array>{images});
  const std::vector<double> raw = y->second.astype(Dtype::float64).to_vector<double>();
  std::vector<int64_t> labels;
  labels.reserve(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    RENSA_CHECK(raw[i] >= 0 && raw[i] <= 10 && raw[i] == static_cast<double>(static_cast<int64_t>(raw[i])), IOError,
                "get_svhn: ", path, ": label ", raw[i], " of example ", i, " is not in 0..10");
    labels.push_back(raw[i] == 10 ? 0 : static_cast<int64_t>(raw[i]));
  }
  return std::make_shared<TupleDataset>(
      std::vector<Array>{images, Array::from_vector(labels, Shape{n}).astype(o.label_dtype)});
}

}  // namespace

std::vector<DatasetPtr> get_svhn(const SvhnOptions& options) {
  const std::filesystem::path dir = options.dir.empty() ? std::filesystem::path(get_dataset_root()) / "svhn"
                                                        : std::filesystem::path(options.dir);
  std::vector<DatasetPtr> out{load(dir, "train_32x32.mat", options), load(dir, "test_32x32.mat", options)};
  if (options.add_extra) out.push_back(load(dir, "extra_32x32.mat", options));
  return out;
}

}  // namespace rensa::datasets
