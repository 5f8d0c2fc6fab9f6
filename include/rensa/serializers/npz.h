#pragma once
/// \file
/// NumPy-compatible .npz files (a zip of .npy arrays), the format Chainer uses for models and
/// snapshots. Files are written atomically: a temporary file in the same directory, fsync, rename.

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "rensa/core/array.h"
#include "rensa/serializers/serializer.h"

namespace rensa::serializers {

/// Writes `arrays` (name -> array) to `path` as an uncompressed .npz, atomically: the bytes go to a
/// temporary file in the same directory, which is fsynced and renamed over `path` (the directory is
/// fsynced too). Entry `name` becomes "name.npy"; names may contain '/'. Arrays may be strided or on
/// any device (they are copied to host, C order). bfloat16 has no NumPy dtype: bfloat16 arrays are
/// stored as float32 ('<f4') and convert back when loaded into a bfloat16 array. More than 65535
/// entries or more than 4 GiB use ZIP64 records (NumPy reads them). The file does not depend on the
/// clock: equal arrays give equal bytes. Throws ValueError for a null array or an empty name,
/// IOError naming the file when it cannot be written (the old file, if any, is then untouched).
void write_npz(const std::string& path, const std::map<std::string, Array>& arrays);
/// Creates a new, empty temporary file beside `path`, named as atomic writes name theirs (so
/// remove_stale_temporaries knows it), and returns its path; the caller removes or renames it.
/// IOError starting with `op` and naming the directory when it cannot.
std::string create_temporary_beside(const std::string& path, const std::string& op);
/// Removes the temporary files that atomic writes (write_npz, save_npz, snapshots) left in
/// `directory` when their process died before renaming them: names `.TARGET.tmpPID-HEX-N`
/// whose TARGET satisfies `is_target` and whose process is not alive on this host. Other files,
/// and temporaries of live processes, are left alone. Returns the paths removed; a missing directory
/// removes nothing; a file that cannot be removed is reported on stderr and skipped.
std::vector<std::string> remove_stale_temporaries(const std::string& directory,
                                                  const std::function<bool(std::string_view)>& is_target);
/// The bytes write_npz would write (for sending a model over a wire, say).
std::string encode_npz(const std::map<std::string, Array>& arrays);
/// Reads every array of an .npz (stored or deflate-compressed, as numpy.savez and
/// numpy.savez_compressed write; ZIP64 included) into contiguous host arrays. Keys are the entry
/// names without their ".npy" suffix. A truncated or corrupt file (bad offsets or lengths, CRC
/// mismatch, unsupported compression, bad .npy header, ...) throws IOError naming the file, the
/// entry and what is wrong.
std::map<std::string, Array> read_npz(const std::string& path);
/// read_npz on an .npz image in memory; `what` names the source in errors.
std::map<std::string, Array> read_npz_bytes(const void* data, std::size_t size, const std::string& what);
/// Parses one .npy image (format versions 1.0, 2.0 and 3.0; dtypes '<f2' '<f4' '<f8' '<i4' '<i8'
/// '|u1' '|b1', either byte order; C or Fortran order) into a contiguous host array. The header
/// dictionary is parsed strictly and the data must be exactly product(shape) * itemsize bytes.
/// Throws IOError starting "parse_npy: <what>" on malformed input.
Array parse_npy(const void* data, std::size_t size, const std::string& what);
/// Reads a .npy file (numpy.save's format; parse_npy's rules), e.g. the per-pixel mean of an image
/// dataset (`mean.npy`). IOError naming the file when it cannot be read or parsed.
Array read_npy(const std::string& path);
/// Writes `array` as a .npy file that numpy.load reads, atomically (encode_npy's bytes).
void write_npy(const std::string& path, const Array& array);
/// Encodes an array as a .npy image (version 1.0; 2.0 if the header needs it), C order, native
/// byte order; bfloat16 is encoded as float32.
std::string encode_npy(const Array& array);

/// A Serializer that collects values in memory (saving). Keys are "a/b/c" (the path of the child
/// serializers, then the key) without a leading '/'.
class DictionarySerializer final : public Serializer {
 public:
  DictionarySerializer();
  bool is_loading() const override { return false; }
  Serializer& child(std::string_view name) override;
  /// Records `value` under path() + key; the map holds the handle (no copy), so write it out before
  /// changing the array. A null array (say, a parameter not yet initialized) records nothing.
  void array(std::string_view key, Array& value) override;
  bool contains(std::string_view) const override { return false; }
  const std::string& path() const override { return path_; }
  /// The collected values, keyed by full path without the leading '/'.
  const std::map<std::string, Array>& target() const { return *target_; }

