#pragma once
/// \file
/// Array: an n-dimensional, strided view of typed memory on a device.

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

#include "rensa/core/device.h"
#include "rensa/core/dtype.h"
#include "rensa/core/error.h"
#include "rensa/core/shape.h"

namespace rensa {

class Generator;

namespace detail {
/// A block of device memory, freed through its backend when the last Array using it goes. Host
/// arrays of at most kInlineBytes live inside the Storage object itself (one allocation, not two:
/// small arrays dominate the cost of small function calls).
class Storage {
 public:
  static constexpr std::size_t kInlineBytes = 64;
  Storage(std::size_t nbytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() const { return data_; }
  std::size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  /// Frees this storage's own memory and uses `owner`'s from now on (a static graph's memory plan
  /// gives buffers whose lifetimes do not overlap one block); the contents are not kept.
  /// `owner`: at least as large, on the same device, not inline.
  void share_memory_of(std::shared_ptr<Storage> owner);

 private:
  std::shared_ptr<Storage> owner_;  // whose memory data_ is, when shared
  void* data_ = nullptr;
  std::size_t nbytes_ = 0;
  Device device_;
  bool tracked_ = false;  // counted in ArrayMemoryTracking's live bytes
  alignas(16) unsigned char inline_[kInlineBytes];
};
}  // namespace detail

/// A slice `start:stop:step` for Array::index; missing ends follow NumPy.
struct Slice {
  /// Start index; absent means the beginning (the end for a negative step), as in NumPy.
  std::optional<int64_t> start, stop;
  int64_t step = 1;
  /// \var stop
  /// Stop index (exclusive); absent means past the end (before the beginning for a negative step).
  /// \var step
  /// Step between indices; may be negative (0 throws ValueError).
};
/// Inserts a new axis of extent 1 (NumPy's `None`).
struct NewAxis {};
/// Stands for as many full slices as needed (NumPy's `...`).
struct Ellipsis {};
/// How the elements of a 4-d (N, C, H, W) array are laid out in memory. The shape and the meaning
/// of every index stay the same; only the strides differ. `channels_last` stores (N, H, W, C)
/// row-major (strides (H*W*C, 1, W*C, C)), the layout oneDNN's convolutions run without reorders.
enum class MemoryFormat { contiguous, channels_last };

/// One entry of a basic index: an integer (drops the axis), a Slice, NewAxis or Ellipsis.
using Index = std::variant<int64_t, Slice, NewAxis, Ellipsis>;

/// An n-dimensional array. Copying an Array aliases the same memory (a handle, like a NumPy view);
/// copy() copies the data. Views (reshape, transpose, slice, broadcast_to, ...) share storage.
/// Strides and offset are in elements.
class Array {
 public:
  /// A null handle: no storage, `is_null()` is true.
  Array() = default;

  // ---- creation ----------------------------------------------------------------------------
  /// Uninitialized contiguous array.
  static Array empty(const Shape& shape, Dtype dtype = Dtype::float32, Device device = Device::cpu());
  /// Uninitialized array in `format`; `channels_last` needs a 4-d shape (ShapeError otherwise).
  static Array empty(const Shape& shape, Dtype dtype, Device device, MemoryFormat format);
  /// Contiguous array of zeros.
  static Array zeros(const Shape& shape, Dtype dtype = Dtype::float32, Device device = Device::cpu());
  /// Contiguous array of ones.
  static Array ones(const Shape& shape, Dtype dtype = Dtype::float32, Device device = Device::cpu());
  /// Every element equal to `value` (converted to `dtype`).
  static Array full(const Shape& shape, double value, Dtype dtype = Dtype::float32,
                    Device device = Device::cpu());
  /// A 0-dimensional array holding `value`.
  static Array scalar(double value, Dtype dtype = Dtype::float32, Device device = Device::cpu());
  /// Values start, start+step, ... below stop (NumPy's arange); throws ValueError when step is 0.
  static Array arange(double start, double stop, double step = 1.0, Dtype dtype = Dtype::float32,
                      Device device = Device::cpu());
  /// 0, 1, ..., n-1.
  static Array arange(int64_t n, Dtype dtype = Dtype::int64, Device device = Device::cpu());
  /// `num` evenly spaced values from start to stop (stop included when `endpoint`).
  static Array linspace(double start, double stop, int64_t num, bool endpoint = true,
                        Dtype dtype = Dtype::float32, Device device = Device::cpu());
  /// Copies `values` into a new array of `shape` (the sizes must agree; ShapeError otherwise).
  template <class T>
  static Array from_vector(const std::vector<T>& values, const Shape& shape,
                           Device device = Device::cpu());
  /// A 1-d array copied from `values`.
  template <class T>
  static Array from_vector(const std::vector<T>& values, Device device = Device::cpu()) {
    return from_vector(values, Shape{static_cast<int64_t>(values.size())}, device);
  }
  /// Wraps existing storage (used by views and backends).
  Array(std::shared_ptr<detail::Storage> storage, Shape shape, Shape strides, int64_t offset, Dtype dtype);

