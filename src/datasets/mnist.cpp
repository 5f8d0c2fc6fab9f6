// MNIST / Fashion-MNIST and the IDX reader (gzip through zlib).

#include "rensa/datasets/mnist.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <vector>

#include "rensa/core/error.h"
#include "rensa/datasets/tuple_dataset.h"
#include "rensa/datasets/dataset_root.h"
#include "rensa/serializers/npz.h"
#include "src/datasets/pixels.h"

namespace rensa::datasets {
namespace {

constexpr uint64_t kMaxIdxDataBytes = uint64_t{1} << 40;  // guards the product of the dimensions
constexpr int64_t kImageSide = 28;

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

/// Validates an IDX image as its bytes arrive (whole, or chunk by chunk from inflate): the header
/// is checked as soon as it is complete, data up to the size the header announces is kept, and
/// anything beyond is only counted, so memory stays bounded by what the header promises.
class IdxAccumulator {
 public:
  IdxAccumulator(std::string what, int expected_ndim, const char* noun, std::size_t reserve_cap)
      : what_(std::move(what)), expected_ndim_(expected_ndim), noun_(noun), reserve_cap_(reserve_cap) {}

  void feed(const unsigned char* p, std::size_t n) {
    while (n > 0 && !header_done_) {
      const std::size_t want = header_bytes_needed() - header_.size();
      const std::size_t take = std::min(want, n);
      header_.insert(header_.end(), p, p + take);
      p += take;
      n -= take;
      total_ += take;
      if (header_.size() == 4) check_magic();
      if (header_.size() == header_bytes_needed() && header_.size() >= 4) finish_header();
    }
    if (n == 0) return;
    total_ += n;
    const uint64_t room = expected_data_ - data_.size();
    const std::size_t keep = static_cast<std::size_t>(std::min<uint64_t>(room, n));
    data_.insert(data_.end(), p, p + keep);
    extra_ += n - keep;
  }

  /// Checks that the header and exactly the announced data arrived.
  void finish() const {
    if (!header_done_) {
      if (header_.size() < 4) {
        RENSA_THROW(IOError, what_, ": truncated header: ", total_, " bytes, an IDX file starts with a 4-byte magic "
                    "number");
      }
      RENSA_THROW(IOError, what_, ": truncated header: ", ndim_, " dimensions need ", header_bytes_needed(),
                  " header bytes, found ", total_);
    }
    const uint64_t found = data_.size() + extra_;
    RENSA_CHECK(found == expected_data_, IOError, what_, ": expected ", expected_data_, " bytes of ", noun_,
                " after the header, found ", found,
                found > expected_data_ ? rensa::detail::concat(" (", found - expected_data_, " trailing bytes)") : "");
  }

  const std::vector<int64_t>& dims() const { return dims_; }
  const std::vector<unsigned char>& data() const { return data_; }

 private:
  std::size_t header_bytes_needed() const { return header_.size() < 4 ? 4 : 4 + 4 * static_cast<std::size_t>(ndim_); }

  static uint32_t be32(const unsigned char* p) {
    return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
  }

  void check_magic() {
    const uint32_t magic = be32(header_.data());
    if (expected_ndim_ >= 0) {
      const uint32_t want = 0x800u + static_cast<uint32_t>(expected_ndim_);
      RENSA_CHECK(magic == want, IOError, what_, ": bad magic number ", hex32(magic), " (expected ", hex32(want),
                  ": unsigned bytes in ", expected_ndim_, " dimensions)");
    } else {
      RENSA_CHECK((magic >> 16) == 0, IOError, what_, ": bad magic number ", hex32(magic),
                  ": not an IDX file (its first two bytes must be zero)");
      RENSA_CHECK(((magic >> 8) & 0xffu) == 0x08u, IOError, what_, ": unsupported IDX data type ",
                  hex32((magic >> 8) & 0xffu), " in magic number ", hex32(magic),
                  " (only unsigned bytes, 0x08, are supported)");
    }
    ndim_ = static_cast<int>(magic & 0xffu);
  }

