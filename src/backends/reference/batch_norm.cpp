// Reference kernels: batch normalization (src/backends/common/batch_norm.h), each sub-batch's
// positions in order on one thread.
#include <vector>

#include "src/backends/common/batch_norm.h"
#include "src/backends/reference/kernels.h"

namespace rensa::backends::reference {
namespace {

struct Serial {
  int64_t width;  // doubles per accumulator
  template <class Body>
  std::vector<double> operator()(int64_t positions, Body&& body) const {
    std::vector<double> acc(static_cast<std::size_t>(width), 0.0);
    body(0, positions, acc.data());
    return acc;
  }
};
struct Each {
  template <class Body>
  void operator()(int64_t positions, Body&& body) const {
    body(0, positions);
  }
};

}  // namespace

void batch_norm_forward(const Array& x, const Array& gamma, const Array& beta, const Array& y, const Array& mean,
                        const Array& var, double eps) {
  dispatch_floating(x.dtype(), "reference batch_norm_forward", [&]<class T>() {
    host::batch_norm_forward<T>(x, gamma, beta, y, mean, var, eps, Serial{2 * x.shape()[1]}, Each{});
  });
}

void batch_norm_backward(const Array& x, const Array& gamma, const Array& mean, const Array& var, const Array& gy,
                         const Array& gx, const Array& ggamma, const Array& gbeta, double eps) {
  dispatch_floating(x.dtype(), "reference batch_norm_backward", [&]<class T>() {
    host::batch_norm_backward<T>(x, gamma, mean, var, gy, gx, ggamma, gbeta, eps, Serial{2 * x.shape()[1]}, Each{});
  });
}

}  // namespace rensa::backends::reference
