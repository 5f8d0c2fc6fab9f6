#pragma once
/// \file
/// ConvolutionND and DeconvolutionND: (transposed) convolution layers over k spatial axes,
/// (N, C, D1..Dk) inputs (Chainer's L.ConvolutionND, L.DeconvolutionND), and their k = 1 and k = 3
/// forms Convolution1D, Convolution3D, Deconvolution1D and Deconvolution3D. Lazy in_channels: 0
/// (Chainer's None, or its form without ksize) infers it from x.shape()[1] at the first forward.

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "rensa/functions/convolution_nd.h"
#include "rensa/links/convolution_base.h"
#include "rensa/links/initializers.h"

namespace rensa::links {

/// Options of ConvolutionND, Convolution1D and Convolution3D, in Chainer's argument order.
/// stride, pad and dilate take one value or one per spatial axis.
struct ConvolutionNDOptions {
  /// Stride of the window along each spatial axis.
  functions::IntN stride = 1;
  /// Zero padding added at both ends of each spatial axis.
  functions::IntN pad = 0;
  /// No bias parameter.
  bool nobias = false;
  /// Initializer of W; null means LeCunNormal().
  std::shared_ptr<const initializers::Initializer> initialW = nullptr;
  /// Initializer of b; null means zeros.
  std::shared_ptr<const initializers::Initializer> initial_bias = nullptr;
  /// See functions::ConvNdOptions::cover_all.
  bool cover_all = false;
  /// Dilation of the kernel (distance between its taps) along each spatial axis.
  functions::IntN dilate = 1;
  /// Number of channel groups; in_channels and out_channels must be multiples of it.
  int64_t groups = 1;
  /// Seed of the link's own generator (as LinearOptions::seed); unset: the thread's default one.
  std::optional<uint64_t> seed = std::nullopt;
};

/// Options of DeconvolutionND, Deconvolution1D and Deconvolution3D, in Chainer's argument order.
struct DeconvolutionNDOptions {
  /// Stride along each spatial axis (the upsampling factor).
  functions::IntN stride = 1;
  /// Padding of the matching convolution along each spatial axis (removed from the output).
  functions::IntN pad = 0;
  /// No bias parameter.
  bool nobias = false;
  /// Output extents, one per spatial axis (see functions::DeconvNdOptions::outsize).
  std::optional<std::vector<int64_t>> outsize = std::nullopt;
  /// Initializer of W; null means LeCunNormal().
  std::shared_ptr<const initializers::Initializer> initialW = nullptr;
  /// Initializer of b; null means zeros.
  std::shared_ptr<const initializers::Initializer> initial_bias = nullptr;
  /// Dilation of the kernel (distance between its taps) along each spatial axis.
  functions::IntN dilate = 1;
  /// Number of channel groups; in_channels and out_channels must be multiples of it.
  int64_t groups = 1;
  /// Seed of the link's own generator (as LinearOptions::seed); unset: the thread's default one.
  std::optional<uint64_t> seed = std::nullopt;
};

/// Convolution layer over `ndim` spatial axes: W (out_channels, in_channels / groups, K1..Kk) and
/// b (out_channels,), with the Config dtype in force at construction. forward(x) is
/// functions::convolution_nd; x must be (N, in_channels, D1..Dk) (ShapeError naming the link, x
/// and W otherwise).
class ConvolutionND : public detail::ConvolutionLinkBase {
 public:
  /// ksize: one value or `ndim` values. ValueError for ndim below 1, negative channels, a ksize of
  /// another length or below 1, or groups that do not divide the channels.
  ConvolutionND(int64_t ndim, int64_t in_channels, int64_t out_channels, const functions::IntN& ksize,
                ConvolutionNDOptions options = {});

  Variable forward(const Variable& x) override;
  using Link::forward;

 protected:
  /// As the public constructor; `name` names the link in errors.
  ConvolutionND(const char* name, int64_t ndim, int64_t in_channels, int64_t out_channels, const functions::IntN& ksize,
                ConvolutionNDOptions options);

 private:
  ConvolutionNDOptions options_;
};

/// ConvolutionND with one spatial axis: x (N, C, L).
class Convolution1D : public ConvolutionND {
 public:
  /// ConvolutionND(1, ...).
  Convolution1D(int64_t in_channels, int64_t out_channels, const functions::IntN& ksize,
                ConvolutionNDOptions options = {});
};

/// ConvolutionND with three spatial axes: x (N, C, D, H, W).
class Convolution3D : public ConvolutionND {
 public:
  /// ConvolutionND(3, ...).
  Convolution3D(int64_t in_channels, int64_t out_channels, const functions::IntN& ksize,
                ConvolutionNDOptions options = {});
};

/// Transposed convolution layer over `ndim` spatial axes: W (in_channels, out_channels / groups,
/// K1..Kk) and b (out_channels,). forward(x) is functions::deconvolution_nd; x must be (N,
/// in_channels, D1..Dk).
class DeconvolutionND : public detail::ConvolutionLinkBase {
 public:
  /// Errors as ConvolutionND.
  DeconvolutionND(int64_t ndim, int64_t in_channels, int64_t out_channels, const functions::IntN& ksize,
                  DeconvolutionNDOptions options = {});

  Variable forward(const Variable& x) override;
  using Link::forward;

 protected:
  /// As the public constructor; `name` names the link in errors.
  DeconvolutionND(const char* name, int64_t ndim, int64_t in_channels, int64_t out_channels,
                  const functions::IntN& ksize, DeconvolutionNDOptions options);

 private:
  DeconvolutionNDOptions options_;
};

/// DeconvolutionND with one spatial axis: x (N, C, L).
class Deconvolution1D : public DeconvolutionND {
 public:
  /// DeconvolutionND(1, ...).
  Deconvolution1D(int64_t in_channels, int64_t out_channels, const functions::IntN& ksize,
                  DeconvolutionNDOptions options = {});
};

/// DeconvolutionND with three spatial axes: x (N, C, D, H, W).
class Deconvolution3D : public DeconvolutionND {
 public:
  /// DeconvolutionND(3, ...).
  Deconvolution3D(int64_t in_channels, int64_t out_channels, const functions::IntN& ksize,
                  DeconvolutionNDOptions options = {});
};

}  // namespace rensa::links
