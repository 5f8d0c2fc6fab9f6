// cpu gather and scatter-add along one axis of an (A, N, B) view: rows of B elements move at once.
#include <omp.h>

#include "src/backends/common/host_kernels.h"
#include "src/backends/cpu/kernels.h"
#include "src/backends/cpu/loops.h"

namespace rensa::backends::cpu {

void take(const Array& x, const Array& idx, const Array& y) {
  const int64_t A = y.shape()[0], M = y.shape()[1], B = y.shape()[2];
  host::check_indices(idx, x.shape()[1], "take");
  const auto* ip = static_cast<const int64_t*>(idx.raw_data());
  const int64_t si = idx.strides()[0];
  const int64_t s0 = x.strides()[0], s1 = x.strides()[1], s2 = x.strides()[2];
  dispatch(y.dtype(), [&]<class T>() {
    const T* px = static_cast<const T*>(x.raw_data());
    T* py = static_cast<T*>(y.raw_data());
    const int64_t rows = A * M;
#pragma omp parallel for schedule(static) if (rows * B >= kParallelGrain)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t a = r / M, m = r % M;
      const T* src = px + a * s0 + ip[m * si] * s1;
      T* dst = py + r * B;
      for (int64_t b = 0; b < B; ++b) dst[b] = src[b * s2];
    }
  });
}

void scatter_add(const Array& x, const Array& idx, const Array& y) {
  const int64_t A = x.shape()[0], M = x.shape()[1], B = x.shape()[2], N = y.shape()[1];
  host::check_indices(idx, N, "scatter_add");
  const auto* ip = static_cast<const int64_t*>(idx.raw_data());
  const int64_t si = idx.strides()[0];
  const int64_t s0 = x.strides()[0], s1 = x.strides()[1], s2 = x.strides()[2];
  // Threads own disjoint (a, block of b) ranges and walk every m in order: repeated indices add up
  // in the same order as in the reference backend, without atomics.
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (B + kBlock - 1) / kBlock;
  dispatch(y.dtype(), [&]<class T>() {
    using C = compute_t<T>;
    const T* px = static_cast<const T*>(x.raw_data());
    T* py = static_cast<T*>(y.raw_data());
    host::with_compute_buffer(py, y.size(), [&](C* acc) {
#pragma omp parallel for schedule(static) if (A * M * B >= kParallelGrain)
      for (int64_t job = 0; job < A * blocks; ++job) {
        const int64_t a = job / blocks, b0 = (job % blocks) * kBlock, b1 = std::min(B, b0 + kBlock);
        for (int64_t m = 0; m < M; ++m) {
          const T* src = px + a * s0 + m * s1;
          C* dst = acc + (a * N + ip[m * si]) * B;
          for (int64_t b = b0; b < b1; ++b) dst[b] += C(src[b * s2]);
        }
      }
    });
  });
}

}  // namespace rensa::backends::cpu
