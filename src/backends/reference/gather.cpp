// Reference gather and scatter-add along axis 1 of an (A, N, B) view: naive loops.
#include "src/backends/common/host_kernels.h"
#include "src/backends/reference/kernels.h"

namespace rensa::backends::reference {
namespace {
int64_t index_at(const Array& idx, int64_t m) {
  return static_cast<const int64_t*>(idx.raw_data())[m * idx.strides()[0]];
}
}  // namespace

void take(const Array& x, const Array& idx, const Array& y) {
  host::check_indices(idx, x.shape()[1], "take");
  dispatch(y.dtype(), [&]<class T>() {
    const T* px = static_cast<const T*>(x.raw_data());
    T* py = static_cast<T*>(y.raw_data());
    for (int64_t a = 0; a < y.shape()[0]; ++a) {
      for (int64_t m = 0; m < y.shape()[1]; ++m) {
        for (int64_t b = 0; b < y.shape()[2]; ++b) {
          py[a * y.strides()[0] + m * y.strides()[1] + b * y.strides()[2]] =
              px[a * x.strides()[0] + index_at(idx, m) * x.strides()[1] + b * x.strides()[2]];
        }
      }
    }
  });
}

void scatter_add(const Array& x, const Array& idx, const Array& y) {
  host::check_indices(idx, y.shape()[1], "scatter_add");
  const int64_t N = y.shape()[1], B = y.shape()[2];
  dispatch(y.dtype(), [&]<class T>() {
    using C = compute_t<T>;
    const T* px = static_cast<const T*>(x.raw_data());
    host::with_compute_buffer(static_cast<T*>(y.raw_data()), y.size(), [&](C* acc) {
      for (int64_t a = 0; a < x.shape()[0]; ++a) {
        for (int64_t m = 0; m < x.shape()[1]; ++m) {
          for (int64_t b = 0; b < B; ++b) {
            acc[(a * N + index_at(idx, m)) * B + b] +=
                C(px[a * x.strides()[0] + m * x.strides()[1] + b * x.strides()[2]]);
          }
        }
      }
    });
  });
}

}  // namespace rensa::backends::reference
