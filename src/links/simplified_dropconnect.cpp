// SimplifiedDropconnect: Linear's parameters, DropConnect's forward.
#include "rensa/links/simplified_dropconnect.h"

#include "rensa/core/error.h"
#include "rensa/functions/noise.h"

namespace rensa::links {

namespace {
double checked_ratio(double ratio) {
  RENSA_CHECK(ratio >= 0.0 && ratio < 1.0, ValueError, "SimplifiedDropconnect: ratio must be in [0, 1), got ", ratio);
  return ratio;
}
}  // namespace

SimplifiedDropconnect::SimplifiedDropconnect(int64_t in_size, int64_t out_size, double ratio,
                                             const LinearOptions& options)
    : Linear(out_size, options), ratio_(checked_ratio(ratio)) {
  RENSA_CHECK(in_size >= 0, ValueError, "SimplifiedDropconnect: in_size must be non-negative, got ", in_size);
  if (in_size > 0) initialize_W(in_size);
}

Variable SimplifiedDropconnect::forward(const Variable& x) { return forward(x, Array()); }

Variable SimplifiedDropconnect::forward(const Variable& x, const Array& mask, bool use_batchwise_mask) {
  ensure_initialized(x);
  return functions::simplified_dropconnect(x, W(), b(), ratio_, mask, use_batchwise_mask);
}

}  // namespace rensa::links
