#pragma once
/// \file
/// DeformableConvolution2D (Chainer's L.DeformableConvolution2D): a convolution whose taps are
/// moved by offsets that another convolution computes from the same input, and
/// DeformableConvolution2DSampler, the convolution that reads at given offsets.

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "rensa/functions/convolution.h"
#include "rensa/links/convolution_2d.h"
#include "rensa/links/convolution_base.h"
#include "rensa/links/initializers.h"
#include "rensa/links/link.h"

namespace rensa::links {

/// Options of DeformableConvolution2DSampler, in Chainer's argument order.
struct DeformableConvolution2DSamplerOptions {
  /// Stride of the window along (y, x).
  functions::Int2 stride = 1;
  /// Zero padding along (y, x), on both sides.
  functions::Int2 pad = 0;
  /// No bias parameter.
  bool nobias = false;
  /// Initializer of W; null means zeros (Chainer's default here).
  std::shared_ptr<const initializers::Initializer> initialW = nullptr;
  /// Initializer of b; null means zeros.
  std::shared_ptr<const initializers::Initializer> initial_bias = nullptr;
  /// Seed of the link's own generator (as LinearOptions::seed); unset: the thread's default one.
  std::optional<uint64_t> seed = std::nullopt;
};

/// W (out_channels, in_channels, kh, kw) and b (out_channels,), both drawn once in_channels is
/// known (W first, as Chainer). forward(x, offset) is functions::deformable_convolution_2d_sampler
/// with x (N, in_channels, H, W) (ShapeError naming the link, x and W otherwise) and offset (N,
/// 2 kh kw, OH, OW).
class DeformableConvolution2DSampler : public detail::WeightBiasLink {
 public:
  /// in_channels 0: W and b wait for the first forward. ValueError for negative channels or a
  /// kernel size below 1.
  DeformableConvolution2DSampler(int64_t in_channels, int64_t out_channels, functions::Int2 ksize,
                                 DeformableConvolution2DSamplerOptions options = {});

  /// The deformable convolution of x (N, C, H, W) sampled at the kernel taps moved by `offset` (N, 2 kh kw, OH, OW).
  Variable forward(const Variable& x, const Variable& offset);
  /// forward(inputs[0], inputs[1]); ValueError unless there are two inputs.
  Variable forward(const std::vector<Variable>& inputs) override;
  /// forward(x, offset) between the link hooks.
  Variable operator()(const Variable& x, const Variable& offset) {
    const Variable args[] = {x, offset};
    return call_forward(args, [&] { return forward(x, offset); });
  }

 private:
  void initialize_params(int64_t in_channels);

  int64_t out_channels_;
  functions::Int2 ksize_;
  DeformableConvolution2DSamplerOptions options_;
};

/// Options of DeformableConvolution2D, in Chainer's argument order: those of the offset
/// convolution, then those of the deformable one.
struct DeformableConvolution2DOptions {
  /// Stride of both convolutions along (y, x).
  functions::Int2 stride = 1;
  /// Zero padding of both convolutions along (y, x).
  functions::Int2 pad = 0;
  /// No bias for the offset convolution.
  bool offset_nobias = false;
  /// Null: LeCunNormal (Convolution2D's default).
  std::shared_ptr<const initializers::Initializer> offset_initialW = nullptr;
  /// Initializer of the offset convolution's bias; null means zeros.
  std::shared_ptr<const initializers::Initializer> offset_initial_bias = nullptr;
  /// No bias for the deformable convolution.
  bool deform_nobias = false;
  /// Null: zeros (DeformableConvolution2DSampler's default).
  std::shared_ptr<const initializers::Initializer> deform_initialW = nullptr;
  /// Initializer of the deformable convolution's bias; null means zeros.
  std::shared_ptr<const initializers::Initializer> deform_initial_bias = nullptr;
  /// Seeds the children: offset_conv with seed, deform_conv with seed + 1. Unset: the thread's
  /// default generator.
  std::optional<uint64_t> seed = std::nullopt;
};

/// Children "offset_conv", Convolution2D(in_channels, 2 kh kw, ksize) with stride and pad, and
/// "deform_conv", DeformableConvolution2DSampler(in_channels, out_channels, ksize) with the same;
/// forward(x) = deform_conv(x, offset_conv(x)) on x (N, in_channels, H, W), giving (N,
/// out_channels, OH, OW). in_channels 0: inferred at the first forward.
class DeformableConvolution2D : public Chain {
 public:
  /// Errors as Convolution2D.
  DeformableConvolution2D(int64_t in_channels, int64_t out_channels, functions::Int2 ksize,
                          DeformableConvolution2DOptions options = {});

  Variable forward(const Variable& x) override;
  using Link::forward;

  /// The convolution that computes the offsets from x.
  Convolution2D& offset_conv() { return *offset_conv_; }
  /// The deformable convolution applied with those offsets.
  DeformableConvolution2DSampler& deform_conv() { return *deform_conv_; }

 private:
  std::shared_ptr<Convolution2D> offset_conv_;
  std::shared_ptr<DeformableConvolution2DSampler> deform_conv_;
};

}  // namespace rensa::links
