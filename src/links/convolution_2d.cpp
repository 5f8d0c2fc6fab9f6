// Convolution2D / Deconvolution2D: W drawn by its initializer (LeCunNormal by default), b zeros;
// W may wait for the first input to learn in_channels.
#include "rensa/links/convolution_2d.h"

#include <utility>

#include "rensa/core/config.h"
#include "rensa/core/error.h"

namespace rensa::links {
namespace {

// Checks shared by both links; `op` names the link.
void check_args(const char* op, int64_t in_channels, int64_t out_channels, functions::Int2 ksize,
                const Convolution2DOptions& o, Dtype dtype) {
  RENSA_CHECK(in_channels >= 0 && out_channels >= 0, ValueError, op, ": channels must be non-negative, got in ",
              in_channels, " out ", out_channels);
  RENSA_CHECK(ksize.y >= 1 && ksize.x >= 1, ValueError, op, ": ksize must be at least 1, got (", ksize.y, ", ", ksize.x,
              ")");
  RENSA_CHECK(o.groups >= 1, ValueError, op, ": groups must be at least 1, got ", o.groups);
  RENSA_CHECK(in_channels % o.groups == 0 && out_channels % o.groups == 0, ValueError, op, ": groups ", o.groups,
              " must divide in_channels ", in_channels, " and out_channels ", out_channels);
  RENSA_CHECK(is_floating(dtype), DtypeError, op, ": parameters need a floating dtype, the config's is ", dtype);
}

Array make_bias(int64_t n, Dtype dtype, Device device, const Convolution2DOptions& o, Generator& gen) {
  Array b = Array::empty({n}, dtype, device);
  if (o.initial_bias) {
    (*o.initial_bias)(b, gen);
  } else {
    b.fill(0.0);
  }
  return b;
}

int64_t lazy_channels(const char* op, const Variable& x) {
  RENSA_CHECK(!x.is_null() && x.ndim() == 4, ShapeError, op, ": cannot infer in_channels from x ",
              x.is_null() ? Shape() : x.shape(), " (expected (N, C, H, W))");
  return x.shape()[1];
}

}  // namespace

namespace detail {

ConvolutionLinkBase::ConvolutionLinkBase(const char* name, bool transposed, int64_t in_channels,
                                         int64_t out_channels, functions::Int2 ksize, Convolution2DOptions options)
    : options_(std::move(options)),
      name_(name),
      transposed_(transposed),
      out_channels_(out_channels),
      ksize_(ksize),
      dtype_(config().dtype) {
  check_args(name_, in_channels, out_channels, ksize, options_, dtype_);
  if (options_.seed) gen_.emplace(*options_.seed);
  if (!options_.initialW) options_.initialW = std::make_shared<initializers::LeCunNormal>();
  W_ = add_param("W", dtype_);
  if (!options_.nobias) {
    b_ = add_param("b", make_bias(out_channels_, dtype_, device_, options_, gen_ ? *gen_ : default_generator()));
  }
  if (in_channels > 0) initialize_W(in_channels);
}

void ConvolutionLinkBase::initialize_W(int64_t in_channels) {
  const int64_t groups = options_.groups;
  RENSA_CHECK(in_channels % groups == 0, ValueError, name_, ": groups ", groups, " must divide in_channels ",
              in_channels);
  Array w = transposed_ ? Array::empty({in_channels, out_channels_ / groups, ksize_.y, ksize_.x}, dtype_, device_)
                        : Array::empty({out_channels_, in_channels / groups, ksize_.y, ksize_.x}, dtype_, device_);
  (*options_.initialW)(w, gen_ ? *gen_ : default_generator());
  W_.set_array(std::move(w));
}

void ConvolutionLinkBase::ensure_W(const Variable& x) {
  if (W_.array().is_null()) initialize_W(lazy_channels(name_, x));
}

}  // namespace detail

Convolution2D::Convolution2D(int64_t in_channels, int64_t out_channels, functions::Int2 ksize,
                             Convolution2DOptions options)
    : ConvolutionLinkBase("Convolution2D", false, in_channels, out_channels, ksize, std::move(options)) {}

Variable Convolution2D::forward(const Variable& x) {
  ensure_W(x);
  functions::Conv2dOptions o;
  o.stride = options_.stride;
  o.pad = options_.pad;
  o.dilate = options_.dilate;
  o.groups = options_.groups;
  return functions::convolution_2d(x, W_, b_, o);
}

Deconvolution2D::Deconvolution2D(int64_t in_channels, int64_t out_channels, functions::Int2 ksize,
                                 Convolution2DOptions options)
    : ConvolutionLinkBase("Deconvolution2D", true, in_channels, out_channels, ksize, std::move(options)) {}

Variable Deconvolution2D::forward(const Variable& x) {
  ensure_W(x);
  functions::Deconv2dOptions o;
  o.stride = options_.stride;
  o.pad = options_.pad;
  o.dilate = options_.dilate;
  o.groups = options_.groups;
  o.outsize = options_.outsize;
  return functions::deconvolution_2d(x, W_, b_, o);
}

}  // namespace rensa::links
