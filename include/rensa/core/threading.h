#pragma once
/// \file
/// The process's one thread pool (OpenMP, shared with BLAS): its size.

#include <cstdint>
#include <functional>

namespace rensa {
/// Sets the number of threads kernels and BLAS use (n >= 1; ValueError otherwise).
void set_num_threads(int n);
/// The number of threads kernels and BLAS use.
int get_num_threads();

/// Runs body(begin, end) over [0, n) split into contiguous chunks of at least `grain` indices, one
/// per thread of the pool (for a user's own forward or backward loop on host arrays; see
/// docs/custom_functions.md). Inside another parallel region it runs on the calling thread. The
/// first exception a chunk throws is rethrown once all chunks finish. ValueError when n < 0 or
/// grain < 1.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& body);
}  // namespace rensa
