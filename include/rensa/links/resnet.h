#pragma once
/// \file
/// ResNet50Layers, ResNet101Layers and ResNet152Layers: the residual networks of He et al. 2015
/// (Chainer's L.ResNet50Layers, ...), and their blocks BuildingBlock, BottleneckA and BottleneckB,
/// with Chainer's names so its .npz files load.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rensa/links/convolution_2d.h"
#include "rensa/links/initializers.h"
#include "rensa/links/link.h"
#include "rensa/links/normalization.h"
#include "rensa/links/vision_layers.h"

namespace rensa::links {

/// The first bottleneck of a stage, changing the channels and the resolution: bias-free
/// convolutions and batch normalizations conv1 (1x1, in -> mid), bn1, conv2 (3x3 pad 1, mid ->
/// mid), bn2, conv3 (1x1, mid -> out), bn3, conv4 (1x1 with `stride`, in -> out: the shortcut),
/// bn4. forward(x) = relu(bn3(conv3(relu(bn2(conv2(relu(bn1(conv1(x)))))))) + bn4(conv4(x))).
/// The stride is on conv1 (MSRA's ResNet) or, with downsample_fb, on conv2 (Facebook's).
/// initialW null: LeCunNormal (Chainer's default).
class BottleneckA : public Chain {
 public:
  /// Bad sizes throw the children's errors (Convolution2D, BatchNormalization).
  BottleneckA(int64_t in_channels, int64_t mid_channels, int64_t out_channels, int64_t stride = 2,
              const std::shared_ptr<const initializers::Initializer>& initialW = nullptr, bool downsample_fb = false);
  Variable forward(const Variable& x) override;
  using Link::forward;

 private:
  std::shared_ptr<Convolution2D> conv1_, conv2_, conv3_, conv4_;
  std::shared_ptr<BatchNormalization> bn1_, bn2_, bn3_, bn4_;
};

/// A bottleneck keeping the channels: conv1 (1x1, in -> mid), bn1, conv2 (3x3 pad 1), bn2, conv3
/// (1x1, mid -> in), bn3; forward(x) = relu(bn3(conv3(relu(bn2(conv2(relu(bn1(conv1(x))))))))
/// + x).
class BottleneckB : public Chain {
 public:
  /// Bad sizes throw the children's errors (Convolution2D, BatchNormalization).
  BottleneckB(int64_t in_channels, int64_t mid_channels,
              const std::shared_ptr<const initializers::Initializer>& initialW = nullptr);
  Variable forward(const Variable& x) override;
  using Link::forward;

 private:
  std::shared_ptr<Convolution2D> conv1_, conv2_, conv3_;
  std::shared_ptr<BatchNormalization> bn1_, bn2_, bn3_;
};

/// A stage of n_layers bottlenecks: child "a" (BottleneckA) then "b1", ..., "b{n_layers - 1}"
/// (BottleneckB), applied in order. ValueError for n_layers < 1.
class BuildingBlock : public Chain {
 public:
  /// ValueError for n_layers < 1; bad sizes throw the children's errors.
  BuildingBlock(int64_t n_layers, int64_t in_channels, int64_t mid_channels, int64_t out_channels, int64_t stride,
                const std::shared_ptr<const initializers::Initializer>& initialW = nullptr, bool downsample_fb = false);
  Variable forward(const Variable& x) override;
  using Link::forward;

 private:
  std::vector<std::shared_ptr<Link>> blocks_;
};

/// ResNet with 50, 101 or 152 layers: conv1 (7x7, stride 2, pad 3, 3 -> 64, with bias), bn1, res2
/// to res5 (BuildingBlocks of [3, 4, 6, 3], [3, 4, 23, 3] or [3, 8, 36, 3] bottlenecks; 64 -> 256 ->
/// 512 -> 1024 -> 2048 channels, strides 1, 2, 2, 2) and fc6 (Linear 2048 -> 1000). Layers:
/// conv1 (conv1, bn1, relu), pool1 (max_pooling_2d 3x3 stride 2), res2 .. res5, pool5 (global
/// average pooling to (N, 2048)), fc6 and prob (softmax). Any input of at least 32 x 32 runs every
/// layer (224 x 224 as trained). Initial convolution weights: HeNormal, or zeros with a
/// pretrained_model; fc6 and the blocks' own defaults as Chainer. A pretrained_model ending in
/// ".caffemodel" (Chainer converts it) is a ValueError: convert it with Chainer first.
class ResNetLayers : public VisionLayers {
 protected:
  /// ValueError unless n_layers is 50, 101 or 152.
  ResNetLayers(const std::string& pretrained_model, int n_layers, bool downsample_fb);
};

/// ResNet with 50 layers ([3, 4, 6, 3] bottlenecks); Chainer's ResNet50Layers.
class ResNet50Layers : public ResNetLayers {
 public:
  /// `pretrained_model`: an .npz of Chainer's ResNet50Layers, or "" for random weights.
  explicit ResNet50Layers(const std::string& pretrained_model = "", bool downsample_fb = false)
      : ResNetLayers(pretrained_model, 50, downsample_fb) {}
};

/// ResNet with 101 layers ([3, 4, 23, 3] bottlenecks); Chainer's ResNet101Layers.
class ResNet101Layers : public ResNetLayers {
 public:
  /// `pretrained_model`: an .npz of Chainer's ResNet101Layers, or "" for random weights.
  explicit ResNet101Layers(const std::string& pretrained_model = "", bool downsample_fb = false)
      : ResNetLayers(pretrained_model, 101, downsample_fb) {}
};

/// ResNet with 152 layers ([3, 8, 36, 3] bottlenecks); Chainer's ResNet152Layers.
class ResNet152Layers : public ResNetLayers {
 public:
  /// `pretrained_model`: an .npz of Chainer's ResNet152Layers, or "" for random weights.
  explicit ResNet152Layers(const std::string& pretrained_model = "", bool downsample_fb = false)
      : ResNetLayers(pretrained_model, 152, downsample_fb) {}
};

}  // namespace rensa::links
