#pragma once
// Helpers shared by the serializer tests: temporary directories, sample arrays, file bytes and the
// fixtures directory.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "rensa/rensa.h"

namespace rensa::test {

/// A fresh directory under the system's temporary directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "rensa-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  /// Names of the entries in the directory, sorted.
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(path_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::filesystem::path path_;
};

inline std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// tests/fixtures (an absolute path from the build: __FILE__ may be relative, e.g. under ccache's base_dir).
inline std::filesystem::path fixtures_dir() { return RENSA_TEST_FIXTURES_DIR; }

/// A `shape` array of `dtype` with distinct small integer values (exact in every dtype).
inline Array sample(const Shape& shape, Dtype dtype, int salt = 0) {
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  const bool unsigned_like = dtype == Dtype::uint8 || dtype == Dtype::bool_;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double k = static_cast<double>((static_cast<int64_t>(i) * 7 + salt) % 11);
    v[i] = unsigned_like ? k : k - 5.0;
  }
  return Array::from_vector(v, shape).astype(dtype);
}

/// True when the arrays have the same dtype, shape and values.
inline ::testing::AssertionResult same_array(const Array& a, const Array& b) {
  if (a.is_null() || b.is_null()) return ::testing::AssertionFailure() << "null array";
  if (a.dtype() != b.dtype()) return ::testing::AssertionFailure() << "dtype " << a.dtype() << " vs " << b.dtype();
  if (!array_equal(a, b)) return ::testing::AssertionFailure() << a << "\nvs\n" << b;
  return ::testing::AssertionSuccess();
}

}  // namespace rensa::test
