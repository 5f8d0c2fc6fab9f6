// The L2 norm shared by the layer-wise adaptive optimizers.
#include "src/optimizers/norm.h"

#include <cmath>

#include "src/functions/common.h"

namespace rensa::optimizers::detail {

double l2_norm(const Array& a, const char* op) {
  namespace fd = rensa::functions::detail;
  if (a.size() == 0) return 0.0;
  const bool narrow = is_half(a.dtype());
  const Array sq = fd::unary(op, UnaryOp::square, narrow ? a.astype(Dtype::float32) : a);
  Shape axes;
  for (int64_t i = 0; i < sq.ndim(); ++i) axes.push_back(i);
  const double sum = fd::reduce(op, ReduceOp::sum, sq, axes, false, Dtype::float64).to(Device::cpu()).item<double>();
  return std::sqrt(sum);
}

}  // namespace rensa::optimizers::detail