  // ---- attributes --------------------------------------------------------------------------
  /// True for a null handle (default-constructed, no storage).
  bool is_null() const { return storage_ == nullptr; }
  /// Extent of each axis.
  const Shape& shape() const { return shape_; }
  /// Strides in elements.
  const Shape& strides() const { return strides_; }
  /// Offset of element 0 from the start of the storage, in elements.
  int64_t offset() const { return offset_; }
  /// Number of axes.
  int64_t ndim() const { return static_cast<int64_t>(shape_.size()); }
  /// Number of elements.
  int64_t size() const { return shape_.numel(); }
  /// Element type.
  Dtype dtype() const { return dtype_; }
  /// Device holding the storage (the CPU for a null array).
  Device device() const;
  /// Bytes per element.
  std::size_t itemsize() const { return rensa::itemsize(dtype_); }
  /// Bytes spanned by the elements (size() * itemsize()).
  std::size_t nbytes() const { return static_cast<std::size_t>(size()) * itemsize(); }
  /// Row-major contiguous (size-1 axes may have any stride).
  bool is_contiguous() const;
  /// Dense in the channels-last layout of a 4-d array (size-1 axes may have any stride). An
  /// array with one channel, or one pixel, is both this and contiguous.
  bool is_channels_last() const;
  /// The format to give arrays computed from this one: `channels_last` when this array is
  /// channels-last and not also contiguous, else `contiguous` (PyTorch's rule).
  MemoryFormat suggest_memory_format() const;
  /// Address of element 0 (host devices only for dereferencing).
  void* raw_data() const;
  /// Typed address of element 0; throws DtypeError if T does not match dtype().
  template <class T>
  T* data() const {
    RENSA_CHECK(dtype_of<T>() == dtype_, DtypeError, "Array::data: requested ", dtype_name(dtype_of<T>()),
                " from an array of dtype ", dtype_name(dtype_));
    return static_cast<T*>(raw_data());
  }
  /// The underlying storage block (null for a null array); for backends and views.
  const std::shared_ptr<detail::Storage>& storage() const { return storage_; }
  /// True when both arrays use the same storage.
  bool shares_storage(const Array& other) const { return storage_ && storage_ == other.storage_; }

  // ---- views (share storage) ---------------------------------------------------------------
  /// Same data in a new shape; one extent may be -1. A view when the strides allow it, a copy
  /// otherwise (as NumPy). ShapeError when sizes differ.
  Array reshape(const Shape& shape) const;
  /// Reverses the axes.
  Array transpose() const;
  /// Permutes the axes; `axes` must be a permutation of 0..ndim-1 (negative allowed).
  Array transpose(const Shape& axes) const;
  /// Swaps two axes.
  Array swapaxes(int64_t a, int64_t b) const;
  /// Elements start, start+step, ... before stop along `axis` (NumPy slice semantics, clamped).
  Array slice(int64_t axis, std::optional<int64_t> start, std::optional<int64_t> stop,
              int64_t step = 1) const;
  /// NumPy basic indexing: integers, slices, NewAxis and one Ellipsis. IndexError when out of range.
  Array index(const std::vector<Index>& indices) const;
  /// A view with `shape` by NumPy broadcasting (stride 0 on broadcast axes); ShapeError if impossible.
  Array broadcast_to(const Shape& shape) const;
  /// Removes all size-1 axes.
  Array squeeze() const;
  /// Removes the given axes, which must have extent 1 (ShapeError otherwise).
  Array squeeze(const Shape& axes) const;
  /// Inserts an axis of extent 1 at `axis` (in the result's numbering).
  Array expand_dims(int64_t axis) const;

