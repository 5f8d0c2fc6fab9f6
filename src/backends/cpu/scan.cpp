// cpu kernel: scans (cumulative sums and products, linear recurrences) along one axis. The loops
// run over the other axes (in parallel when large), stepping along the scanned axis outside, so the
// inner loop is elementwise over a run of independent scans.
#include "src/backends/common/scalar_ops.h"
#include "src/backends/cpu/kernels.h"
#include "src/backends/cpu/loops.h"

namespace rensa::backends::cpu {

void scan(ScanOp op, const Array& x, const Array& a, int64_t axis, bool reverse, const Array& out) {
  if (out.size() == 0) return;
  const auto ax = static_cast<std::size_t>(axis);
  const int64_t n = out.shape()[ax];
  const int64_t first = reverse ? n - 1 : 0, dir = reverse ? -1 : 1;
  const Array& mul = op == ScanOp::linear ? a : x;  // read only by linear
  // The first element of every scan: views without the scanned axis.
  auto head = [&](const Array& v) { return v.slice(axis, first, first + 1).squeeze(Shape{axis}); };
  const Array xh = head(x), mh = head(mul), oh = head(out);
  const int64_t sx = x.strides()[ax] * dir, sm = mul.strides()[ax] * dir, so = out.strides()[ax] * dir;
  dispatch_floating(x.dtype(), "cpu scan", [&]<class T>() {
    using C = compute_t<T>;
    auto step = [&]<ScanOp Op>() {
      for_each_run<3>(
          {&xh, &mh, &oh},
          [&](const Run<3>& r) {
            const T* px = reinterpret_cast<const T*>(r.ptr[0]);
            const T* pm = reinterpret_cast<const T*>(r.ptr[1]);
            T* po = reinterpret_cast<T*>(r.ptr[2]);
            const int64_t rx = r.stride[0], rm = r.stride[1], ro = r.stride[2];
            for (int64_t i = 0; i < r.n; ++i) po[i * ro] = px[i * rx];
            for (int64_t k = 1; k < n; ++k) {
              const T* xk = px + k * sx;
              const T* mk = pm + k * sm;
              const T* prev = po + (k - 1) * so;
              T* ok = po + k * so;
              for (int64_t i = 0; i < r.n; ++i) {
                const C p = C(prev[i * ro]), v = C(xk[i * rx]);
                if constexpr (Op == ScanOp::sum)
                  ok[i * ro] = T(p + v);
                else if constexpr (Op == ScanOp::prod)
                  ok[i * ro] = T(p * v);
                else
                  ok[i * ro] = T(v + C(mk[i * rm]) * p);
              }
            }
          },
          std::max<int64_t>(1, kParallelGrain / n));
    };
    switch (op) {
      case ScanOp::sum:
        step.template operator()<ScanOp::sum>();
        break;
      case ScanOp::prod:
        step.template operator()<ScanOp::prod>();
        break;
      case ScanOp::linear:
        step.template operator()<ScanOp::linear>();
        break;
    }
  });
}

}  // namespace rensa::backends::cpu
