#pragma once
/// \file
/// A small-object allocator for the objects every function call creates (variables, graph nodes,
/// small array storage). Blocks up to kMaxBytes are recycled through per-thread free lists, which
/// keeps recording and freeing a graph off malloc's slow paths. Internal (rensa::detail).

#include <cstddef>
#include <new>

namespace rensa::detail {

inline constexpr std::size_t kPoolMaxBytes = 512;

/// A block of at least `bytes` bytes, 16-byte aligned.
void* pool_allocate(std::size_t bytes);
/// Returns a block from pool_allocate(bytes) (any thread may return it).
void pool_deallocate(void* p, std::size_t bytes) noexcept;

/// std-compatible allocator over pool_allocate, for std::allocate_shared.
template <class T>
struct PoolAllocator {
  using value_type = T;
  static_assert(alignof(T) <= 16, "PoolAllocator: over-aligned type");
  PoolAllocator() = default;
  template <class U>
  PoolAllocator(const PoolAllocator<U>&) {}  // NOLINT: rebinding is implicit by design
  T* allocate(std::size_t n) { return static_cast<T*>(pool_allocate(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { pool_deallocate(p, n * sizeof(T)); }
  template <class U>
  friend bool operator==(const PoolAllocator&, const PoolAllocator<U>&) {
    return true;
  }
};

}  // namespace rensa::detail
