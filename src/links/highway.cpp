// Highway: a transform gate mixing an activated linear path with the input.
#include "rensa/links/highway.h"

#include "rensa/core/error.h"
#include "rensa/functions/activation.h"
#include "rensa/functions/basic_math.h"

namespace rensa::links {
namespace F = rensa::functions;

Highway::Highway(int64_t in_out_size, HighwayOptions options) : activate_(std::move(options.activate)) {
  RENSA_CHECK(in_out_size > 0, ValueError, "Highway: in_out_size must be positive, got ", in_out_size);
  if (!activate_) activate_ = [](const Variable& v) { return F::relu(v); };
  LinearOptions plain{.nobias = options.nobias, .initialW = options.init_Wh, .initial_bias = options.init_bh};
  LinearOptions transform{.nobias = options.nobias,
                          .initialW = options.init_Wt,
                          .initial_bias = options.init_bt ? options.init_bt
                                                          : std::make_shared<initializers::Constant>(-1.0)};
  plain_ = std::make_shared<Linear>(in_out_size, in_out_size, plain);
  transform_ = std::make_shared<Linear>(in_out_size, in_out_size, transform);
  add_link("plain", plain_);
  add_link("transform", transform_);
}

Variable Highway::forward(const Variable& x) {
  const Variable t = F::sigmoid((*transform_)(x));
  return F::add(F::mul(activate_((*plain_)(x)), t), F::mul(x, F::rsub(t, 1.0)));
}

}  // namespace rensa::links
