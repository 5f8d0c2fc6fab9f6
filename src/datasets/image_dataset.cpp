// Image-file datasets: file lists, pairs files, class folders and zip archives, decoded on access.

#include "rensa/datasets/image_dataset.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "rensa/core/error.h"
#include "src/datasets/common.h"
#include "src/serializers/npz_internal.h"

namespace rensa::datasets {
namespace {

namespace fs = std::filesystem;

std::string join(const std::string& root, const std::string& path) {
  if (path.empty() || path.front() == '/' || root.empty() || root == ".") return path;
  return root.back() == '/' ? root + path : root + "/" + path;
}

std::vector<std::string> read_lines(const std::string& path, const char* who) {
  std::ifstream in(path);
  RENSA_CHECK(in.good(), IOError, who, ": cannot open '", path, "'");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(std::move(line));
  RENSA_CHECK(!in.bad(), IOError, who, ": error reading '", path, "'");
  return lines;
}

std::vector<std::string> fields_of(const std::string& line) {
  std::istringstream is(line);
  std::vector<std::string> out;
  for (std::string f; is >> f;) out.push_back(std::move(f));
  return out;
}

void check_options(const char* who, const ImageDatasetOptions& o) {
  RENSA_CHECK(o.dtype == Dtype::uint8 || is_floating(o.dtype), ValueError, who,
              ": dtype must be uint8 or floating, got ", dtype_name(o.dtype));
  RENSA_CHECK(o.label_dtype == Dtype::int32 || o.label_dtype == Dtype::int64, ValueError, who,
              ": label_dtype must be int32 or int64, got ", dtype_name(o.label_dtype));
  RENSA_CHECK(o.min_size >= 0, ValueError, who, ": min_size must be >= 0, got ", o.min_size);
}

bool has_image_extension(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

Array label_array(int64_t label, Dtype dtype) { return Array::scalar(static_cast<double>(label), dtype); }

// encode_subset's format: a kind tag, the options, then the entries, as length-prefixed fields.
constexpr const char* kImageTag = "rensa.ImageDataset.1";
constexpr const char* kLabeledTag = "rensa.LabeledImageDataset.1";
constexpr const char* kZippedTag = "rensa.LabeledZippedImageDataset.1";

struct Encoder {
  std::string out;
  void u64(uint64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void str(const std::string& s) {
    u64(s.size());
    out += s;
  }
  void options(const ImageDatasetOptions& o) {
    str(o.root);
    u64(static_cast<uint64_t>(o.dtype));
    u64(static_cast<uint64_t>(o.color));
    i64(o.min_size);
    u64(static_cast<uint64_t>(o.label_dtype));
    u64(o.skip_unreadable ? 1 : 0);
  }
};

struct Decoder {
  const std::string& in;
  std::size_t pos = 0;
  uint64_t u64() {
    RENSA_CHECK(in.size() - pos >= 8, ValueError, "decode_dataset: the bytes end early (offset ", pos, " of ",
                in.size(), ")");
    uint64_t v;
    std::memcpy(&v, in.data() + pos, 8);
    pos += 8;
    return v;
  }
  int64_t i64() { return static_cast<int64_t>(u64()); }
  std::string str() {
    const uint64_t n = u64();
    RENSA_CHECK(n <= in.size() - pos, ValueError, "decode_dataset: a string of ", n, " bytes at offset ", pos,
                " runs past the end (", in.size(), " bytes)");
    std::string s = in.substr(pos, n);
    pos += n;
    return s;
  }
  ImageDatasetOptions options() {
    ImageDatasetOptions o;
    o.root = str();
    o.dtype = static_cast<Dtype>(u64());
    o.color = static_cast<ImageColor>(u64());
    o.min_size = i64();
    o.label_dtype = static_cast<Dtype>(u64());
    o.skip_unreadable = u64() != 0;
    RENSA_CHECK(static_cast<int>(o.dtype) < kNumDtypes && static_cast<int>(o.color) <= 2 &&
                    static_cast<int>(o.label_dtype) < kNumDtypes,
                ValueError, "decode_dataset: corrupt options");
    return o;
  }
};

template <class T>
const T& at_checked(const std::vector<T>& v, int64_t i, const char* who) {
  detail::check_index(who, i, static_cast<int64_t>(v.size()));
  return v[static_cast<std::size_t>(i)];
}

}  // namespace

std::vector<std::pair<std::string, int64_t>> read_pairs_file(const std::string& path) {
  const std::vector<std::string> lines = read_lines(path, "read_pairs_file");
  std::vector<std::pair<std::string, int64_t>> pairs;
  pairs.reserve(lines.size());
  for (std::size_t k = 0; k < lines.size(); ++k) {
    const std::vector<std::string> f = fields_of(lines[k]);
    if (f.empty()) continue;
    RENSA_CHECK(f.size() == 2, ValueError, "read_pairs_file: '", path, "' line ", k + 1, ": expected \"path label\", got ",
                f.size(), " fields");
    int64_t label = 0;
    const auto [end, ec] = std::from_chars(f[1].data(), f[1].data() + f[1].size(), label);
    RENSA_CHECK(ec == std::errc() && end == f[1].data() + f[1].size(), ValueError, "read_pairs_file: '", path,
                "' line ", k + 1, ": the label '", f[1], "' is not an integer");
    pairs.emplace_back(f[0], label);
  }
  return pairs;
}

// --- ImageSource -------------------------------------------------------------------------------

ImageSource::ImageSource(ImageDatasetOptions options)
    : options_(std::move(options)), skipped_(std::make_shared<std::atomic<int64_t>>(0)) {}

Array ImageSource::decode(const std::string& bytes, const std::string& name) const {
  return decode_image(bytes.data(), bytes.size(), name, {options_.dtype, options_.color, options_.min_size});
}

void ImageSource::report_skip(const std::string& what) const {
  const int64_t n = ++*skipped_;
  std::cerr << "rensa: warning: skipped an unreadable image (" << n << " so far): " << what << '\n';
}

template <class Read>
int64_t ImageSource::read_skipping(int64_t i, int64_t n, Read read, Array& out) const {
  for (int64_t tries = 0;; ++tries) {
    const int64_t k = (i + tries) % n;
    try {
      out = read(k);
      return k;
    } catch (const IOError& e) {
      if (!options_.skip_unreadable) throw;
      report_skip(e.what());
      RENSA_CHECK(tries + 1 < n, IOError, "image dataset: none of its ", n, " images can be read; the last: ",
                  e.what());
    }
  }
}

// --- ImageDataset ------------------------------------------------------------------------------

ImageDataset::ImageDataset(std::vector<std::string> paths, ImageDatasetOptions options)
    : ImageSource(std::move(options)), paths_(std::move(paths)) {
  check_options("ImageDataset", this->options());
}

std::shared_ptr<ImageDataset> ImageDataset::from_file(const std::string& paths_file, ImageDatasetOptions options) {
  std::vector<std::string> paths;
  for (const std::string& line : read_lines(paths_file, "ImageDataset")) {
    const std::vector<std::string> f = fields_of(line);
    if (!f.empty()) paths.push_back(f[0]);
  }
  return std::make_shared<ImageDataset>(std::move(paths), std::move(options));
}

std::string ImageDataset::path(int64_t i) const {
  detail::check_index("ImageDataset", i, size());
  return join(options().root, paths_[static_cast<std::size_t>(i)]);
}

Example ImageDataset::get_example(int64_t i) const {
  detail::check_index("ImageDataset", i, size());
  Array image;
  read_skipping(i, size(), [&](int64_t k) { return decode(read_file_bytes(path(k)), path(k)); }, image);
  return {image};
}

std::optional<std::string> ImageDataset::encode_subset(const std::vector<int64_t>& indices) const {
  Encoder e;
  e.str(kImageTag);
  e.options(options());
  e.u64(indices.size());
  for (const int64_t i : indices) e.str(at_checked(paths_, i, "ImageDataset::encode_subset"));
  return std::move(e.out);
}

// --- LabeledImageDataset -----------------------------------------------------------------------

LabeledImageDataset::LabeledImageDataset(std::vector<std::pair<std::string, int64_t>> pairs,
                                         ImageDatasetOptions options)
    : ImageSource(std::move(options)), pairs_(std::move(pairs)) {
  check_options("LabeledImageDataset", this->options());
}

LabeledImageDataset::LabeledImageDataset(const std::string& pairs_file, ImageDatasetOptions options)
    : LabeledImageDataset(read_pairs_file(pairs_file), std::move(options)) {}

std::string LabeledImageDataset::path(int64_t i) const {
  detail::check_index("LabeledImageDataset", i, size());
  return join(options().root, pairs_[static_cast<std::size_t>(i)].first);
}

int64_t LabeledImageDataset::label(int64_t i) const {
  detail::check_index("LabeledImageDataset", i, size());
  return pairs_[static_cast<std::size_t>(i)].second;
}

Example LabeledImageDataset::get_example(int64_t i) const {
  detail::check_index("LabeledImageDataset", i, size());
  Array image;
  const int64_t k =
      read_skipping(i, size(), [&](int64_t j) { return decode(read_file_bytes(path(j)), path(j)); }, image);
  return {image, label_array(label(k), options().label_dtype)};
}

std::optional<std::string> LabeledImageDataset::encode_subset(const std::vector<int64_t>& indices) const {
  Encoder e;
  e.str(kLabeledTag);
  e.options(options());
  e.u64(indices.size());
  for (const int64_t i : indices) {
    const auto& [path, label] = at_checked(pairs_, i, "LabeledImageDataset::encode_subset");
    e.str(path);
    e.i64(label);
  }
  return std::move(e.out);
}

// --- image_folder ------------------------------------------------------------------------------

ImageFolder image_folder(const std::string& root, ImageDatasetOptions options) {
  std::error_code ec;
  RENSA_CHECK(fs::is_directory(root, ec), IOError, "image_folder: '", root, "' is not a directory");
  ImageFolder out;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (entry.is_directory()) out.classes.push_back(entry.path().filename().string());
  }
  std::sort(out.classes.begin(), out.classes.end());
  RENSA_CHECK(!out.classes.empty(), IOError, "image_folder: '", root,
              "' has no class directories (expected ROOT/CLASS/IMAGE files)");
  std::vector<std::pair<std::string, int64_t>> pairs;
  for (std::size_t label = 0; label < out.classes.size(); ++label) {
    std::vector<std::string> files;
    const fs::path dir = fs::path(root) / out.classes[label];
    for (const auto& entry : fs::recursive_directory_iterator(dir, fs::directory_options::follow_directory_symlink)) {
      if (entry.is_regular_file() && has_image_extension(entry.path())) {
        files.push_back(fs::relative(entry.path(), root).string());
      }
    }
    std::sort(files.begin(), files.end());
    for (auto& f : files) pairs.emplace_back(std::move(f), static_cast<int64_t>(label));
  }
  RENSA_CHECK(!pairs.empty(), ValueError, "image_folder: no .jpg, .jpeg or .png files under the ", out.classes.size(),
              " class directories of '", root, "'");
  options.root = root;
  out.dataset = std::make_shared<LabeledImageDataset>(std::move(pairs), std::move(options));
  return out;
}

// --- zip archives ------------------------------------------------------------------------------

ZippedImageDataset::ZippedImageDataset(const std::string& zip_path, ImageDatasetOptions options)
    : ImageSource(std::move(options)), zip_(std::make_shared<serializers::detail::ZipArchive>(zip_path)) {
  check_options("ZippedImageDataset", this->options());
}

ZippedImageDataset::~ZippedImageDataset() = default;
int64_t ZippedImageDataset::size() const { return static_cast<int64_t>(zip_->names().size()); }
const std::vector<std::string>& ZippedImageDataset::names() const { return zip_->names(); }

Array ZippedImageDataset::get_image(const std::string& name) const {
  return decode(zip_->read(name), zip_->path() + ", entry '" + name + "'");
}

Example ZippedImageDataset::get_example(int64_t i) const {
  detail::check_index("ZippedImageDataset", i, size());
  Array image;
  read_skipping(i, size(), [&](int64_t k) { return get_image(names()[static_cast<std::size_t>(k)]); }, image);
  return {image};
}

LabeledZippedImageDataset::LabeledZippedImageDataset(const std::string& zip_path, const std::string& pairs_file,
                                                     ImageDatasetOptions options)
    : LabeledZippedImageDataset(zip_path, read_pairs_file(pairs_file), std::move(options)) {}

LabeledZippedImageDataset::LabeledZippedImageDataset(const std::string& zip_path,
                                                     std::vector<std::pair<std::string, int64_t>> pairs,
                                                     ImageDatasetOptions options)
    : ImageSource(options),
      zip_path_(zip_path),
      images_(std::make_shared<ZippedImageDataset>(zip_path, std::move(options))),  // ImageSource copied it first
      pairs_(std::move(pairs)) {
  check_options("LabeledZippedImageDataset", this->options());
}

Example LabeledZippedImageDataset::get_example(int64_t i) const {
  detail::check_index("LabeledZippedImageDataset", i, size());
  Array image;
  const int64_t k = read_skipping(
      i, size(), [&](int64_t j) { return images_->get_image(pairs_[static_cast<std::size_t>(j)].first); }, image);
  return {image, label_array(pairs_[static_cast<std::size_t>(k)].second, options().label_dtype)};
}

std::optional<std::string> LabeledZippedImageDataset::encode_subset(const std::vector<int64_t>& indices) const {
  Encoder e;
  e.str(kZippedTag);
  e.options(options());
  e.str(zip_path_);
  e.u64(indices.size());
  for (const int64_t i : indices) {
    const auto& [name, label] = at_checked(pairs_, i, "LabeledZippedImageDataset::encode_subset");
    e.str(name);
    e.i64(label);
  }
  return std::move(e.out);
}

MultiZippedImageDataset::MultiZippedImageDataset(const std::vector<std::string>& zip_paths,
                                                 const ImageDatasetOptions& options) {
  offsets_.push_back(0);
  for (const std::string& p : zip_paths) {
    parts_.push_back(std::make_shared<ZippedImageDataset>(p, options));
    offsets_.push_back(offsets_.back() + parts_.back()->size());
  }
}

Example MultiZippedImageDataset::get_example(int64_t i) const {
  detail::check_index("MultiZippedImageDataset", i, size());
  const auto it = std::upper_bound(offsets_.begin(), offsets_.end(), i);
  const auto part = static_cast<std::size_t>(it - offsets_.begin() - 1);
  return parts_[part]->get_example(i - offsets_[part]);
}

// --- decode_dataset ----------------------------------------------------------------------------

DatasetPtr decode_dataset(const std::string& bytes) {
  Decoder d{bytes};
  const std::string tag = d.str();
  RENSA_CHECK(tag == kImageTag || tag == kLabeledTag || tag == kZippedTag, ValueError,
              "decode_dataset: unknown dataset kind '", tag.substr(0, 64), "'");
  const ImageDatasetOptions options = d.options();
  const std::string zip = tag == kZippedTag ? d.str() : std::string();
  const uint64_t n = d.u64();
  RENSA_CHECK(n <= bytes.size() / 8, ValueError, "decode_dataset: ", n, " entries cannot fit in ", bytes.size(),
              " bytes");
  if (tag == kImageTag) {
    std::vector<std::string> paths;
    paths.reserve(n);
    for (uint64_t k = 0; k < n; ++k) paths.push_back(d.str());
    RENSA_CHECK(d.pos == bytes.size(), ValueError, "decode_dataset: ", bytes.size() - d.pos, " bytes after the end");
    return std::make_shared<ImageDataset>(std::move(paths), options);
  }
  std::vector<std::pair<std::string, int64_t>> pairs;
  pairs.reserve(n);
  for (uint64_t k = 0; k < n; ++k) {
    std::string path = d.str();
    pairs.emplace_back(std::move(path), d.i64());
  }
  RENSA_CHECK(d.pos == bytes.size(), ValueError, "decode_dataset: ", bytes.size() - d.pos, " bytes after the end");
  if (tag == kZippedTag) return std::make_shared<LabeledZippedImageDataset>(zip, std::move(pairs), options);
  return std::make_shared<LabeledImageDataset>(std::move(pairs), options);
}

}  // namespace rensa::datasets
