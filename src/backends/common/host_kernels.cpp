#include "src/backends/common/host_kernels.h"

#include "src/backends/common/scalar_ops.h"

namespace rensa::backends::host {
namespace {
template <class F>
void for_labels(const Array& t, int64_t classes, const char* op, F&& f) {
  dispatch(t.dtype(), [&]<class I>() {
    if constexpr (std::is_integral_v<I> && !std::is_same_v<I, bool>) {
      for (int64_t i = 0; i < t.shape()[0]; ++i) {
        const auto label = static_cast<int64_t>(static_cast<const I*>(t.raw_data())[i * t.strides()[0]]);
        RENSA_CHECK(label >= 0 && label < classes, IndexError, op, ": label ", label, " at position ", i,
                    " is out of range [0, ", classes, ")");
        f(i, label);
      }
    } else {
      RENSA_THROW(DtypeError, op, ": labels must be int32 or int64, got ", t.dtype());
    }
  });
}
}  // namespace

void select_item(const Array& x, const Array& t, const Array& y) {
  dispatch(x.dtype(), [&]<class T>() {
    const T* px = static_cast<const T*>(x.raw_data());
    T* py = static_cast<T*>(y.raw_data());
    const int64_t s0 = x.strides()[0], s1 = x.strides()[1], sy = y.strides()[0];
    for_labels(t, x.shape()[1], "select_item", [&](int64_t i, int64_t c) { py[i * sy] = px[i * s0 + c * s1]; });
  });
}

void scatter_item(const Array& gy, const Array& t, const Array& gx) {
  get_backend(gx.device()).kernels().fill(gx, 0.0);
  dispatch(gx.dtype(), [&]<class T>() {
    const T* pg = static_cast<const T*>(gy.raw_data());
    T* px = static_cast<T*>(gx.raw_data());
    const int64_t s0 = gx.strides()[0], s1 = gx.strides()[1], sg = gy.strides()[0];
    for_labels(t, gx.shape()[1], "select_item", [&](int64_t i, int64_t c) { px[i * s0 + c * s1] = pg[i * sg]; });
  });
}

void check_indices(const Array& idx, int64_t n, const char* op) {
  const auto* p = static_cast<const int64_t*>(idx.raw_data());
  for (int64_t m = 0; m < idx.shape()[0]; ++m) {
    const int64_t i = p[m * idx.strides()[0]];
    RENSA_CHECK(i >= 0 && i < n, IndexError, op, ": index ", i, " at position ", m, " is out of range [0, ", n, ")");
  }
}

}  // namespace rensa::backends::host
