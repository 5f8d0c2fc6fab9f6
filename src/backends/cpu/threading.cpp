// One OpenMP pool for the whole process: rensa's loops and OpenBLAS (OpenMP build) share it.
#include "rensa/core/threading.h"

#include <omp.h>

#include <algorithm>
#include <exception>

#include "rensa/core/error.h"

namespace rensa {

void set_num_threads(int n) {
  RENSA_CHECK(n >= 1, ValueError, "set_num_threads: need at least 1 thread, got ", n);
  omp_set_num_threads(n);  // OpenBLAS's OpenMP build and oneDNN read the same setting
}

int get_num_threads() { return omp_get_max_threads(); }

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  RENSA_CHECK(n >= 0 && grain >= 1, ValueError, "parallel_for: need n >= 0 and grain >= 1, got n ", n, ", grain ",
              grain);
  if (n == 0) return;
  const int64_t chunks = std::min<int64_t>(omp_get_max_threads(), (n + grain - 1) / grain);
  if (chunks <= 1 || omp_in_parallel()) {
    body(0, n);
    return;
  }
  std::exception_ptr error;
#pragma omp parallel num_threads(static_cast<int>(chunks))
  {
    const int64_t t = omp_get_thread_num(), parts = omp_get_num_threads();
    try {
      body(n * t / parts, n * (t + 1) / parts);
    } catch (...) {
#pragma omp critical(rensa_parallel_for)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace rensa
