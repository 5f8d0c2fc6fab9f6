// One OpenMP pool for the whole process: rensa's loops and OpenBLAS (OpenMP build) share it.
#include "rensa/core/threading.h"

#include <omp.h>

#include "rensa/core/error.h"

namespace rensa {

void set_num_threads(int n) {
  RENSA_CHECK(n >= 1, ValueError, "set_num_threads: need at least 1 thread, got ", n);
  omp_set_num_threads(n);  // OpenBLAS's OpenMP build and oneDNN read the same setting
}

int get_num_threads() { return omp_get_max_threads(); }

}  // namespace rensa
