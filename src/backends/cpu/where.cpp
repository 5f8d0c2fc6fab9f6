// cpu kernel: elementwise selection out = cond ? a : b.
#include "src/backends/cpu/kernels.h"
#include "src/backends/cpu/loops.h"

namespace rensa::backends::cpu {

void where(const Array& cond, const Array& a, const Array& b, const Array& out) {
  dispatch(out.dtype(), [&]<class T>() {
    for_each_run<4>({&cond, &a, &b, &out}, [&](const Run<4>& r) {
      const bool* pc = reinterpret_cast<const bool*>(r.ptr[0]);
      const T* pa = reinterpret_cast<const T*>(r.ptr[1]);
      const T* pb = reinterpret_cast<const T*>(r.ptr[2]);
      T* po = reinterpret_cast<T*>(r.ptr[3]);
      const int64_t sc = r.stride[0], sa = r.stride[1], sb = r.stride[2], so = r.stride[3];
      if (sc == 1 && sa == 1 && sb == 1 && so == 1) {
        // The common contiguous case: a branch-free select the compiler can vectorize.
#pragma omp simd
        for (int64_t i = 0; i < r.n; ++i) po[i] = pc[i] ? pa[i] : pb[i];
      } else {
        for (int64_t i = 0; i < r.n; ++i) po[i * so] = pc[i * sc] ? pa[i * sa] : pb[i * sb];
      }
    });
  });
}

}  // namespace rensa::backends::cpu
