#include "rensa/core/array.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "rensa/core/backend.h"
#include "rensa/core/memory_stats.h"
#include "rensa/core/pool_allocator.h"
#include "src/core/static_capture.h"

namespace rensa {

namespace detail {
Storage::Storage(std::size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  data_ =
      device.is_host() && nbytes <= kInlineBytes ? static_cast<void*>(inline_) : get_backend(device).allocate(nbytes);
  if (memory_tracking_on()) [[unlikely]]
    tracked_ = track_allocated(nbytes);
  if (static_capturing()) [[unlikely]]
    capture_allocated(this);
}
Storage::~Storage() {
  if (tracked_) [[unlikely]]
    track_freed(nbytes_);
  if (data_ != inline_ && !owner_) get_backend(device_).deallocate(data_, nbytes_);
}

void Storage::share_memory_of(std::shared_ptr<Storage> owner) {
  RENSA_CHECK(owner && owner.get() != this && !owner->owner_ && owner->nbytes_ >= nbytes_ &&
                  owner->device_ == device_ && device_.is_host() && data_ != inline_ && owner->data_ != owner->inline_,
              ValueError, "Storage::share_memory_of: a ", nbytes_, "-byte storage cannot use that memory");
  if (!owner_) get_backend(device_).deallocate(data_, nbytes_);
  if (tracked_) [[unlikely]] {
    track_freed(nbytes_);
    tracked_ = false;
  }
  data_ = owner->data_;
  owner_ = std::move(owner);
}
}  // namespace detail

Array::Array(std::shared_ptr<detail::Storage> storage, Shape shape, Shape strides, int64_t offset, Dtype dtype)
    : storage_(std::move(storage)),
      shape_(std::move(shape)),
      strides_(std::move(strides)),
      offset_(offset),
      dtype_(dtype) {}

namespace {
// Arrays hold data dtypes; a mixed-precision policy (Config::dtype) names none. `op` and the
// argument go into the message.
void check_array_dtype(const char* op, Dtype dtype) {
  RENSA_CHECK(!is_mixed(dtype), DtypeError, op, ": dtype ", dtype_name(dtype),
              " is a mixed-precision policy for Config::dtype, not an array dtype (its parameters are float32, its "
              "computations ",
              dtype == Dtype::mixed16 ? "float16" : "bfloat16", "; pass one of those)");
}
}  // namespace

Array Array::empty(const Shape& shape, Dtype dtype, Device device) {
  check_array_dtype("Array::empty", dtype);
  // Extents are checked one factor at a time so a huge shape is refused instead of wrapping around.
  const uint64_t item = rensa::itemsize(dtype);
  const uint64_t limit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / item;
  uint64_t span = 1;
  bool any_zero = false;
  for (int64_t d : shape) {
    RENSA_CHECK(d >= 0, ShapeError, "Array::empty: negative extent in shape ", shape);
    any_zero = any_zero || d == 0;
    const uint64_t factor = d == 0 ? 1 : static_cast<uint64_t>(d);
    RENSA_CHECK(span <= limit / factor, ShapeError, "Array::empty: shape ", shape, " of ", dtype_name(dtype),
                " needs more than ", limit * item, " bytes");
    span *= factor;
  }
  const std::size_t bytes = any_zero ? 0 : static_cast<std::size_t>(span * item);
  auto storage = std::allocate_shared<detail::Storage>(detail::PoolAllocator<detail::Storage>(), bytes, device);
  return Array(std::move(storage), shape, contiguous_strides(shape), 0, dtype);
}

Array Array::empty(const Shape& shape, Dtype dtype, Device device, MemoryFormat format) {
  if (format == MemoryFormat::contiguous) return empty(shape, dtype, device);
  RENSA_CHECK(shape.size() == 4, ShapeError, "Array::empty: channels_last needs 4 axes (N, C, H, W), got shape ",
              shape);
  // (N, H, W, C) row-major, viewed as (N, C, H, W).
  const Array nhwc = empty(Shape{shape[0], shape[2], shape[3], shape[1]}, dtype, device);
  return nhwc.transpose(Shape{0, 3, 1, 2});
}

Array Array::zeros(const Shape& shape, Dtype dtype, Device device) {
  check_array_dtype("Array::zeros", dtype);
  return full(shape, 0.0, dtype, device);
}
Array Array::ones(const Shape& shape, Dtype dtype, Device device) {
  check_array_dtype("Array::ones", dtype);
  return full(shape, 1.0, dtype, device);
}

Array Array::full(const Shape& shape, double value, Dtype dtype, Device device) {
  check_array_dtype("Array::full", dtype);
  Array a = empty(shape, dtype, device);
  a.fill(value);
  return a;
}

Array Array::scalar(double value, Dtype dtype, Device device) {
  check_array_dtype("Array::scalar", dtype);
  return full(Shape{}, value, dtype, device);
}

Array Array::arange(double start, double stop, double step, Dtype dtype, Device device) {
  check_array_dtype("Array::arange", dtype);
  RENSA_CHECK(step != 0.0 && std::isfinite(step) && std::isfinite(start) && std::isfinite(stop), ValueError,
              "Array::arange: invalid arguments start=", start, " stop=", stop, " step=", step);
  const auto n = static_cast<int64_t>(std::max(0.0, std::ceil((stop - start) / step)));
  Array host = empty(Shape{n}, Dtype::float64, Device::cpu());
  double* p = host.data<double>();
  for (int64_t i = 0; i < n; ++i) p[i] = start + static_cast<double>(i) * step;
  return host.astype(dtype).to(device);
}

Array Array::arange(int64_t n, Dtype dtype, Device device) {
  RENSA_CHECK(n >= 0, ValueError, "Array::arange: negative length ", n);
  return arange(0.0, static_cast<double>(n), 1.0, dtype, device);
}

Array Array::linspace(double start, double stop, int64_t num, bool endpoint, Dtype dtype, Device device) {
  check_array_dtype("Array::linspace", dtype);
  RENSA_CHECK(num >= 0, ValueError, "Array::linspace: negative num ", num);
  Array host = empty(Shape{num}, Dtype::float64, Device::cpu());
  double* p = host.data<double>();
  const int64_t div = endpoint ? num - 1 : num;
  const double step = div > 0 ? (stop - start) / static_cast<double>(div) : 0.0;
  for (int64_t i = 0; i < num; ++i) p[i] = start + static_cast<double>(i) * step;
  if (endpoint && num > 1) p[num - 1] = stop;
  return host.astype(dtype).to(device);
}

Device Array::device() const {
  return storage_ ? storage_->device() : Device::cpu();
}

bool Array::is_contiguous() const {
  if (shape_.numel() == 0) return true;  // no elements: any strides will do (whichever axis is 0)
  int64_t expected = 1;
  for (std::size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] == 0) return true;
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

bool Array::is_channels_last() const {
  if (shape_.size() != 4) return false;
  if (shape_.numel() == 0) return true;
  // Walk the axes in (N, H, W, C) order from the innermost, as is_contiguous does for (N, C, H, W).
  constexpr int kOrder[4] = {1, 3, 2, 0};
  int64_t expected = 1;
  for (int axis : kOrder) {
    if (shape_[axis] != 1 && strides_[axis] != expected) return false;
    expected *= shape_[axis];
  }
  return true;
}

MemoryFormat Array::suggest_memory_format() const {
  return is_channels_last() && !is_contiguous() ? MemoryFormat::channels_last : MemoryFormat::contiguous;
}

void* Array::raw_data() const {
  RENSA_CHECK(storage_ != nullptr, ValueError, "Array::raw_data: null array");
  if (detail::static_capturing()) [[unlikely]]
    detail::capture_host_read(*this);
  return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(itemsize());
}

void Array::require_host(const char* op) const {
  RENSA_CHECK(storage_ != nullptr, ValueError, op, ": null array");
  RENSA_CHECK(device().is_host(), DeviceError, op, ": needs host memory, the array is on ", device());
  if (detail::static_capturing()) [[unlikely]]
    detail::capture_host_read(*this);
}

// ---- views -------------------------------------------------------------------------------------

Array Array::reshape(const Shape& new_shape) const {
  Shape shape = new_shape;
  int64_t infer = -1, known = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      RENSA_CHECK(infer < 0, ShapeError, "reshape: more than one -1 in ", new_shape);
      infer = static_cast<int64_t>(i);
    } else {
      RENSA_CHECK(shape[i] >= 0, ShapeError, "reshape: negative extent in ", new_shape);
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    RENSA_CHECK(known != 0 && size() % known == 0, ShapeError, "reshape: cannot reshape array of shape ", shape_,
                " into ", new_shape);
    shape[static_cast<std::size_t>(infer)] = size() / known;
  }
  RENSA_CHECK(shape.numel() == size(), ShapeError, "reshape: cannot reshape array of shape ", shape_, " (size ", size(),
              ") into ", new_shape);
  if (shape == shape_) return *this;
  if (is_contiguous()) return Array(storage_, shape, contiguous_strides(shape), offset_, dtype_);
  // Try a view: split/merge runs of axes that are contiguous with respect to each other (NumPy's
  // attempt_nocopy_reshape).
  Shape old_shape, old_strides;
  for (std::size_t i = 0; i < shape_.size(); ++i) {
    if (shape_[i] != 1) {
      old_shape.push_back(shape_[i]);
      old_strides.push_back(strides_[i]);
    }
  }
  Shape new_strides(shape.size(), 0);
  std::size_t oi = 0, oj = 1, ni = 0, nj = 1;
  const std::size_t on = old_shape.size(), nn = shape.size();
  bool ok = true;
  while (ni < nn && oi < on) {
    int64_t np = shape[ni], op = old_shape[oi];
    while (np != op) {
      if (np < op)
        np *= shape[nj++];
      else
        op *= old_shape[oj++];
    }
    for (std::size_t k = oi; k + 1 < oj; ++k) {
      if (old_strides[k] != old_shape[k + 1] * old_strides[k + 1]) ok = false;
    }
    if (!ok) break;
    new_strides[nj - 1] = old_strides[oj - 1];
    for (std::size_t k = nj - 1; k > ni; --k) new_strides[k - 1] = new_strides[k] * shape[k];
    ni = nj++;
    oi = oj++;
  }
  if (ok) {
    for (std::size_t k = ni; k < nn; ++k) new_strides[k] = 1;  // trailing size-1 axes
    return Array(storage_, shape, new_strides, offset_, dtype_);
  }
  return copy().reshape(shape);
}