  void finish_header() {
    header_done_ = true;
    uint64_t count = 1, span = 1;
    for (int d = 0; d < ndim_; ++d) {
      const uint32_t extent = be32(header_.data() + 4 + 4 * d);
      dims_.push_back(extent);
      // Checked one factor at a time so the product cannot overflow. Zero extents count as one:
      // the array's strides are products of the other extents even when it holds no data.
      const uint64_t factor = std::max<uint32_t>(extent, 1);
      if (span > kMaxIdxDataBytes / factor) {
        RENSA_THROW(IOError, what_, ": dimension ", d, " (", extent, ") makes the data larger than ",
                    kMaxIdxDataBytes, " bytes");
      }
      span *= factor;
      count *= extent;
    }
    expected_data_ = count;
    data_.reserve(static_cast<std::size_t>(std::min<uint64_t>(expected_data_, reserve_cap_)));
  }

  std::string what_;
  int expected_ndim_;
  const char* noun_;
  std::size_t reserve_cap_;
  std::vector<unsigned char> header_;
  bool header_done_ = false;
  int ndim_ = 0;
  std::vector<int64_t> dims_;
  uint64_t expected_data_ = 0;
  std::vector<unsigned char> data_;
  uint64_t extra_ = 0;  // bytes past the announced data
  uint64_t total_ = 0;  // bytes fed
};

/// Inflates gzip data (one or more members) into `acc`.
void gunzip_into(const unsigned char* data, std::size_t size, const std::string& what, IdxAccumulator& acc) {
  z_stream zs{};
  RENSA_CHECK(inflateInit2(&zs, 16 + MAX_WBITS) == Z_OK, IOError, what, ": cannot initialize zlib");
  // Ends the stream on every exit path, including exceptions from the accumulator.
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&zs, inflateEnd);
  std::vector<unsigned char> out(1 << 18);
  std::size_t consumed = 0;
  for (;;) {
    if (zs.avail_in == 0 && consumed < size) {
      const std::size_t chunk = std::min<std::size_t>(size - consumed, std::numeric_limits<uInt>::max());
      zs.next_in = const_cast<Bytef*>(data + consumed);  // zlib's API is not const-correct
      zs.avail_in = static_cast<uInt>(chunk);
      consumed += chunk;
    }
    zs.next_out = out.data();
    zs.avail_out = static_cast<uInt>(out.size());
    const int rc = inflate(&zs, Z_NO_FLUSH);
    acc.feed(out.data(), out.size() - zs.avail_out);
    if (rc == Z_STREAM_END) {
      const std::size_t left = zs.avail_in + (size - consumed);
      if (left == 0) return;
      const unsigned char* next = zs.avail_in != 0 ? zs.next_in : data + consumed;
      // Another gzip member may follow (as `cat a.gz b.gz`); anything else is garbage.
      RENSA_CHECK(left >= 2 && next[0] == 0x1f && next[1] == 0x8b, IOError, what, ": ", left,
                  " bytes of trailing garbage after the gzip data");
      RENSA_CHECK(inflateReset(&zs) == Z_OK, IOError, what, ": cannot reset zlib");
      continue;
    }
    if (rc == Z_OK) continue;
    // Z_BUF_ERROR: no progress possible; with output space to spare that means no input is left.
    RENSA_CHECK(!(rc == Z_BUF_ERROR && zs.avail_in == 0 && consumed == size), IOError, what,
                ": the gzip data is truncated (the compressed stream ends early)");
    RENSA_THROW(IOError, what, ": corrupt gzip data (", zs.msg != nullptr ? std::string(zs.msg) : "zlib error " + std::to_string(rc), ")");
  }
}

IdxAccumulator decode(const void* data, std::size_t size, const std::string& what, int expected_ndim, const char* noun) {
  const auto* p = static_cast<const unsigned char*>(data);
  const bool gz = size >= 2 && p[0] == 0x1f && p[1] == 0x8b;
  // Deflate expands at most ~1032:1, so a compressed input bounds the reservation even when a
  // corrupt header announces far more data than will come.
  const std::size_t cap = gz ? std::min<std::size_t>(size, std::size_t{1} << 32) * 1040 + 4096 : size;
  IdxAccumulator acc(what, expected_ndim, noun, cap);
  if (gz) {
    gunzip_into(p, size, what, acc);
  } else {
    acc.feed(p, size);
  }
  acc.finish();
  return acc;
}

std::vector<unsigned char> read_file(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  RENSA_CHECK(f != nullptr, IOError, path, ": cannot open: ", std::strerror(errno));
  std::vector<unsigned char> bytes;
  std::array<unsigned char, 1 << 16> buf;
  for (;;) {
    const std::size_t n = std::fread(buf.data(), 1, buf.size(), f.get());
    bytes.insert(bytes.end(), buf.data(), buf.data() + n);
    if (n < buf.size()) break;
  }
  RENSA_CHECK(!std::ferror(f.get()), IOError, path, ": read error: ", std::strerror(errno));
  return bytes;
}

Array to_uint8_array(const IdxAccumulator& acc) {
  Shape shape;  // built by push_back: Shape(std::vector) memmoves from a null pointer when empty
  for (const int64_t d : acc.dims()) shape.push_back(d);
  Array out = Array::empty(shape, Dtype::uint8);
  if (!acc.data().empty()) std::memcpy(out.raw_data(), acc.data().data(), acc.data().size());
  return out;
}

// ---- MNIST ----------------------------------------------------------------------------------------

struct Source {
  const char* who;        // "get_mnist" or "get_fashion_mnist"
  bool fashion;           // missing files: suggest the package
};

std::string install_hint(const Source& src) {
  return src.fashion ? "; install the dataset-fashion-mnist package (scripts/setup installs it)" : "";
}

/// The path of `stem` in `dir`: stem.gz when present, else stem; IOError naming both otherwise.
std::string find_file(const std::filesystem::path& dir, const std::string& stem, const Source& src) {
  const auto gz = dir / (stem + ".gz");
  const auto raw = dir / stem;
  std::error_code ec;
  if (std::filesystem::is_regular_file(gz, ec)) return gz.string();
  if (std::filesystem::is_regular_file(raw, ec)) return raw.string();
  RENSA_THROW(IOError, src.who, ": ", gz.string(), " not found (nor ", raw.string(), ")", install_hint(src));
}

/// The split of `images` (n, 28, 28) bytes and their labels, checked, shaped and scaled as `opt` says.
DatasetPtr make_split(const unsigned char* pixels_data, const std::vector<int64_t>& d, const unsigned char* lab,
                      int64_t n_labels, const std::string& images_path, const std::string& labels_path,
                      const MnistOptions& opt) {
  RENSA_CHECK(d.size() == 3 && d[1] == kImageSide && d[2] == kImageSide, IOError, images_path,
              ": expected images of 28x28 pixels, found ", Shape(d), " (images, rows, columns)");
  const int64_t n = d[0];
  RENSA_CHECK(n_labels == n, IOError, images_path, " holds ", n, " images but ", labels_path, " holds ", n_labels,
              " labels");
  for (int64_t i = 0; i < n; ++i) {
    RENSA_CHECK(lab[i] <= 9, IOError, labels_path, ": label ", static_cast<int>(lab[i]), " of example ", i,
                " is outside 0..9");
  }

  // Images: one array for the whole split, in the requested shape and dtype.
  const int64_t pixels = kImageSide * kImageSide;
  const int channels = (opt.ndim == 3 && opt.rgb_format) ? 3 : 1;
  Shape shape;
  if (opt.ndim == 1) shape = Shape{n, pixels};
  if (opt.ndim == 2) shape = Shape{n, kImageSide, kImageSide};
  if (opt.ndim == 3) shape = Shape{n, channels, kImageSide, kImageSide};
  const Array x = detail::scale_pixels(pixels_data, shape, n, pixels, channels, opt.scale, opt.dtype);

  if (!opt.withlabel) return std::make_shared<TupleDataset>(std::vector<Array>{x});
  Array t = Array::empty(Shape{n}, Dtype::int32);
  int32_t* tp = t.data<int32_t>();
  for (int64_t i = 0; i < n; ++i) tp[i] = lab[i];
  if (opt.label_dtype != Dtype::int32) t = t.astype(opt.label_dtype);
  return std::make_shared<TupleDataset>(std::vector<Array>{x, t});
}

DatasetPtr load_split(const std::filesystem::path& dir, const std::string& prefix, const MnistOptions& opt,
                      const Source& src) {
  const std::string images_path = find_file(dir, prefix + "-images-idx3-ubyte", src);
  const std::string labels_path = find_file(dir, prefix + "-labels-idx1-ubyte", src);

  std::vector<unsigned char> file = read_file(images_path);
  const IdxAccumulator images = decode(file.data(), file.size(), images_path, 3, "pixels");
  file = read_file(labels_path);
  const IdxAccumulator labels = decode(file.data(), file.size(), labels_path, 1, "labels");
  file.clear();
  file.shrink_to_fit();

  return make_split(images.data().data(), images.dims(), labels.data().data(), labels.dims()[0], images_path,
                    labels_path, opt);
}

std::pair<DatasetPtr, DatasetPtr> load_mnist(const std::string& dir, const MnistOptions& opt, const Source& src) {
  RENSA_CHECK(opt.ndim >= 1 && opt.ndim <= 3, ValueError, src.who, ": ndim must be 1, 2 or 3, got ", opt.ndim);
  std::error_code ec;
  const auto status = std::filesystem::status(dir, ec);
  RENSA_CHECK(std::filesystem::exists(status), IOError, src.who, ": dataset directory ", dir, " does not exist",
              install_hint(src));
  RENSA_CHECK(std::filesystem::is_directory(status), IOError, src.who, ": dataset directory ", dir,
              " is not a directory");
  auto train = load_split(dir, "train", opt, src);
  auto test = load_split(dir, "t10k", opt, src);
  return {std::move(train), std::move(test)};
}

}  // namespace

