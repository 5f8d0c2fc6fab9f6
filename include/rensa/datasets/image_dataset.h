#pragma once
/// \file
/// Datasets of image files (Chainer's ImageDataset, LabeledImageDataset and the zipped variants,
/// and torchvision's ImageFolder). Images are decoded on access: a dataset of a million files
/// costs its file list, not its pixels. Each image is a (C, H, W) array (see image_io.h).
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rensa/core/dtype.h"
#include "rensa/datasets/dataset.h"
#include "rensa/datasets/image_io.h"

namespace rensa::serializers::detail {
class ZipArchive;
}

namespace rensa::datasets {

/// Options of the image datasets.
struct ImageDatasetOptions {
  /// Directory the paths are relative to (Chainer's `root`); absolute paths ignore it.
  std::string root = ".";
  /// Element type of the images: float32 (Chainer's default) or uint8, 4x smaller, which the
  /// transforms accept as well (image_transforms.h).
  Dtype dtype = Dtype::float32;
  /// The channels (stored, gray, rgb).
  ImageColor color = ImageColor::stored;
  /// Reduced-size JPEG decoding (ImageReadOptions::min_size): set it to the size the first
  /// transform needs, e.g. 256 before a 224 crop.
  int64_t min_size = 0;
  /// Element type of the labels (Chainer's label_dtype): int32 or int64.
  Dtype label_dtype = Dtype::int32;
  /// When true, an image that cannot be read or decoded is replaced by the next readable one
  /// (wrapping around; its label too) and a warning naming the file and the reason is printed to
  /// stderr; skipped_count() counts them. When false (the default) it is an IOError naming the
  /// file and the reason.
  bool skip_unreadable = false;
};

/// The pairs of a pairs file (Chainer's format): one "path label" per line, separated by
/// whitespace; blank lines are skipped. ValueError naming the file and the line (1-based) for a
/// line without exactly two fields or with a label that is not an integer; IOError when the file
/// cannot be read.
std::vector<std::pair<std::string, int64_t>> read_pairs_file(const std::string& path);

/// Shared machinery of the image datasets: decoding with the options, and skipping.
class ImageSource {
 public:
  /// Keeps `options` for decoding every image.
  explicit ImageSource(ImageDatasetOptions options);
  virtual ~ImageSource() = default;
  /// The options given to the constructor.
  const ImageDatasetOptions& options() const { return options_; }
  /// Images skipped so far (skip_unreadable).
  int64_t skipped_count() const { return skipped_->load(); }

 protected:
  /// Decodes `bytes` (named `name`) with the options.
  Array decode(const std::string& bytes, const std::string& name) const;
  /// Calls read(i) for i, then i + 1, ... (mod n) while it throws and skip_unreadable is set;
  /// returns the index that succeeded and sets `out`.
  template <class Read>
  int64_t read_skipping(int64_t i, int64_t n, Read read, Array& out) const;
  /// Counts and reports one skipped image.
  void report_skip(const std::string& what) const;

 private:
  ImageDatasetOptions options_;
  std::shared_ptr<std::atomic<int64_t>> skipped_;
};

/// Images only: example i is {image}. Chainer's ImageDataset.
class ImageDataset final : public Dataset, public ImageSource {
 public:
  /// `paths` relative to options.root.
  explicit ImageDataset(std::vector<std::string> paths, ImageDatasetOptions options = {});
  /// The paths listed one per line in `paths_file` (blank lines skipped); IOError naming it.
  static std::shared_ptr<ImageDataset> from_file(const std::string& paths_file, ImageDatasetOptions options = {});
  /// Number of paths.
  int64_t size() const override { return static_cast<int64_t>(paths_.size()); }
  /// {image}; IOError naming the file and the reason when it cannot be decoded.
  Example get_example(int64_t i) const override;
  /// The file of example i (root joined with its path).
  std::string path(int64_t i) const;
  /// The paths as given, relative to options.root.
  const std::vector<std::string>& paths() const { return paths_; }
  /// The paths of `indices` and the options (see Dataset::encode_subset).
  std::optional<std::string> encode_subset(const std::vector<int64_t>& indices) const override;

