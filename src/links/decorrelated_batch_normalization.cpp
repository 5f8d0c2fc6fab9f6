// DecorrelatedBatchNormalization: running or population whitening statistics, as Chainer's link.
#include <vector>

#include "rensa/core/config.h"
#include "rensa/core/error.h"
#include "rensa/links/normalization.h"

namespace rensa::links {
namespace F = rensa::functions;

DecorrelatedBatchNormalization::DecorrelatedBatchNormalization(int64_t size, int64_t groups, double decay, double eps,
                                                               Dtype dtype)
    : size_(size), groups_(groups), decay_(decay), eps_(eps) {
  constexpr const char* op = "DecorrelatedBatchNormalization";
  RENSA_CHECK(groups > 0, ValueError, op, ": groups must be positive, got ", groups);
  RENSA_CHECK((size >= 0 && size % groups == 0), ShapeError, op, ": size ", size,
              " must be a non-negative multiple of groups ", groups);
  RENSA_CHECK(decay >= 0.0 && decay <= 1.0, ValueError, op, ": decay must be in [0, 1], got ", decay);
  RENSA_CHECK(eps > 0.0, ValueError, op, ": eps must be positive, got ", eps);
  RENSA_CHECK(is_floating(dtype), DtypeError, op, ": statistics need a floating dtype, got ", dtype);
  const int64_t c = size / groups;
  add_persistent("avg_mean", Array::zeros({groups, c}, dtype, device_));
  std::vector<double> eye(static_cast<std::size_t>(groups * c * c), 0.0);
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t i = 0; i < c; ++i) eye[static_cast<std::size_t>((g * c + i) * c + i)] = 1.0;
  }
  add_persistent("avg_projection", Array::from_vector(eye, {groups, c, c}, device_).astype(dtype));
  add_persistent("N", Array::zeros({}, Dtype::int64, device_));
}

int64_t DecorrelatedBatchNormalization::n_batches() {
  return persistent("N").to(Device::cpu()).to_vector<int64_t>()[0];
}

void DecorrelatedBatchNormalization::start_finetuning() {
  persistent("N").fill(0.0);
}

Variable DecorrelatedBatchNormalization::forward(const Variable& x) {
  RENSA_CHECK(!x.is_null() && x.ndim() >= 2 && x.shape()[1] == size_, ShapeError, "DecorrelatedBatchNormalization: x ",
              x.is_null() ? Shape() : x.shape(), " does not have ", size_, " channels on axis 1");
  Array& mean = avg_mean();
  Array& projection = avg_projection();
  if (!config().train) {
    return F::fixed_decorrelated_batch_normalization(x, Variable(mean.astype(x.dtype())),
                                                     Variable(projection.astype(x.dtype())), groups_);
  }
  double decay = decay_;
  if (finetune_) {
    const int64_t count = n_batches() + 1;
    persistent("N").fill(static_cast<double>(count));
    decay = 1.0 - 1.0 / static_cast<double>(count);
  }
  return F::decorrelated_batch_normalization(x, groups_, eps_, &mean, &projection, decay);
}

}  // namespace rensa::links
