// Linear: W (out, in) drawn by its initializer (LeCunNormal by default), b zeros; W may wait for
// the first input to learn in_size.
#include "rensa/links/linear.h"

#include <utility>

#include "rensa/core/error.h"
#include "rensa/functions/linalg.h"
#include "rensa/links/mixed_precision.h"

namespace rensa::links {

Linear::Linear(int64_t in_size, int64_t out_size, const LinearOptions& options) : Linear(out_size, options) {
  RENSA_CHECK(in_size >= 0, ValueError, "Linear: in_size must be non-negative, got ", in_size, " (out_size ",
              out_size, ")");
  initialize_W(in_size);
}

Linear::Linear(int64_t out_size, const LinearOptions& options)
    : WeightBiasLink("Linear", detail::weight_init(options), std::make_shared<initializers::LeCunNormal>()),
      out_size_(out_size) {
  RENSA_CHECK(out_size >= 0, ValueError, "Linear: out_size must be non-negative, got ", out_size);
  initialize_b({out_size_});  // now, before W: the generator draws b first, as it always did
}

void Linear::initialize_W(int64_t in_size) { WeightBiasLink::initialize_W({out_size_, in_size}); }

void Linear::ensure_initialized(const Variable& x) {
  if (W_.array().is_null()) {
    RENSA_CHECK(!x.is_null() && x.ndim() >= 1, ShapeError, "Linear: cannot infer in_size from x ",
                x.is_null() ? Shape() : x.shape(), " (out_size ", out_size_, ")");
    int64_t in = 1;
    for (std::size_t i = 1; i < x.shape().size(); ++i) in *= x.shape()[i];
    initialize_W(in);
  }
}

Variable Linear::forward(const Variable& x) {
  ensure_initialized(x);
  // Under a mixed policy W and b stay float32: linear's mixed form rounds W for the product and
  // accumulates their gradients in float32 (no 16-bit gradient to cast back).
  return functions::linear(mixed_cast(x), param_in_forward(W_), b_);
}

}  // namespace rensa::links
