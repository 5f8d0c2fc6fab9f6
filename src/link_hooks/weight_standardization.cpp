#include "rensa/link_hooks/weight_standardization.h"

#include "rensa/core/error.h"
#include "rensa/functions/normalization.h"
#include "src/link_hooks/weight_transform.h"

namespace rensa::link_hooks {

WeightStandardization::WeightStandardization(WeightStandardizationOptions options) : options_(std::move(options)) {
  RENSA_CHECK(options_.eps > 0, ValueError, "WeightStandardization: eps must be positive, got ", options_.eps);
}

void WeightStandardization::added(Link* link) { detail::check_weight_link(name(), link, options_.weight_name); }

void WeightStandardization::forward_preprocess(const LinkForwardCall& call) {
  const double eps = options_.eps;
  call.link.set_param_transform(options_.weight_name, [eps](const Variable& W) {
    const Shape channels{W.shape()[1]};
    return functions::group_normalization(W, 1, Variable(Array::ones(channels, W.dtype(), W.device())),
                                          Variable(Array::zeros(channels, W.dtype(), W.device())), eps);
  });
}

void WeightStandardization::forward_postprocess(const LinkForwardCall& call) {
  detail::end_weight_transform(name(), call, options_.weight_name);
}

}  // namespace rensa::link_hooks
