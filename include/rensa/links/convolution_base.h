#pragma once
/// \file
/// ConvolutionLinkBase: what the (de)convolution links share on top of WeightBiasLink.

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "rensa/links/weight_bias_link.h"

namespace rensa::links::detail {

/// A (de)convolution over k = ksize.size() spatial axes: W (out, in / groups, K1..Kk), or with
/// `transposed` (in, out / groups, K1..Kk), and b (out,) drawn at construction; W at
/// construction, or at the first forward when in_channels is 0. Default initialW: LeCunNormal.
class ConvolutionLinkBase : public WeightBiasLink {
 public:
  int64_t out_channels() const { return out_channels_; }

 protected:
  /// ValueError for negative channels, a kernel size below 1, or groups below 1 or not dividing
  /// the channels.
  ConvolutionLinkBase(const char* name, bool transposed, int64_t in_channels, int64_t out_channels,
                      std::vector<int64_t> ksize, int64_t groups, WeightInit init);
  /// Creates W from x's channels if it does not exist yet, then checks x against W (ShapeError
  /// naming the link and both shapes).
  void prepare(const Variable& x);

  int64_t groups_;

 private:
  void initialize_W_for(int64_t in_channels);

  bool transposed_;
  int64_t out_channels_;
  std::vector<int64_t> ksize_;
};

}  // namespace rensa::links::detail