 private:
  std::vector<std::string> paths_;
};

/// Images and labels: example i is {image, label}, the label a 0-d array of label_dtype.
/// Chainer's LabeledImageDataset.
class LabeledImageDataset final : public Dataset, public ImageSource {
 public:
  /// (path, label) pairs, paths relative to options.root.
  explicit LabeledImageDataset(std::vector<std::pair<std::string, int64_t>> pairs, ImageDatasetOptions options = {});
  /// The pairs of a pairs file (read_pairs_file), as Chainer's LabeledImageDataset(path, root).
  LabeledImageDataset(const std::string& pairs_file, ImageDatasetOptions options = {});
  /// Number of pairs.
  int64_t size() const override { return static_cast<int64_t>(pairs_.size()); }
  /// {image, label}; IOError naming the file and the reason when it cannot be decoded.
  Example get_example(int64_t i) const override;
  /// The file of example i (root joined with its path).
  std::string path(int64_t i) const;
  /// The label of example i.
  int64_t label(int64_t i) const;
  /// The (path, label) pairs as given.
  const std::vector<std::pair<std::string, int64_t>>& pairs() const { return pairs_; }
  /// The pairs of `indices` and the options (see Dataset::encode_subset).
  std::optional<std::string> encode_subset(const std::vector<int64_t>& indices) const override;

 private:
  std::vector<std::pair<std::string, int64_t>> pairs_;
};

/// The result of image_folder: the dataset and the class names (label k is classes[k]).
struct ImageFolder {
  /// The images and labels, labels numbered by class in `classes` order.
  std::shared_ptr<LabeledImageDataset> dataset;
  /// The class names (the subdirectory names); label k is classes[k].
  std::vector<std::string> classes;
};

/// A labeled dataset of `root`/CLASS/.../FILE (torchvision's ImageFolder): the classes are the
/// subdirectories of `root` in sorted order, labelled 0, 1, ...; the files are those with an
/// image extension (.jpg .jpeg .png, any case) found recursively under each, sorted by path.
/// options.root is replaced by `root`. IOError naming `root` when it is not a directory or holds
/// no class directory; ValueError when no image file is found.
ImageFolder image_folder(const std::string& root, ImageDatasetOptions options = {});

/// The images of one zip archive (every file entry, in archive order; read without extracting):
/// example i is {image}. options.root is unused. Chainer's ZippedImageDataset.
class ZippedImageDataset final : public Dataset, public ImageSource {
 public:
  /// IOError naming the archive when it cannot be read.
  explicit ZippedImageDataset(const std::string& zip_path, ImageDatasetOptions options = {});
  ~ZippedImageDataset() override;
  /// Number of file entries in the archive.
  int64_t size() const override;
  Example get_example(int64_t i) const override;
  /// The image of entry `name` (IOError when the archive has no such entry).
  Array get_image(const std::string& name) const;
  /// The entry names, in archive order (example i is names()[i]).
  const std::vector<std::string>& names() const;

 private:
  std::shared_ptr<serializers::detail::ZipArchive> zip_;
};

/// Images and labels from a zip archive and a pairs file on disk whose paths are entry names:
/// example i is {image, label}. Chainer's LabeledZippedImageDataset. IOError naming the entry of
/// a pair that is not in the archive.
class LabeledZippedImageDataset final : public Dataset, public ImageSource {
 public:
  /// The pairs of the pairs file `pairs_file` (read_pairs_file); IOError naming the archive or the file.
  LabeledZippedImageDataset(const std::string& zip_path, const std::string& pairs_file,
                            ImageDatasetOptions options = {});
  /// The (entry name, label) pairs given; IOError naming the archive when it cannot be read.
  LabeledZippedImageDataset(const std::string& zip_path, std::vector<std::pair<std::string, int64_t>> pairs,
                            ImageDatasetOptions options = {});
  /// Number of pairs.
  int64_t size() const override { return static_cast<int64_t>(pairs_.size()); }
  Example get_example(int64_t i) const override;
  /// The archive's path, the pairs of `indices` and the options (see Dataset::encode_subset).
  std::optional<std::string> encode_subset(const std::vector<int64_t>& indices) const override;

 private:
  std::string zip_path_;
  std::shared_ptr<ZippedImageDataset> images_;
  std::vector<std::pair<std::string, int64_t>> pairs_;
};

/// The images of several zip archives, one after another. Chainer's MultiZippedImageDataset.
class MultiZippedImageDataset final : public Dataset {
 public:
  /// IOError naming an archive that cannot be read.
  explicit MultiZippedImageDataset(const std::vector<std::string>& zip_paths, const ImageDatasetOptions& options = {});
  /// Total number of images of all the archives.
  int64_t size() const override { return offsets_.back(); }
  Example get_example(int64_t i) const override;

 private:
  std::vector<std::shared_ptr<ZippedImageDataset>> parts_;
  std::vector<int64_t> offsets_;  // offsets_[k]: first index of part k; back(): the size
};

/// Rebuilds a dataset from Dataset::encode_subset's bytes (ImageDataset, LabeledImageDataset,
/// LabeledZippedImageDataset). ValueError naming decode_dataset for bytes it does not know or that
/// are cut short.
DatasetPtr decode_dataset(const std::string& bytes);

}  // namespace rensa::datasets
