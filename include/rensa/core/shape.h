#pragma once
/// \file
/// Shape: a small vector of int64 extents (or strides) stored inline up to 6 dimensions.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <vector>

namespace rensa {

/// A list of int64 (extents, strides or axes). Up to kInline entries live inline, so copying a
/// typical shape allocates nothing. Prints as `(2, 3)`.
class Shape {
 public:
  /// Entries stored inline, without a heap allocation.
  static constexpr int kInline = 6;
  /// The entry type, int64_t.
  using value_type = int64_t;
  /// Iterator over the entries (a pointer).
  using iterator = int64_t*;
  /// Read-only iterator over the entries (a pointer).
  using const_iterator = const int64_t*;

  Shape() = default;
  /// The listed entries: `Shape{2, 3}`.
  Shape(std::initializer_list<int64_t> dims) { assign(dims.begin(), dims.size()); }
  /// A copy of `dims`.
  explicit Shape(std::span<const int64_t> dims) { assign(dims.data(), dims.size()); }
  /// A copy of `dims`.
  explicit Shape(const std::vector<int64_t>& dims) { assign(dims.data(), dims.size()); }
  /// `n` entries all equal to `value`.
  Shape(std::size_t n, int64_t value) {
    resize(n);
    std::fill(begin(), end(), value);
  }
  /// A copy of `o`.
  Shape(const Shape& o) { assign(o.data(), o.size()); }
  /// Takes `o`'s entries; `o` is left empty.
  Shape(Shape&& o) noexcept { move_from(o); }
  /// Copies `o`'s entries.
  Shape& operator=(const Shape& o) {
    if (this != &o) assign(o.data(), o.size());
    return *this;
  }
  /// Takes `o`'s entries; `o` is left empty.
  Shape& operator=(Shape&& o) noexcept {
    if (this != &o) move_from(o);
    return *this;
  }

  /// Number of entries (the rank, for a shape).
  std::size_t size() const { return size_; }
  /// True for no entries (a 0-d shape).
  bool empty() const { return size_ == 0; }
  /// Pointer to the first entry.
  int64_t* data() { return heap_ ? heap_.get() : inline_; }
  /// Pointer to the first entry.
  const int64_t* data() const { return heap_ ? heap_.get() : inline_; }
  /// Entry `i`, unchecked.
  int64_t& operator[](std::size_t i) { return data()[i]; }
  /// Entry `i`, unchecked.
  int64_t operator[](std::size_t i) const { return data()[i]; }
  /// Iterator to the first entry.
  int64_t* begin() { return data(); }
  /// Iterator past the last entry.
  int64_t* end() { return data() + size_; }
  /// Iterator to the first entry.
  const int64_t* begin() const { return data(); }
  /// Iterator past the last entry.
  const int64_t* end() const { return data() + size_; }
  /// The last entry; the shape must not be empty.
  int64_t back() const { return data()[size_ - 1]; }

  /// Sets the number of entries to `n`; new entries are `fill`.
  void resize(std::size_t n, int64_t fill = 0) {
    if (n > capacity()) grow(n);
    for (std::size_t i = size_; i < n; ++i) data()[i] = fill;
    size_ = n;
  }
  /// Appends `v`.
  void push_back(int64_t v) {
    if (size_ == capacity()) grow(size_ * 2);
    data()[size_++] = v;
  }
  /// Inserts `v` before entry `pos` (pos <= size(), unchecked).
  void insert(std::size_t pos, int64_t v) {
    push_back(0);
    int64_t* d = data();
    for (std::size_t i = size_ - 1; i > pos; --i) d[i] = d[i - 1];
    d[pos] = v;
  }
  /// Removes entry `pos` (pos < size(), unchecked).
  void erase(std::size_t pos) {
    int64_t* d = data();
    for (std::size_t i = pos; i + 1 < size_; ++i) d[i] = d[i + 1];
    --size_;
  }
  /// Product of the entries (1 for an empty shape).
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : *this) n *= d;
    return n;
  }
  /// The entries as a std::vector.
  std::vector<int64_t> to_vector() const { return {begin(), end()}; }
  /// The entries as a span (valid while the shape is unchanged).
  operator std::span<const int64_t>() const { return {data(), size_}; }  // NOLINT

  /// True when both have the same entries.
  friend bool operator==(const Shape& a, const Shape& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  /// True when the entries differ.
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

 private:
  std::size_t capacity() const { return heap_ ? heap_cap_ : kInline; }
  void assign(const int64_t* p, std::size_t n) {
    if (n > capacity()) grow(n);
    if (n != 0) std::memmove(data(), p, n * sizeof(int64_t));  // p may be null when n is 0
    size_ = n;
  }
  void grow(std::size_t n) {
    n = std::max<std::size_t>(n, kInline * 2);
    auto h = std::make_unique<int64_t[]>(n);
    std::memcpy(h.get(), data(), size_ * sizeof(int64_t));
    heap_ = std::move(h);
    heap_cap_ = n;
  }
  void move_from(Shape& o) {
    if (o.heap_) {
      heap_ = std::move(o.heap_);
      heap_cap_ = o.heap_cap_;
    } else {
      heap_.reset();
      std::memcpy(inline_, o.inline_, o.size_ * sizeof(int64_t));
    }
    size_ = o.size_;
    o.size_ = 0;
  }

  int64_t inline_[kInline] = {};
  std::unique_ptr<int64_t[]> heap_;
  std::size_t heap_cap_ = 0;
  std::size_t size_ = 0;
};

/// Prints `(2, 3)`, `(5,)` or `()`.
std::ostream& operator<<(std::ostream& os, const Shape& s);
/// The same text as operator<<.
std::string to_string(const Shape& s);

/// Row-major (C-order) strides, in elements, of a contiguous array of this shape.
Shape contiguous_strides(const Shape& shape);

/// Normalizes a possibly negative axis for an array of `ndim` dimensions; throws IndexError
/// naming `op` when out of range.
int64_t normalize_axis(int64_t axis, int64_t ndim, const char* op);

/// NumPy broadcasting of two shapes; throws ShapeError naming `op` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace rensa
