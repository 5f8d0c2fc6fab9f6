// Reference kernel: scans along one axis, one multi-index at a time, each step in double from the
// output stored before it.
#include <vector>

#include "src/backends/reference/kernels.h"
#include "src/core/convert.h"

namespace rensa::backends::reference {

void scan(ScanOp op, const Array& x, const Array& a, int64_t axis, bool reverse, const Array& out) {
  const Shape& shape = out.shape();
  if (out.size() == 0) return;
  const auto ax = static_cast<std::size_t>(axis);
  const int64_t n = shape[ax];
  dispatch_floating(x.dtype(), "reference scan", [&]<class T>() {
    auto at = [&](const Array& v, const std::vector<int64_t>& idx) {
      int64_t off = 0;
      for (std::size_t d = 0; d < idx.size(); ++d) off += idx[d] * v.strides()[d];
      return static_cast<T*>(v.raw_data()) + off;
    };
    auto widened = [](T v) { return static_cast<double>(static_cast<compute_t<T>>(v)); };
    // Every multi-index with idx[axis] = 0 starts one scan.
    std::vector<int64_t> idx(shape.size(), 0);
    for (int64_t start = 0; start < out.size() / n; ++start) {
      double prev = 0;  // the stored output before, as the recurrence reads it
      for (int64_t j = 0; j < n; ++j) {
        idx[ax] = reverse ? n - 1 - j : j;
        const double v = widened(*at(x, idx));
        double y = v;
        if (j > 0 && op == ScanOp::sum) y = prev + v;
        if (j > 0 && op == ScanOp::prod) y = prev * v;
        if (j > 0 && op == ScanOp::linear) y = v + widened(*at(a, idx)) * prev;
        *at(out, idx) = rensa::detail::convert<T>(y);
        prev = widened(*at(out, idx));
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