Array parse_idx(const void* data, std::size_t size, const std::string& what, int expected_ndim) {
  RENSA_CHECK(expected_ndim < 256, ValueError, "parse_idx: expected_ndim ", expected_ndim, " exceeds 255");
  return to_uint8_array(decode(data, size, what, expected_ndim, "data"));
}

Array read_idx(const std::string& path, int expected_ndim) {
  const std::vector<unsigned char> bytes = read_file(path);
  return parse_idx(bytes.data(), bytes.size(), path, expected_ndim);
}

std::pair<DatasetPtr, DatasetPtr> get_mnist(const std::string& dir, const MnistOptions& options) {
  return load_mnist(dir, options, {"get_mnist", false});
}

std::pair<DatasetPtr, DatasetPtr> get_fashion_mnist(const MnistOptions& options) {
  return load_mnist(options.dir.empty() ? std::string(kFashionMnistDir) : options.dir, options,
                    {"get_fashion_mnist", true});
}

std::vector<std::string> get_fashion_mnist_labels() {
  return {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};
}

std::vector<std::pair<std::string, std::string>> get_kuzushiji_mnist_labels() {
  return {{"o", "\u304A"}, {"ki", "\u304D"}, {"su", "\u3059"}, {"tsu", "\u3064"}, {"na", "\u306A"},
          {"ha", "\u306F"}, {"ma", "\u307E"}, {"ya", "\u3084"}, {"re", "\u308C"}, {"wo", "\u3092"}};
}

