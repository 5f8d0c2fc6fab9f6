#pragma once
/// \file
/// SimplifiedDropconnect: a fully connected layer with DropConnect on its weights (Chainer's
/// L.SimplifiedDropconnect).

#include <cstdint>

#include "rensa/links/linear.h"

namespace rensa::links {

/// Parameters W (out_size, in_size) and b (out_size,) as Linear (the same options; in_size 0:
/// inferred from the first input). forward(x) is functions::simplified_dropconnect(x, W, b, ratio)
/// in training mode (ratio 0 in test mode); forward(x, mask, use_batchwise_mask) passes a mask.
/// ValueError unless 0 <= ratio < 1.
class SimplifiedDropconnect : public Linear {
 public:
  /// ValueError unless 0 <= ratio < 1; the rest as Linear.
  SimplifiedDropconnect(int64_t in_size, int64_t out_size, double ratio = 0.5, const LinearOptions& options = {});
  Variable forward(const Variable& x) override;
  /// As forward(x), with `mask` (bool or W's dtype; (N, out, in) when use_batchwise_mask, else (out, in)) instead of a draw.
  Variable forward(const Variable& x, const Array& mask, bool use_batchwise_mask = true);
  using Link::forward;
  /// The ratio of weights dropped in training mode.
  double ratio() const { return ratio_; }

 private:
  double ratio_;
};

}  // namespace rensa::links
