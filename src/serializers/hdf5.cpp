// HDF5 files in Chainer's layout. Built with RENSA_WITH_HDF5 when libhdf5-dev is found; without it
// every entry point says so.
#include "rensa/serializers/hdf5.h"

#include "rensa/core/error.h"

#ifdef RENSA_WITH_HDF5
#include <hdf5.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <mutex>
#include <vector>

#include "src/serializers/atomic_file.h"
#endif

namespace rensa::serializers {

#ifndef RENSA_WITH_HDF5

bool hdf5_available() {
  return false;
}

namespace {
[[noreturn]] void unavailable(const char* op, const std::string& path) {
  throw NotImplementedError(rensa::detail::concat(op, ": ", path,
                                                  ": this rensa was built without HDF5 support "
                                                  "(libhdf5-dev was not found when it was configured; scripts/setup "
                                                  "installs it, then reconfigure and rebuild)"));
}
}  // namespace

void write_hdf5(const std::string& path, const std::map<std::string, Array>&, int) {
  unavailable("write_hdf5", path);
}
std::map<std::string, Array> read_hdf5(const std::string& path) {
  unavailable("read_hdf5", path);
}

#else

bool hdf5_available() {
  return true;
}

namespace {

// One HDF5 identifier, closed by its own close function.
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// The library's own account of the last failure (its innermost message), for our errors.
std::string hdf5_message() {
  std::string message;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned n, const H5E_error2_t* e, void* out) -> herr_t {
        if (n == 0 && e->desc != nullptr) *static_cast<std::string*>(out) = e->desc;
        return 0;
      },
      &message);
  H5Eclear2(H5E_DEFAULT);
  return message.empty() ? "unknown HDF5 error" : message;
}

