#pragma once
/// \file
/// The process's one thread pool (OpenMP, shared with BLAS): its size.

namespace rensa {
/// Sets the number of threads kernels and BLAS use (n >= 1; ValueError otherwise).
void set_num_threads(int n);
/// The number of threads kernels and BLAS use.
int get_num_threads();
}  // namespace rensa
