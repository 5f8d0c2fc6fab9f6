// Reference kernel: scans along one axis, one multi-index at a time.
#include <vector>

#include "src/backends/common/scalar_ops.h"
#include "src/backends/reference/kernels.h"

namespace rensa::backends::reference {

void scan(ScanOp op, const Array& x, const Array& a, int64_t axis, bool reverse, const Array& out) {
  const Shape& shape = out.shape();
  if (out.size() == 0) return;
  const auto ax = static_cast<std::size_t>(axis);
  const int64_t n = shape[ax];
  dispatch_floating(x.dtype(), "reference scan", [&]<class T>() {
    using C = compute_t<T>;
    auto at = [&](const Array& v, const std::vector<int64_t>& idx) {
      int64_t off = 0;
      for (std::size_t d = 0; d < idx.size(); ++d) off += idx[d] * v.strides()[d];
      return static_cast<T*>(v.raw_data()) + off;
    };
    // Every multi-index with idx[axis] = 0 starts one scan.
    std::vector<int64_t> idx(shape.size(), 0);
    for (int64_t start = 0; start < out.size() / n; ++start) {
      C acc = C(0);
      for (int64_t j = 0; j < n; ++j) {
        idx[ax] = reverse ? n - 1 - j : j;
        const C v = C(*at(x, idx));
        if (j == 0)
          acc = v;
        else if (op == ScanOp::sum)
          acc = C(T(acc + v));
        else if (op == ScanOp::prod)
          acc = C(T(acc * v));
        else
          acc = C(T(v + C(*at(a, idx)) * acc));
        *at(out, idx) = T(acc);
      }
      idx[ax] = 0;
      for (std::size_t d = shape.size(); d-- > 0;) {
        if (d == ax) continue;
        if (++idx[d] < shape[d]) break;
        idx[d] = 0;
      }
    }
  });
}

}  // namespace rensa::backends::reference