// Debian's libhdf5 is the serial build, not safe to call from two threads at once (a background
// snapshot writer and the training loop, say): every use in rensa holds this lock. While it is held,
// the library's printing of failures to stderr is off (rensa reports them in its errors) and restored
// after, for any other user of HDF5 in the process.
class LibraryLock {
 public:
  LibraryLock() : lock_(mutex()) {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~LibraryLock() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  LibraryLock(const LibraryLock&) = delete;
  LibraryLock& operator=(const LibraryLock&) = delete;

 private:
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  std::lock_guard<std::mutex> lock_;
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// IEEE half precision, little-endian: HDF5 1.10 predefines no such type (h5py builds the same one).
hid_t half_type() {
  const hid_t t = H5Tcopy(H5T_IEEE_F32LE);
  H5Tset_fields(t, 15, 10, 5, 0, 10);
  H5Tset_size(t, 2);
  H5Tset_ebias(t, 15);
  H5Tset_precision(t, 16);
  return t;
}

// h5py's boolean: an enum over int8 with FALSE = 0 and TRUE = 1.
hid_t bool_type() {
  const hid_t t = H5Tenum_create(H5T_NATIVE_INT8);
  int8_t v = 0;
  H5Tenum_insert(t, "FALSE", &v);
  v = 1;
  H5Tenum_insert(t, "TRUE", &v);
  return t;
}

// The stored (file) type of a dtype and the dtype its memory is written from.
std::pair<hid_t, Dtype> file_type(Dtype d) {
  switch (d) {
    case Dtype::float16:
      return {half_type(), Dtype::float16};
    case Dtype::bfloat16:
    case Dtype::float32:
      return {H5Tcopy(H5T_IEEE_F32LE), Dtype::float32};
    case Dtype::float64:
      return {H5Tcopy(H5T_IEEE_F64LE), Dtype::float64};
    case Dtype::int32:
      return {H5Tcopy(H5T_STD_I32LE), Dtype::int32};
    case Dtype::int64:
      return {H5Tcopy(H5T_STD_I64LE), Dtype::int64};
    case Dtype::uint8:
      return {H5Tcopy(H5T_STD_U8LE), Dtype::uint8};
    case Dtype::bool_:
      return {bool_type(), Dtype::bool_};
    default:
      break;
  }
  throw DtypeError(rensa::detail::concat("write_hdf5: no HDF5 type for dtype ", dtype_name(d)));
}

// The memory type matching a dtype's host representation.
hid_t memory_type(Dtype d) {
  switch (d) {
    case Dtype::float16:
      return half_type();
    case Dtype::float32:
      return H5Tcopy(H5T_NATIVE_FLOAT);
    case Dtype::float64:
      return H5Tcopy(H5T_NATIVE_DOUBLE);
    case Dtype::int32:
      return H5Tcopy(H5T_NATIVE_INT32);
    case Dtype::int64:
      return H5Tcopy(H5T_NATIVE_INT64);
    case Dtype::uint8:
      return H5Tcopy(H5T_NATIVE_UINT8);
    case Dtype::bool_:
      return bool_type();
    default:
      break;
  }
  throw DtypeError(rensa::detail::concat("read_hdf5: no memory type for dtype ", dtype_name(d)));
}

// Chunks of at most about 1 MiB: the whole array when it is small, else halving the longest axis.
std::vector<hsize_t> chunk_of(const Shape& shape, std::size_t itemsize) {
  std::vector<hsize_t> chunk(shape.begin(), shape.end());
  auto bytes = [&] {
    hsize_t b = itemsize;
    for (hsize_t c : chunk) b *= c;
    return b;
  };
  while (bytes() > (hsize_t{1} << 20)) {
    auto longest = std::max_element(chunk.begin(), chunk.end());
    *longest = (*longest + 1) / 2;
  }
  return chunk;
}

void write_dataset(hid_t file, const std::string& path, const std::string& name, const Array& value, int compression) {
  RENSA_CHECK(!value.is_null(), ValueError, "write_hdf5: ", path, ": array '", name, "' is null");
  const auto [ftype_id, host_dtype] = file_type(value.dtype());
  Handle ftype(ftype_id, H5Tclose);
  const Array host = value.to(Device::cpu()).astype(host_dtype).contiguous();
  std::vector<hsize_t> dims(host.shape().begin(), host.shape().end());
  Handle space(
      dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
      H5Sclose);
  Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  if (compression > 0 && host.size() > 1) {  // as Chainer: scalars and one-element arrays uncompressed
    const std::vector<hsize_t> chunk = chunk_of(host.shape(), host.itemsize());
    H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data());
    H5Pset_deflate(dcpl.get(), static_cast<unsigned>(compression));
  }
  Handle dset(H5Dcreate2(file, name.c_str(), ftype.get(), space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT), H5Dclose);
  RENSA_CHECK(dset.ok(), IOError, "write_hdf5: ", path, ": cannot create dataset '", name, "': ", hdf5_message());
  Handle mtype(memory_type(host_dtype), H5Tclose);
  if (host.size() > 0) {
    RENSA_CHECK(H5Dwrite(dset.get(), mtype.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, host.raw_data()) >= 0, IOError,
                "write_hdf5: ", path, ": cannot write dataset '", name, "': ", hdf5_message());
  }
}

// The dtype rensa reads a stored type as; IOError naming the dataset for one it has none for.
Dtype dtype_of_stored(hid_t ftype, const std::string& path, const std::string& name) {
  const H5T_class_t cls = H5Tget_class(ftype);
  const std::size_t size = H5Tget_size(ftype);
  if (cls == H5T_FLOAT && (size == 2 || size == 4 || size == 8)) {
    return size == 2 ? Dtype::float16 : size == 4 ? Dtype::float32 : Dtype::float64;
  }
  if (cls == H5T_INTEGER) {
    const bool is_signed = H5Tget_sign(ftype) == H5T_SGN_2;
    if (!is_signed && size == 1) return Dtype::uint8;
    if ((is_signed && size <= 4) || (!is_signed && size <= 2)) return Dtype::int32;
    if ((is_signed && size == 8) || (!is_signed && size == 4)) return Dtype::int64;
  }
  if (cls == H5T_ENUM && size == 1) return Dtype::bool_;  // h5py's booleans
  throw IOError(rensa::detail::concat("read_hdf5: ", path, ": dataset '", name, "' has an HDF5 type (class ",
                                      static_cast<int>(cls), ", ", size,
                                      " bytes) rensa has no dtype for; rensa reads floats, integers and h5py's "
                                      "booleans"));
}

struct ReadState {
  std::string path;
  std::map<std::string, Array>* out;
  std::exception_ptr error;  // thrown inside the C library's callback: rethrown once it returns
};

Array read_dataset(hid_t dset, const std::string& path, const std::string& name) {
  Handle space(H5Dget_space(dset), H5Sclose);
  if (H5Sget_simple_extent_type(space.get()) == H5S_NULL) return Array();  // h5py.Empty: Chainer's None
  const int rank = H5Sget_simple_extent_ndims(space.get());
  RENSA_CHECK(rank >= 0, IOError, "read_hdf5: ", path, ": dataset '", name, "': ", hdf5_message());
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  Handle ftype(H5Dget_type(dset), H5Tclose);
  const Dtype dtype = dtype_of_stored(ftype.get(), path, name);
  Shape shape;
  for (hsize_t d : dims) shape.push_back(static_cast<int64_t>(d));
  Array out = Array::empty(shape, dtype);
  if (out.size() == 0) return out;
  if (dtype == Dtype::bool_) {
    // Enum values convert to no integer type; read the bytes of the stored enum and test them.
    Handle mtype(H5Tget_native_type(ftype.get(), H5T_DIR_ASCEND), H5Tclose);
    std::vector<int8_t> bytes(static_cast<std::size_t>(out.size()));
    RENSA_CHECK(H5Dread(dset, mtype.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()) >= 0, IOError,
                "read_hdf5: ", path, ": cannot read dataset '", name, "': ", hdf5_message());
    for (std::size_t i = 0; i < bytes.size(); ++i) out.data<bool>()[i] = bytes[i] != 0;
    return out;
  }
  Handle mtype(memory_type(dtype), H5Tclose);
  RENSA_CHECK(H5Dread(dset, mtype.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.raw_data()) >= 0, IOError,
              "read_hdf5: ", path, ": cannot read dataset '", name, "': ", hdf5_message());
  return out;
}

herr_t visit(hid_t group, const char* name, const H5L_info_t* info, void* data) {
  auto* st = static_cast<ReadState*>(data);
  if (info->type != H5L_TYPE_HARD) return 0;  // soft and external links: Chainer writes none
  try {
    Handle obj(H5Oopen(group, name, H5P_DEFAULT), H5Oclose);
    RENSA_CHECK(obj.ok(), IOError, "read_hdf5: ", st->path, ": cannot open '", name, "': ", hdf5_message());
    if (H5Iget_type(obj.get()) != H5I_DATASET) return 0;
    (*st->out)[name] = read_dataset(obj.get(), st->path, name);
    return 0;
  } catch (...) {
    st->error = std::current_exception();
    return -1;
  }
}

}  // namespace

