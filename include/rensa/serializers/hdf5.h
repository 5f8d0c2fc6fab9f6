#pragma once
/// \file
/// HDF5 files in Chainer's layout (chainer.serializers.save_hdf5 / load_hdf5): one group per link
/// path and one dataset per array, so files Chainer writes load and files rensa writes load in
/// Chainer (and h5py). Optional: when rensa was built without Debian's libhdf5-dev,
/// hdf5_available() is false and every call throws NotImplementedError saying so.
#include <map>
#include <string>

#include "rensa/core/array.h"
#include "rensa/serializers/npz.h"

namespace rensa::serializers {

/// Whether this build of rensa reads and writes HDF5 (libhdf5-dev was found when it was configured).
bool hdf5_available();

/// Writes `arrays` (name -> array; '/' in a name makes groups) to `path` as HDF5, atomically (the
/// file is built in memory and written as write_npz writes). Arrays of more than one element are
/// gzip-compressed at `compression` (0: none; Chainer's default 4). Dtypes: float16, float32,
/// float64, int32, int64, uint8, bool (h5py's enum) as NumPy stores them; bfloat16 is stored as
/// float32. ValueError for a compression outside 0..9, a null array or an empty name; IOError naming
/// the file when it cannot be written; NotImplementedError without HDF5.
void write_hdf5(const std::string& path, const std::map<std::string, Array>& arrays, int compression = 4);

/// Reads every dataset of an HDF5 file into host arrays keyed by their path without the leading
/// '/' ("l1/W"). Empty datasets (Chainer's None: an uninitialized parameter) are null arrays, which
/// load_hdf5 leaves alone. Integers become int32 (up to 32 bits
/// signed, 16 bits unsigned), int64 (64 signed, 32 unsigned) or uint8; h5py's booleans bool.
/// IOError naming the file (and the dataset) when it is missing, not HDF5, or holds a type rensa has
/// no dtype for (strings, compounds, unsigned 64-bit).
std::map<std::string, Array> read_hdf5(const std::string& path);

/// Saves `obj` (anything with serialize) to `path` as HDF5, as Chainer's save_hdf5.
template <Serializable T>
void save_hdf5(const std::string& path, T& obj, int compression = 4) {
  DictionarySerializer s;
  obj.serialize(s);
  write_hdf5(path, s.target(), compression);
}

/// Loads `obj` from an HDF5 file, as Chainer's load_hdf5. Missing keys or mismatched shapes throw
/// IOError naming the file and the key (unless `strict` is false, which leaves missing ones as they
/// are).
template <Serializable T>
void load_hdf5(const std::string& path, T& obj, bool strict = true) {
  DictionaryDeserializer d(read_hdf5(path), path, strict, "load_hdf5");
  obj.serialize(d);
}

}  // namespace rensa::serializers
