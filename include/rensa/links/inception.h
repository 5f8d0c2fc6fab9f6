#pragma once
/// \file
/// Inception and InceptionBN: the Inception modules of GoogLeNet and of Inception-v2 (Chainer's
/// L.Inception and L.InceptionBN), Chains of Convolution2D (and BatchNormalization) children with
/// Chainer's names, so Chainer's .npz files load.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "rensa/links/convolution_2d.h"
#include "rensa/links/initializers.h"
#include "rensa/links/link.h"
#include "rensa/links/normalization.h"

namespace rensa::links {

/// Options of Inception, in Chainer's argument order.
struct InceptionOptions {
  /// Initializer of every convolution's W; null means LeCunNormal().
  std::shared_ptr<const initializers::Initializer> conv_init = nullptr;
  /// Initializer of every convolution's b; null means zeros.
  std::shared_ptr<const initializers::Initializer> bias_init = nullptr;
  /// Seeds child i (in registration order) with seed + i. Unset: the thread's default generator.
  std::optional<uint64_t> seed = std::nullopt;
};

/// GoogLeNet's Inception module: children conv1 (1x1, in -> out1), proj3 (1x1, in -> proj3), conv3
/// (3x3 pad 1, proj3 -> out3), proj5 (1x1, in -> proj5), conv5 (5x5 pad 2, proj5 -> out5) and projp
/// (1x1, in -> proj_pool), registered in that order. forward(x (N, in, H, W)) is
/// relu(concat(conv1(x), conv3(relu(proj3(x))), conv5(relu(proj5(x))),
/// projp(max_pooling_2d(x, 3, stride 1, pad 1)))) along the channels: (N, out1 + out3 + out5 +
/// proj_pool, H, W). in_channels 0 (Chainer's None): inferred at the first forward.
class Inception : public Chain {
 public:
  /// ValueError for a size below 1 (in_channels: below 0); errors as Convolution2D.
  Inception(int64_t in_channels, int64_t out1, int64_t proj3, int64_t out3, int64_t proj5, int64_t out5,
            int64_t proj_pool, const InceptionOptions& options = {});

  /// ShapeError starting with "Inception: " and naming x and W for an x that is not (N,
  /// in_channels, H, W).
  Variable forward(const Variable& x) override;
  using Link::forward;

  /// 1x1 convolution, in -> out1.
  Convolution2D& conv1() const { return *conv1_; }
  /// 1x1 projection before conv3, in -> proj3.
  Convolution2D& proj3() const { return *proj3_; }
  /// 3x3 convolution (pad 1), proj3 -> out3.
  Convolution2D& conv3() const { return *conv3_; }
  /// 1x1 projection before conv5, in -> proj5.
  Convolution2D& proj5() const { return *proj5_; }
  /// 5x5 convolution (pad 2), proj5 -> out5.
  Convolution2D& conv5() const { return *conv5_; }
  /// 1x1 projection after the max pooling, in -> proj_pool.
  Convolution2D& projp() const { return *projp_; }

 private:
  Variable forward_impl(const Variable& x);
  std::shared_ptr<Convolution2D> conv1_, proj3_, conv3_, proj5_, conv5_, projp_;
};

/// Options of InceptionBN, in Chainer's argument order after pooltype.
struct InceptionBNOptions {
  /// Output size of the pooling path's 1x1 projection; unset: no projection (the pooled input is
  /// concatenated as it is). Required when out1 > 0, as Chainer.
  std::optional<int64_t> proj_pool = std::nullopt;
  /// Stride of the last convolution of each path and of the pooling; 1 when out1 > 0.
  int64_t stride = 1;
  /// Initializer of every convolution's W; null means LeCunNormal().
  std::shared_ptr<const initializers::Initializer> conv_init = nullptr;
  /// Seeds child i (in registration order) with seed + i. Unset: the thread's default generator.
  std::optional<uint64_t> seed = std::nullopt;
};

/// Inception-v2's module with batch normalization: bias-free convolutions proj3 (1x1), conv3 (3x3
/// pad 1, stride), proj33 (1x1), conv33a (3x3 pad 1), conv33b (3x3 pad 1, stride), then
/// BatchNormalization proj3n, conv3n, proj33n, conv33an, conv33bn, then, when out1 > 0, conv1
/// (1x1) and conv1n, and with proj_pool, poolp (1x1) and poolpn: Chainer's names and order.
/// forward(x) concatenates along the channels relu(conv1n(conv1(x))) (when out1 > 0), the 3x3
/// path, the double 3x3 path (each convolution followed by its normalization and relu), and the
/// pooling path: max_pooling_2d(x, 3, stride, pad 1, cover_all false) for pooltype "max" or
/// average_pooling_2d(x, 3, stride, pad 1) for "avg", then relu(poolpn(poolp(.))) with proj_pool.
/// The normalizations take the Config dtype (Chainer's dtype argument) and follow Config train.
class InceptionBN : public Chain {
 public:
  /// ValueError for a pooltype other than "max" or "avg" (Chainer: NotImplementedError), for
  /// out1 > 0 with stride != 1 or without proj_pool (Chainer's assertions), or for bad sizes.
  InceptionBN(int64_t in_channels, int64_t out1, int64_t proj3, int64_t out3, int64_t proj33, int64_t out33,
              const std::string& pooltype, InceptionBNOptions options = {});

  /// Errors of the children start with "InceptionBN: ".
  Variable forward(const Variable& x) override;
  using Link::forward;

 private:
  Variable forward_impl(const Variable& x);
  int64_t out1_;
  int64_t stride_;
  bool max_pool_;
  std::shared_ptr<Convolution2D> proj3_, conv3_, proj33_, conv33a_, conv33b_, conv1_, poolp_;
  std::shared_ptr<BatchNormalization> proj3n_, conv3n_, proj33n_, conv33an_, conv33bn_, conv1n_, poolpn_;
};

}  // namespace rensa::links
