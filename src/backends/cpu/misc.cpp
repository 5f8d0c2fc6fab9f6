// cpu kernels without a family of their own: random numbers and item selection.
#include <omp.h>

#include "src/backends/common/host_kernels.h"
#include "src/backends/common/scalar_ops.h"
#include "src/backends/cpu/kernels.h"
#include "src/backends/cpu/loops.h"

namespace rensa::backends::cpu {

void random(RandomDist dist, const Array& out, uint64_t seed, uint64_t offset, double p0, double p1) {
  dispatch_floating(out.dtype(), "random", [&]<class T>() {
    T* p = static_cast<T*>(out.raw_data());  // freshly allocated, contiguous
    const int64_t n = out.size();
    const double scale = dist == RandomDist::uniform ? p1 - p0 : p1;
#pragma omp parallel for schedule(static) if (n >= 4096)
    for (int64_t i = 0; i < n; ++i) {
      const double u = detail::random_at(dist, offset + static_cast<uint64_t>(i), seed);
      p[i] = T(p0 + scale * u);
    }
  });
}

void select_item(const Array& x, const Array& t, const Array& y) { host::select_item(x, t, y); }
void scatter_item(const Array& gy, const Array& t, const Array& gx) { host::scatter_item(gy, t, gx); }

}  // namespace rensa::backends::cpu