 private:
  DictionarySerializer(std::shared_ptr<std::map<std::string, Array>> target, std::string path);
  std::shared_ptr<std::map<std::string, Array>> target_;
  std::string path_;
  std::map<std::string, std::unique_ptr<DictionarySerializer>, std::less<>> children_;
};

/// A Serializer that loads values from a map read from a file (loading). `op` and `file` name the
/// call and the source in error messages ("load_npz: 'model.npz': key ..."). With `strict` false, a
/// missing key leaves the target unchanged instead of throwing. A null array in the map (Chainer's
/// None, as HDF5 files store an uninitialized parameter) leaves its target unchanged.
class DictionaryDeserializer final : public Serializer {
 public:
  /// Reads from `values`; `file` and `op` name the source and the call in errors; strict: a missing key is an error.
  DictionaryDeserializer(std::map<std::string, Array> values, const std::string& file, bool strict = true,
                         const std::string& op = "load_npz");
  bool is_loading() const override { return true; }
  Serializer& child(std::string_view name) override;
  /// Loads path() + key. A non-null `value` must have the stored shape (IOError naming the file,
  /// the key and both shapes); the values are converted to its dtype and copied into its memory
  /// with Array::assign. A null `value` becomes the stored array (contiguous, on the cpu, sharing
  /// memory with the map). A missing key throws IOError naming the file and the key when strict.
  void array(std::string_view key, Array& value) override;
  bool contains(std::string_view key) const override;
  const std::string& path() const override { return path_; }

 private:
  DictionaryDeserializer(std::shared_ptr<const std::map<std::string, Array>> values,
                         std::shared_ptr<const std::string> file, std::string path, bool strict);
  std::shared_ptr<const std::map<std::string, Array>> values_;
  std::shared_ptr<const std::string> file_;
  std::string path_;
  bool strict_;
  std::map<std::string, std::unique_ptr<DictionaryDeserializer>, std::less<>> children_;
};

/// Anything with `void serialize(Serializer&)`.
template <class T>
concept Serializable = requires(T& t, Serializer& s) { t.serialize(s); };

/// Saves `obj` to `path` (atomically). `path` gets no extension added.
template <Serializable T>
void save_npz(const std::string& path, T& obj) {
  DictionarySerializer s;
  obj.serialize(s);
  write_npz(path, s.target());
}

/// Loads `obj` from `path`. `path_prefix` selects a sub-tree (e.g. "updater/model:main/").
/// Missing keys or mismatched shapes throw IOError naming the file and the key.
template <Serializable T>
void load_npz(const std::string& path, T& obj, const std::string& path_prefix = "", bool strict = true) {
  DictionaryDeserializer d(read_npz(path), path, strict);
  if (path_prefix.empty()) {
    obj.serialize(d);
    return;
  }
  Serializer* s = &d;
  std::string rest = path_prefix;
  while (!rest.empty()) {
    const auto slash = rest.find('/');
    const std::string part = rest.substr(0, slash);
    if (!part.empty()) s = &s->child(part);
    if (slash == std::string::npos) break;
    rest = rest.substr(slash + 1);
  }
  obj.serialize(*s);
}

}  // namespace rensa::serializers