  // ---- copies ------------------------------------------------------------------------------
  /// A contiguous copy with its own storage.
  Array copy() const;
  /// This array if contiguous, else a contiguous copy.
  Array contiguous() const;
  /// This array if already in `format`, else a copy in it (ShapeError for channels_last unless 4-d).
  Array to_memory_format(MemoryFormat format) const;
  /// A contiguous copy converted to `dtype` (floats to 16-bit types round to nearest even).
  Array astype(Dtype dtype) const;
  /// This array on `device` (itself when already there).
  Array to(Device device) const;
  /// Copies `src` (broadcast to this shape, converting dtype) into this array's elements.
  void assign(const Array& src) const;
  /// Sets every element to `value`.
  void fill(double value) const;

  // ---- element access (host devices) -------------------------------------------------------
  /// The single element of a size-1 array, converted to T; ValueError for other sizes.
  template <class T>
  T item() const;
  /// The element at a multi-index, converted to T; IndexError when out of range.
  template <class T>
  T at(const std::vector<int64_t>& index) const;
  /// All elements in row-major order, converted to T.
  template <class T>
  std::vector<T> to_vector() const;

  /// NumPy-style text, e.g. `array([[1., 2.],\n       [3., 4.]], dtype=float32)`.
  std::string to_string() const;

 private:
  void require_host(const char* op) const;

  std::shared_ptr<detail::Storage> storage_;
  Shape shape_;
  Shape strides_;
  int64_t offset_ = 0;
  Dtype dtype_ = Dtype::float32;
};

/// Writes to_string() to `os`.
std::ostream& operator<<(std::ostream& os, const Array& a);

/// True when the arrays have equal shapes and every pair of elements is equal (exact).
bool array_equal(const Array& a, const Array& b);
/// NumPy's allclose: |a - b| <= atol + rtol * |b| elementwise after broadcasting; NaNs compare
/// unequal unless `equal_nan`.
bool allclose(const Array& a, const Array& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);

// ---- template definitions ----------------------------------------------------------------------

template <class T>
Array Array::from_vector(const std::vector<T>& values, const Shape& shape, Device device) {
  RENSA_CHECK(static_cast<int64_t>(values.size()) == shape.numel(), ShapeError, "Array::from_vector: ",
              values.size(), " values do not fill shape ", shape);
  Array host = Array::empty(shape, dtype_of<T>(), Device::cpu());
  T* p = host.data<T>();
  for (std::size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  return host.to(device);
}

template <class T>
T Array::item() const {
  RENSA_CHECK(size() == 1, ValueError, "Array::item: the array has ", size(), " elements, shape ", shape_);
  require_host("Array::item");
  Shape zero(shape_.size(), 0);
  return at<T>(zero.to_vector());
}

template <class T>
T Array::at(const std::vector<int64_t>& index) const {
  require_host("Array::at");
  RENSA_CHECK(static_cast<int64_t>(index.size()) == ndim(), IndexError, "Array::at: ", index.size(),
              " indices for an array of shape ", shape_);
  int64_t off = offset_;
  for (std::size_t i = 0; i < index.size(); ++i) {
    RENSA_CHECK(index[i] >= 0 && index[i] < shape_[i], IndexError, "Array::at: index ", index[i],
                " is out of bounds for axis ", i, " with size ", shape_[i]);
    off += index[i] * strides_[i];
  }
  return dispatch(dtype_, [&]<class S>() -> T {
    const S v = static_cast<const S*>(storage_->data())[off];
    return static_cast<T>(static_cast<compute_t<S>>(v));
  });
}

template <class T>
std::vector<T> Array::to_vector() const {
  require_host("Array::to_vector");
  Array c = contiguous();
  std::vector<T> out(static_cast<std::size_t>(size()));
  dispatch(dtype_, [&]<class S>() {
    const S* p = c.data<S>();
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<T>(static_cast<compute_t<S>>(p[i]));
  });
  return out;
}

}  // namespace rensa
