// cpu kernels: batch normalization (src/backends/common/batch_norm.h), one fused pass per statistic
// and one for the output instead of a dozen elementwise and reduction passes over the whole batch;
// each sub-batch's positions split among threads, their partial sums added in thread order (the
// result depends on the thread count only through the order of those additions). Each range runs
// compiled for the widest vector width the CPU has (isa.h): the bfloat16 conversions and double
// sums are arithmetic bound at SSE2's width.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "src/backends/common/batch_norm.h"
#include "src/backends/cpu/isa.h"
#include "src/backends/cpu/kernels.h"
#include "src/backends/cpu/loops.h"

namespace rensa::backends::cpu {
namespace {

// Threads for `elements` elements of work: one below the grain of the elementwise loops.
int threads_for(int64_t elements) {
  if (elements < kParallelGrain || omp_in_parallel()) return 1;
  return static_cast<int>(std::min<int64_t>(omp_get_max_threads(), elements / kParallelGrain + 1));
}

// [begin, end) of chunk t of n over `positions`.
std::pair<int64_t, int64_t> chunk(int64_t positions, int t, int n) {
  return {positions * t / n, positions * (t + 1) / n};
}

struct Sums {
  int64_t channels;
  template <class Body>
  std::vector<double> operator()(int64_t positions, Body&& body) const {
    const int64_t width = 2 * channels;
    const int n = threads_for(positions * channels);
    std::vector<double> part(static_cast<std::size_t>(width * n), 0.0);
#pragma omp parallel for num_threads(n) schedule(static, 1) if (n > 1)
    for (int t = 0; t < n; ++t) {
      const auto [b, e] = chunk(positions, t, n);
      with_widest_isa([&] { body(b, e, part.data() + width * t); });
    }
    std::vector<double> total(part.begin(), part.begin() + width);
    for (int t = 1; t < n; ++t) {
      for (int64_t i = 0; i < width; ++i) total[i] += part[width * t + i];
    }
    return total;
  }
};

struct Each {
  int64_t channels;
  template <class Body>
  void operator()(int64_t positions, Body&& body) const {
    const int n = threads_for(positions * channels);
#pragma omp parallel for num_threads(n) schedule(static, 1) if (n > 1)
    for (int t = 0; t < n; ++t) {
      const auto [b, e] = chunk(positions, t, n);
      with_widest_isa([&] { body(b, e); });
    }
  }
};

}  // namespace

void batch_norm_forward(const Array& x, const Array& gamma, const Array& beta, const Array& y, const Array& mean,
                        const Array& var, double eps) {
  const int64_t c = x.shape()[1];
  dispatch_floating(x.dtype(), "cpu batch_norm_forward", [&]<class T>() {
    host::batch_norm_forward<T>(x, gamma, beta, y, mean, var, eps, Sums{c}, Each{c});
  });
}

void batch_norm_backward(const Array& x, const Array& gamma, const Array& mean, const Array& var, const Array& gy,
                         const Array& gx, const Array& ggamma, const Array& gbeta, double eps) {
  const int64_t c = x.shape()[1];
  dispatch_floating(x.dtype(), "cpu batch_norm_backward", [&]<class T>() {
    host::batch_norm_backward<T>(x, gamma, mean, var, gy, gx, ggamma, gbeta, eps, Sums{c}, Each{c});
  });
}

}  // namespace rensa::backends::cpu