Array Array::transpose() const {
  Shape axes(shape_.size(), 0);
  for (std::size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(axes.size() - 1 - i);
  return transpose(axes);
}

Array Array::transpose(const Shape& axes) const {
  RENSA_CHECK(static_cast<int64_t>(axes.size()) == ndim(), ShapeError, "transpose: axes ", axes,
              " do not match an array of shape ", shape_);
  Shape shape(axes.size(), 0), strides(axes.size(), 0);
  std::vector<char> seen(axes.size(), 0);
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = normalize_axis(axes[i], ndim(), "transpose");
    RENSA_CHECK(!seen[static_cast<std::size_t>(a)], ShapeError, "transpose: repeated axis in ", axes);
    seen[static_cast<std::size_t>(a)] = 1;
    shape[i] = shape_[static_cast<std::size_t>(a)];
    strides[i] = strides_[static_cast<std::size_t>(a)];
  }
  return Array(storage_, shape, strides, offset_, dtype_);
}

Array Array::swapaxes(int64_t a, int64_t b) const {
  a = normalize_axis(a, ndim(), "swapaxes");
  b = normalize_axis(b, ndim(), "swapaxes");
  Shape axes(shape_.size(), 0);
  for (std::size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
  std::swap(axes[static_cast<std::size_t>(a)], axes[static_cast<std::size_t>(b)]);
  return transpose(axes);
}

namespace {
// NumPy's PySlice_AdjustIndices: clamps start/stop and returns the number of elements.
int64_t adjust_slice(int64_t n, std::optional<int64_t> start_in, std::optional<int64_t> stop_in, int64_t step,
                     int64_t& start) {
  int64_t stop;
  if (step > 0) {
    start = start_in.value_or(0);
    stop = stop_in.value_or(n);
    if (start < 0) start = std::max<int64_t>(start + n, 0);
    if (start > n) start = n;
    if (stop < 0) stop = std::max<int64_t>(stop + n, 0);
    if (stop > n) stop = n;
    return stop > start ? (stop - start + step - 1) / step : 0;
  }
  start = start_in.value_or(n - 1);
  stop = stop_in.value_or(-n - 1);
  if (start < 0) start = std::max<int64_t>(start + n, -1);
  if (start >= n) start = n - 1;
  if (stop < 0) stop = std::max<int64_t>(stop + n, -1);
  if (stop >= n) stop = n - 1;
  return start > stop ? (start - stop - step - 1) / (-step) : 0;
}
}  // namespace

Array Array::slice(int64_t axis, std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step) const {
  axis = normalize_axis(axis, ndim(), "slice");
  RENSA_CHECK(step != 0, ValueError, "slice: step cannot be zero");
  const auto ax = static_cast<std::size_t>(axis);
  int64_t begin = 0;
  const int64_t n = adjust_slice(shape_[ax], start, stop, step, begin);
  Shape shape = shape_, strides = strides_;
  shape[ax] = n;
  strides[ax] = strides_[ax] * step;
  const int64_t offset = n > 0 ? offset_ + begin * strides_[ax] : offset_;
  return Array(storage_, shape, strides, offset, dtype_);
}

Array Array::index(const std::vector<Index>& indices) const {
  std::size_t consumed = 0, ellipses = 0;
  for (const auto& ix : indices) {
    if (std::holds_alternative<int64_t>(ix) || std::holds_alternative<Slice>(ix)) ++consumed;
    if (std::holds_alternative<Ellipsis>(ix)) ++ellipses;
  }
  RENSA_CHECK(ellipses <= 1, IndexError, "index: an index can only have a single ellipsis");
  RENSA_CHECK(consumed <= shape_.size(), IndexError, "index: too many indices (", consumed, ") for an array of shape ",
              shape_);
  Shape shape, strides;
  int64_t offset = offset_;
  std::size_t axis = 0;
  auto take_slice = [&](const Slice& s) {
    RENSA_CHECK(s.step != 0, ValueError, "index: slice step cannot be zero");
    int64_t begin = 0;
    const int64_t n = adjust_slice(shape_[axis], s.start, s.stop, s.step, begin);
    if (n > 0) offset += begin * strides_[axis];
    shape.push_back(n);
    strides.push_back(strides_[axis] * s.step);
    ++axis;
  };
  for (const auto& ix : indices) {
    if (const auto* i = std::get_if<int64_t>(&ix)) {
      const int64_t n = shape_[axis];
      RENSA_CHECK(*i >= -n && *i < n, IndexError, "index: index ", *i, " is out of bounds for axis ", axis,
                  " with size ", n);
      offset += (*i < 0 ? *i + n : *i) * strides_[axis];
      ++axis;
    } else if (const auto* s = std::get_if<Slice>(&ix)) {
      take_slice(*s);
    } else if (std::holds_alternative<NewAxis>(ix)) {
      shape.push_back(1);
      strides.push_back(0);
    } else {
      const std::size_t fill = shape_.size() - consumed;
      for (std::size_t k = 0; k < fill; ++k) take_slice(Slice{});
    }
  }
  while (axis < shape_.size()) take_slice(Slice{});
  return Array(storage_, shape, strides, offset, dtype_);
}

Array Array::broadcast_to(const Shape& shape) const {
  RENSA_CHECK(shape.size() >= shape_.size(), ShapeError, "broadcast_to: cannot broadcast ", shape_, " to ", shape);
  if (shape == shape_) return *this;
  const std::size_t lead = shape.size() - shape_.size();
  Shape strides(shape.size(), 0);
  for (std::size_t i = 0; i < shape_.size(); ++i) {
    const int64_t src = shape_[i], dst = shape[lead + i];
    RENSA_CHECK(src == dst || src == 1, ShapeError, "broadcast_to: cannot broadcast ", shape_, " to ", shape);
    strides[lead + i] = src == dst ? strides_[i] : 0;
  }
  return Array(storage_, shape, strides, offset_, dtype_);
}

Array Array::squeeze() const {
  Shape shape, strides;
  for (std::size_t i = 0; i < shape_.size(); ++i) {
    if (shape_[i] != 1) {
      shape.push_back(shape_[i]);
      strides.push_back(strides_[i]);
    }
  }
  return Array(storage_, shape, strides, offset_, dtype_);
}

Array Array::squeeze(const Shape& axes) const {
  std::vector<char> drop(shape_.size(), 0);
  for (int64_t a : axes) {
    const auto ax = static_cast<std::size_t>(normalize_axis(a, ndim(), "squeeze"));
    RENSA_CHECK(shape_[ax] == 1, ShapeError, "squeeze: axis ", a, " of shape ", shape_, " is not 1");
    drop[ax] = 1;
  }
  Shape shape, strides;
  for (std::size_t i = 0; i < shape_.size(); ++i) {
    if (!drop[i]) {
      shape.push_back(shape_[i]);
      strides.push_back(strides_[i]);
    }
  }
  return Array(storage_, shape, strides, offset_, dtype_);
}

Array Array::expand_dims(int64_t axis) const {
  axis = normalize_axis(axis, ndim() + 1, "expand_dims");
  Shape shape = shape_, strides = strides_;
  shape.insert(static_cast<std::size_t>(axis), 1);
  strides.insert(static_cast<std::size_t>(axis), 0);
  return Array(storage_, shape, strides, offset_, dtype_);
}

// ---- copies ------------------------------------------------------------------------------------

Array Array::copy() const {
  RENSA_CHECK(!is_null(), ValueError, "Array::copy: null array");
  Array out = empty(shape_, dtype_, device());
  RENSA_KERNEL(device(), copy, "Array::copy")(*this, out);
  return out;
}

Array Array::contiguous() const {
  return is_contiguous() ? *this : copy();
}

Array Array::to_memory_format(MemoryFormat format) const {
  if (format == MemoryFormat::contiguous) return contiguous();
  RENSA_CHECK(ndim() == 4, ShapeError, "Array::to_memory_format: channels_last needs 4 axes (N, C, H, W), got shape ",
              shape_);
  if (is_channels_last()) return *this;
  Array out = empty(shape_, dtype_, device(), format);
  out.assign(*this);
  return out;
}

Array Array::astype(Dtype dtype) const {
  RENSA_CHECK(!is_null(), ValueError, "Array::astype: null array");
  check_array_dtype("Array::astype", dtype);
  Array out = empty(shape_, dtype, device());
  RENSA_KERNEL(device(), copy, "Array::astype")(*this, out);
  return out;
}

Array Array::to(Device target) const {
  RENSA_CHECK(!is_null(), ValueError, "Array::to: null array");
  if (target == device()) return *this;
  Array src = contiguous();
  Array out = empty(shape_, dtype_, target);
  if (src.nbytes() == 0) return out;
  if (device().is_host()) {
    get_backend(target).memcpy_from_host(out.raw_data(), src.raw_data(), src.nbytes());
  } else if (target.is_host()) {
    get_backend(device()).memcpy_to_host(out.raw_data(), src.raw_data(), src.nbytes());
  } else {
    return src.to(Device::cpu()).to(target);
  }
  return out;
}

void Array::assign(const Array& src) const {
  RENSA_CHECK(!is_null() && !src.is_null(), ValueError, "Array::assign: null array");
  RENSA_CHECK(src.device() == device(), DeviceError, "Array::assign: source on ", src.device(), ", destination on ",
              device());
  RENSA_KERNEL(device(), copy, "Array::assign")(src.broadcast_to(shape_), *this);
}

void Array::fill(double value) const {
  RENSA_CHECK(!is_null(), ValueError, "Array::fill: null array");
  RENSA_KERNEL(device(), fill, "Array::fill")(*this, value);
}

// ---- comparison --------------------------------------------------------------------------------

bool array_equal(const Array& a, const Array& b) {
  if (a.shape() != b.shape()) return false;
  const auto va = a.to(Device::cpu()).to_vector<double>();
  const auto vb = b.to(Device::cpu()).to_vector<double>();
  for (std::size_t i = 0; i < va.size(); ++i) {
    if (!(va[i] == vb[i])) return false;
  }
  return true;
}

bool allclose(const Array& a, const Array& b, double rtol, double atol, bool equal_nan) {
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), "allclose");
  const auto va = a.to(Device::cpu()).broadcast_to(shape).to_vector<double>();
  const auto vb = b.to(Device::cpu()).broadcast_to(shape).to_vector<double>();
  for (std::size_t i = 0; i < va.size(); ++i) {
    const double x = va[i], y = vb[i];
    if (std::isnan(x) || std::isnan(y)) {
      if (equal_nan && std::isnan(x) && std::isnan(y)) continue;
      return false;
    }
    if (x == y) continue;  // equal infinities
    if (!(std::abs(x - y) <= atol + rtol * std::abs(y))) return false;
  }
  return true;
}

}  // namespace rensa
