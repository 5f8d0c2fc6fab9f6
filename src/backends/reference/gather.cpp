// Reference gather and scatter-add along axis 1 of an (A, N, B) view: naive loops.
#include <type_traits>
#include <vector>

#include "src/backends/reference/kernels.h"
#include "src/core/convert.h"

namespace rensa::backends::reference {
namespace {
int64_t index_at(const Array& idx, int64_t m) {
  return static_cast<const int64_t*>(idx.raw_data())[m * idx.strides()[0]];
}

// IndexError unless every index lies in [0, n), before anything is written; `op` names the kernel.
void check_indices(const Array& idx, int64_t n, const char* op) {
  for (int64_t m = 0; m < idx.shape()[0]; ++m) {
    const int64_t i = index_at(idx, m);
    RENSA_CHECK(i >= 0 && i < n, IndexError, op, ": index ", i, " at position ", m, " is out of range [0, ", n, ")");
  }
}
}  // namespace

void take(const Array& x, const Array& idx, const Array& y) {
  check_indices(idx, x.shape()[1], "take");
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
  check_indices(idx, y.shape()[1], "scatter_add");
  const int64_t N = y.shape()[1], B = y.shape()[2];
  dispatch(y.dtype(), [&]<class T>() {
    // The slot's contract fixes the sum: in order of m, in the compute type (float for 16-bit
    // floats), rounded once. Integers in int64, which wraps as the element type would.
    using A = std::conditional_t<is_floating(dtype_of<T>()), compute_t<T>, int64_t>;
    const T* px = static_cast<const T*>(x.raw_data());
    T* py = static_cast<T*>(y.raw_data());
    std::vector<A> acc(static_cast<std::size_t>(y.size()));
    for (std::size_t k = 0; k < acc.size(); ++k) acc[k] = static_cast<A>(static_cast<compute_t<T>>(py[k]));
    for (int64_t a = 0; a < x.shape()[0]; ++a) {
      for (int64_t m = 0; m < x.shape()[1]; ++m) {
        for (int64_t b = 0; b < B; ++b) {
          acc[static_cast<std::size_t>((a * N + index_at(idx, m)) * B + b)] += static_cast<A>(
              static_cast<compute_t<T>>(px[a * x.strides()[0] + m * x.strides()[1] + b * x.strides()[2]]));
        }
      }
    }
    for (std::size_t k = 0; k < acc.size(); ++k) py[k] = rensa::detail::convert<T>(acc[k]);
  });
}

}  // namespace rensa::backends::reference
