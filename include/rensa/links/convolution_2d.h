#pragma once
/// \file
/// Convolution2D and Deconvolution2D: 2-d (transposed) convolution layers over NCHW inputs
/// (Chainer's L.Convolution2D and L.Deconvolution2D), with lazy in_channels.

#include <cstdint>
#include <memory>
#include <optional>

#include "rensa/core/random.h"
#include "rensa/functions/convolution.h"
#include "rensa/links/initializers.h"
#include "rensa/links/link.h"

namespace rensa::links {

/// Options of Convolution2D and Deconvolution2D.
struct Convolution2DOptions {
  functions::Int2 stride = 1;
  functions::Int2 pad = 0;
  functions::Int2 dilate = 1;
  int64_t groups = 1;
  /// No bias parameter.
  bool nobias = false;
  /// Initializer of W; null means LeCunNormal().
  std::shared_ptr<const initializers::Initializer> initialW = nullptr;
  /// Initializer of b; null means zeros.
  std::shared_ptr<const initializers::Initializer> initial_bias = nullptr;
  /// Seed of the link's own generator (as LinearOptions::seed); unset: the thread's default one.
  std::optional<uint64_t> seed = std::nullopt;
  /// Deconvolution2D only: the output (height, width) (see functions::Deconv2dOptions::outsize).
  std::optional<functions::Int2> outsize = std::nullopt;
};

namespace detail {
/// What Convolution2D and Deconvolution2D share: the options, the link's generator, W (created at
/// construction, or at the first forward when in_channels is 0) and b.
class ConvolutionLinkBase : public Link {
 public:
  const Variable& W() const { return W_; }
  /// The bias, or a null Variable with nobias.
  const Variable& b() const { return b_; }
  int64_t out_channels() const { return out_channels_; }

 protected:
  /// `name` names the link in errors; `transposed`: W is (in, out / groups, kh, kw) instead of
  /// (out, in / groups, kh, kw).
  ConvolutionLinkBase(const char* name, bool transposed, int64_t in_channels, int64_t out_channels,
                      functions::Int2 ksize, Convolution2DOptions options);
  /// Creates W from x's channels if it does not exist yet.
  void ensure_W(const Variable& x);

  Convolution2DOptions options_;
  Variable W_, b_;

 private:
  void initialize_W(int64_t in_channels);

  const char* name_;
  bool transposed_;
  int64_t out_channels_;
  functions::Int2 ksize_;
  Dtype dtype_;
  std::optional<Generator> gen_;
};
}  // namespace detail

/// Convolution layer: W (out_channels, in_channels / groups, kh, kw) and b (out_channels,), created
/// with the Config dtype in force at construction. forward(x) is functions::convolution_2d.
class Convolution2D : public detail::ConvolutionLinkBase {
 public:
  /// in_channels 0: inferred from x.shape()[1] at the first forward (W uninitialized until then).
  /// ValueError for negative channels, a kernel size below 1, or groups that do not divide the
  /// channels.
  Convolution2D(int64_t in_channels, int64_t out_channels, functions::Int2 ksize, Convolution2DOptions options = {});

  Variable forward(const Variable& x) override;
  using Link::forward;
};

/// Transposed convolution layer: W (in_channels, out_channels / groups, kh, kw) and b
/// (out_channels,). forward(x) is functions::deconvolution_2d.
class Deconvolution2D : public detail::ConvolutionLinkBase {
 public:
  /// in_channels 0: inferred from x.shape()[1] at the first forward. Errors as Convolution2D.
  Deconvolution2D(int64_t in_channels, int64_t out_channels, functions::Int2 ksize, Convolution2DOptions options = {});

  Variable forward(const Variable& x) override;
  using Link::forward;
};

}  // namespace rensa::links
