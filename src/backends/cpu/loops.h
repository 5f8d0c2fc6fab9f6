#pragma once
// Strided n-ary loops for the cpu kernels: axes are visited in the memory order of the last array
// (the output, by convention: a channels-last output is walked (N, H, W, C)), dimensions are
// coalesced, the innermost run is handed to
// a callback with per-array element strides (1 for contiguous runs, which compilers vectorize),
// and the outer iterations are split among the OpenMP threads when the work is large enough.
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>

#include "rensa/core/array.h"

namespace rensa::backends::cpu {

/// Elements below which a loop runs on one thread (thread start-up costs more than the work).
inline constexpr int64_t kParallelGrain = 32768;

template <std::size_t N>
struct Run {
  std::array<char*, N> ptr;        // first element of the run, per array
  std::array<int64_t, N> stride;   // element stride along the run, per array
  int64_t n;                       // elements in the run
};

/// Calls `inner(Run<N>)` over all elements of `arrays` (same shape; strides may be 0).
template <std::size_t N, class Inner>
void for_each_run(const std::array<const Array*, N>& arrays, Inner&& inner, int64_t grain = kParallelGrain) {
  const Shape& shape = arrays[0]->shape();
  const int64_t total = shape.numel();
  if (total == 0) return;
  // Drop size-1 axes, order the rest by the last array's strides (outermost first; a stable sort,
  // so a row-major output keeps its order) and merge axes that are contiguous with respect to each
  // other in every array.
  int order[32];
  int kept = 0;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    RENSA_CHECK(kept < 32, ShapeError, "cpu loop: more than 32 non-trivial dimensions in ", shape);
    order[kept++] = static_cast<int>(i);
  }
  const Shape& key = arrays[N - 1]->strides();
  std::stable_sort(order, order + kept, [&](int a, int b) { return std::llabs(key[a]) > std::llabs(key[b]); });
  int64_t dims[32];
  int64_t strides[N][32];
  int nd = 0;
  for (int o = 0; o < kept; ++o) {
    const auto i = static_cast<std::size_t>(order[o]);
    if (nd > 0) {
      bool merge = true;
      for (std::size_t k = 0; k < N; ++k) {
        if (strides[k][nd - 1] != arrays[k]->strides()[i] * shape[i]) merge = false;
      }
      if (merge) {
        dims[nd - 1] *= shape[i];
        for (std::size_t k = 0; k < N; ++k) strides[k][nd - 1] = arrays[k]->strides()[i];
        continue;
      }
    }
    dims[nd] = shape[i];
    for (std::size_t k = 0; k < N; ++k) strides[k][nd] = arrays[k]->strides()[i];
    ++nd;
  }
  std::array<char*, N> base;
  std::array<int64_t, N> isize;
  for (std::size_t k = 0; k < N; ++k) {
    base[k] = static_cast<char*>(arrays[k]->raw_data());
    isize[k] = static_cast<int64_t>(arrays[k]->itemsize());
  }
  if (nd == 0) {
    Run<N> r{base, {}, 1};
    inner(r);
    return;
  }
  const int64_t len = dims[nd - 1];
  const int64_t outer = total / len;
  std::array<int64_t, N> istride;
  for (std::size_t k = 0; k < N; ++k) istride[k] = strides[k][nd - 1];
  const bool par = total >= grain && omp_get_max_threads() > 1 && !omp_in_parallel();

  if (outer == 1) {
    // One long run: split it into per-thread chunks.
    auto chunk = [&](int64_t begin, int64_t end) {
      Run<N> r;
      for (std::size_t k = 0; k < N; ++k) {
        r.ptr[k] = base[k] + begin * istride[k] * isize[k];
        r.stride[k] = istride[k];
      }
      r.n = end - begin;
      if (r.n > 0) inner(r);
    };
    if (!par) {
      chunk(0, len);
      return;
    }
#pragma omp parallel
    {
      const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
      const int64_t per = (len + nt - 1) / nt;
      chunk(std::min(len, t * per), std::min(len, (t + 1) * per));
    }
    return;
  }
  auto row = [&](int64_t m) {
    Run<N> r;
    int64_t rem = m;
    std::array<int64_t, N> off{};
    for (int d = nd - 2; d >= 0; --d) {
      const int64_t i = rem % dims[d];
      rem /= dims[d];
      for (std::size_t k = 0; k < N; ++k) off[k] += i * strides[k][d];
    }
    for (std::size_t k = 0; k < N; ++k) {
      r.ptr[k] = base[k] + off[k] * isize[k];
      r.stride[k] = istride[k];
    }
    r.n = len;
    inner(r);
  };
  if (par) {
#pragma omp parallel for schedule(static)
    for (int64_t m = 0; m < outer; ++m) row(m);
  } else {
    for (int64_t m = 0; m < outer; ++m) row(m);
  }
}

}  // namespace rensa::backends::cpu
