#pragma once
/// \file
/// MLPConvolution2D: the "mlpconv" layer of Network in Network (Chainer's L.MLPConvolution2D), a
/// convolution followed by 1x1 convolutions with an activation between them.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "rensa/functions/convolution.h"
#include "rensa/links/initializers.h"
#include "rensa/links/link.h"

namespace rensa::links {

/// Options of MLPConvolution2D, in Chainer's argument order.
struct MLPConvolution2DOptions {
  /// Stride of the first convolution along (y, x) (the 1x1 ones use 1).
  functions::Int2 stride = 1;
  /// Zero padding of the first convolution along (y, x).
  functions::Int2 pad = 0;
  /// Applied after every convolution but the last; null means relu.
  std::function<Variable(const Variable&)> activation = nullptr;
  /// Initializer of every convolution's W; null means LeCunNormal().
  std::shared_ptr<const initializers::Initializer> conv_init = nullptr;
  /// Initializer of every convolution's b; null means zeros.
  std::shared_ptr<const initializers::Initializer> bias_init = nullptr;
  /// Seeds child i with seed + i. Unset: the thread's default generator.
  std::optional<uint64_t> seed = std::nullopt;
};

/// A ChainList of Convolution2D children "0", "1", ...: "0" is (in_channels, out_channels[0],
/// ksize) with stride and pad, each next one a 1x1 (out_channels[i - 1], out_channels[i]).
/// forward(x) applies them in order with the activation between them (not after the last).
/// in_channels 0: inferred by "0" at the first forward.
class MLPConvolution2D : public ChainList {
 public:
  /// ValueError for an empty out_channels; otherwise errors as Convolution2D.
  MLPConvolution2D(int64_t in_channels, const std::vector<int64_t>& out_channels, functions::Int2 ksize,
                   MLPConvolution2DOptions options = {});

  Variable forward(const Variable& x) override;
  using Link::forward;

 private:
  std::function<Variable(const Variable&)> activation_;
};

}  // namespace rensa::links
