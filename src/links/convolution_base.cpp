// ConvolutionLinkBase: the (de)convolution links' shapes, lazy in_channels and checks.
#include "rensa/links/convolution_base.h"

#include <utility>

#include "rensa/core/config.h"
#include "rensa/core/error.h"
#include "rensa/functions/convolution_nd.h"

namespace rensa::links::detail {

ConvolutionLinkBase::ConvolutionLinkBase(const char* name, bool transposed, int64_t in_channels, int64_t out_channels,
                                         std::vector<int64_t> ksize, int64_t groups, WeightInit init)
    : WeightBiasLink(name, std::move(init), std::make_shared<initializers::LeCunNormal>()),
      groups_(groups),
      transposed_(transposed),
      out_channels_(out_channels),
      ksize_(std::move(ksize)) {
  RENSA_CHECK(in_channels >= 0 && out_channels >= 0, ValueError, name_, ": channels must be non-negative, got in ",
              in_channels, " out ", out_channels);
  bool ksize_ok = !ksize_.empty();
  for (int64_t k : ksize_) ksize_ok = ksize_ok && k >= 1;
  RENSA_CHECK(ksize_ok, ValueError, name_, ": ksize must be at least 1, got ", functions::IntN(ksize_));
  RENSA_CHECK(groups_ >= 1, ValueError, name_, ": groups must be at least 1, got ", groups_);
  RENSA_CHECK(in_channels % groups_ == 0 && out_channels % groups_ == 0, ValueError, name_, ": groups ", groups_,
              " must divide in_channels ", in_channels, " and out_channels ", out_channels);
  initialize_b({out_channels_});
  if (in_channels > 0) initialize_W_for(in_channels);
}

void ConvolutionLinkBase::initialize_W_for(int64_t in_channels) {
  RENSA_CHECK(in_channels % groups_ == 0, ValueError, name_, ": groups ", groups_, " must divide in_channels ",
              in_channels);
  std::vector<int64_t> shape = transposed_ ? std::vector<int64_t>{in_channels, out_channels_ / groups_}
                                           : std::vector<int64_t>{out_channels_, in_channels / groups_};
  shape.insert(shape.end(), ksize_.begin(), ksize_.end());
  initialize_W(Shape(shape));
}

void ConvolutionLinkBase::prepare(const Variable& x) {
  const auto ndim = static_cast<int64_t>(ksize_.size()) + 2;
  if (W_pending()) {
    check_lazy_input(x, ndim, "in_channels");
    initialize_W_for(x.shape()[1]);
  }
  check_input(x, ndim, transposed_ ? W_.shape()[0] : W_.shape()[1] * groups_);
}

}  // namespace rensa::links::detail
