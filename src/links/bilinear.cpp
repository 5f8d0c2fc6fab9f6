// Bilinear: W, V1, V2 and b drawn at construction, in Chainer's order.
#include "rensa/links/bilinear.h"

#include <string>
#include <utility>

#include "rensa/core/config.h"
#include "rensa/core/error.h"
#include "rensa/functions/bilinear.h"

namespace rensa::links {

Bilinear::Bilinear(int64_t left_size, int64_t right_size, int64_t out_size, BilinearOptions options) {
  RENSA_CHECK(left_size >= 1 && right_size >= 1 && out_size >= 1, ValueError,
              "Bilinear: sizes must be at least 1, got left ", left_size, " right ", right_size, " out ", out_size);
  const Dtype dtype = get_dtype();
  RENSA_CHECK(is_floating(dtype), DtypeError, "Bilinear: parameters need a floating dtype, the config's is ", dtype);
  std::optional<Generator> own;
  if (options.seed) own.emplace(*options.seed);
  Generator& gen = own ? *own : default_generator();
  const auto lecun = std::make_shared<initializers::LeCunNormal>();
  const auto draw = [&](const Shape& shape, const std::shared_ptr<const initializers::Initializer>& init) {
    Array a = Array::empty(shape, dtype, device_);
    if (init) {
      (*init)(a, gen);
    } else {
      a.fill(0.0);
    }
    return a;
  };
  W_ = add_param("W", draw({left_size, right_size, out_size}, options.initialW ? options.initialW : lecun));
  if (options.nobias) return;
  auto inits = options.initial_bias.value_or(
      std::array<std::shared_ptr<const initializers::Initializer>, 3>{lecun, lecun, nullptr});
  if (options.initial_bias) {
    for (auto& init : inits) {
      if (!init) init = lecun;  // Chainer's _get_initializer(None) inside the tuple
    }
  }
  V1_ = add_param("V1", draw({left_size, out_size}, inits[0]));
  V2_ = add_param("V2", draw({right_size, out_size}, inits[1]));
  b_ = add_param("b", draw({out_size}, inits[2]));
}

Variable Bilinear::forward(const Variable& e1, const Variable& e2) {
  try {
    return functions::bilinear(e1, e2, W_, V1_, V2_, b_);
  } catch (...) {
    rethrow_with_context("Bilinear: ");
  }
}

Variable Bilinear::forward(const std::vector<Variable>& inputs) {
  RENSA_CHECK(inputs.size() == 2, ValueError, "Bilinear: forward takes e1 and e2, got ", inputs.size(), " inputs");
  return forward(inputs[0], inputs[1]);
}

}  // namespace rensa::links