std::pair<DatasetPtr, DatasetPtr> get_kuzushiji_mnist(const MnistOptions& options) {
  RENSA_CHECK(options.ndim >= 1 && options.ndim <= 3, ValueError, "get_kuzushiji_mnist: ndim must be 1, 2 or 3, got ",
              options.ndim);
  const std::filesystem::path dir =
      options.dir.empty() ? std::filesystem::path(get_dataset_root()) / "kuzushiji_mnist" : std::filesystem::path(options.dir);
  auto array_of = [&](const std::string& name) {
    const std::string path = (dir / name).string();
    std::error_code ec;
    RENSA_CHECK(std::filesystem::is_regular_file(path, ec), IOError, "get_kuzushiji_mnist: ", path,
                " not found; download ", name, " from http://codh.rois.ac.jp/kmnist/ into ", dir.string(),
                " (or set MnistOptions::dir)");
    const auto arrays = serializers::read_npz(path);
    const auto it = arrays.find("arr_0");
    RENSA_CHECK(it != arrays.end() && it->second.dtype() == Dtype::uint8, IOError, "get_kuzushiji_mnist: ", path,
                " has no uint8 array arr_0");
    return it->second;
  };
  auto split = [&](const std::string& prefix) {
    const Array x = array_of(prefix + "-imgs.npz").copy();
    const Array t = array_of(prefix + "-labels.npz").copy();
    RENSA_CHECK(t.ndim() == 1, IOError, "get_kuzushiji_mnist: ", (dir / (prefix + "-labels.npz")).string(),
                ": labels of shape ", t.shape(), ", expected (N,)");
    return make_split(static_cast<const unsigned char*>(x.raw_data()), x.shape().to_vector(),
                      static_cast<const unsigned char*>(t.raw_data()), t.shape()[0],
                      (dir / (prefix + "-imgs.npz")).string(), (dir / (prefix + "-labels.npz")).string(), options);
  };
  return {split("kmnist-train"), split("kmnist-test")};
}

}  // namespace rensa::datasets