void write_hdf5(const std::string& path, const std::map<std::string, Array>& arrays, int compression) {
  RENSA_CHECK(compression >= 0 && compression <= 9, ValueError, "write_hdf5: ", path,
              ": compression must be a gzip level 0..9, got ", compression);
  for (const auto& [name, a] : arrays) {
    RENSA_CHECK(!name.empty() && name != "/", ValueError, "write_hdf5: ", path, ": an array has an empty name");
  }
  // The file is built in memory (the core driver, no backing store), then written atomically.
  std::vector<char> image;
  {
    LibraryLock library;
    Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    H5Pset_fapl_core(fapl.get(), 1 << 20, 0);
    {
      Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), H5Fclose);
      RENSA_CHECK(file.ok(), IOError, "write_hdf5: ", path, ": ", hdf5_message());
      for (const auto& [name, a] : arrays) write_dataset(file.get(), path, name, a, compression);
      H5Fflush(file.get(), H5F_SCOPE_GLOBAL);
      const ssize_t size = H5Fget_file_image(file.get(), nullptr, 0);
      RENSA_CHECK(size > 0, IOError, "write_hdf5: ", path, ": ", hdf5_message());
      image.resize(static_cast<std::size_t>(size));
      RENSA_CHECK(H5Fget_file_image(file.get(), image.data(), image.size()) == size, IOError, "write_hdf5: ", path,
                  ": ", hdf5_message());
    }
  }
  detail::AtomicFileWriter writer(path, "write_hdf5");
  writer.write(image.data(), image.size());
  writer.commit();
}

std::map<std::string, Array> read_hdf5(const std::string& path) {
  std::error_code ec;
  RENSA_CHECK(std::filesystem::is_regular_file(path, ec), IOError, "read_hdf5: ", path, ": ",
              std::filesystem::exists(path, ec) ? "not a regular file" : "no such file");
  LibraryLock library;
  RENSA_CHECK(H5Fis_hdf5(path.c_str()) > 0, IOError, "read_hdf5: ", path, ": not an HDF5 file");
  Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  RENSA_CHECK(file.ok(), IOError, "read_hdf5: ", path, ": ", hdf5_message());
  std::map<std::string, Array> out;
  ReadState state{path, &out, {}};
  const herr_t rc = H5Lvisit(file.get(), H5_INDEX_NAME, H5_ITER_INC, visit, &state);
  if (state.error) std::rethrow_exception(state.error);
  RENSA_CHECK(rc >= 0, IOError, "read_hdf5: ", path, ": ", hdf5_message());
  return out;
}

#endif

}  // namespace rensa::serializers
