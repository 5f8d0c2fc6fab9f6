#pragma once
// Kernels that accumulate into 16-bit storage sum in float32 and round once at the end. ComputeView
// gives them one spelling for every dtype: float and double accumulate in the output itself; Half
// and BFloat16 accumulate in a per-thread float buffer that store() rounds into the output. The
// buffers are kept between calls, so the hot loops allocate nothing.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "rensa/core/dtype.h"
#include "src/backends/cpu/scratch.h"

namespace rensa::backends::cpu {

/// Per-thread scratch of at least `n` elements of A (uninitialized). Buffers alive at the same time
/// in one thread need distinct slots.
template <class A>
A* thread_scratch(std::size_t slot, int64_t n) {
  thread_local Scratch<2> scratch;
  return static_cast<A*>(scratch.get(slot, static_cast<std::size_t>(n) * sizeof(A), "cpu kernel"));
}

/// `n` elements of T at `dst`, seen as compute_t<T> and zeroed. Uses scratch slot 0 for 16-bit T.
template <class T>
class ComputeView {
 public:
  using A = compute_t<T>;
  static constexpr bool kDirect = std::is_same_v<A, T>;

  ComputeView(T* dst, int64_t n) : dst_(dst), n_(n) {
    if constexpr (kDirect) {
      data_ = dst;
    } else {
      data_ = thread_scratch<A>(0, n);
    }
    std::fill(data_, data_ + n_, A(0));
  }

  A* data() const { return data_; }

  /// Rounds the sums into `dst` (nothing to do when they were summed there).
  void store() const {
    if constexpr (!kDirect) std::copy(data_, data_ + n_, dst_);
  }

 private:
  T* dst_;
  int64_t n_;
  A* data_;
};

}  // namespace rensa::backends::cpu
