#pragma once
/// \file
/// VGG16Layers and VGG19Layers: the VGG networks of Simonyan and Zisserman 2014 (Chainer's
/// L.VGG16Layers, L.VGG19Layers), with Chainer's layer names so its .npz files load.

#include <string>

#include "rensa/links/vision_layers.h"

namespace rensa::links {

/// VGG with 16 or 19 weight layers: Convolution2D children conv1_1, conv1_2, conv2_1, conv2_2,
/// conv3_1..conv3_3, conv4_1..conv4_3, conv5_1..conv5_3 (3x3, pad 1; 3 -> 64 -> 128 -> 256 -> 512
/// channels), Linear fc6 (25088 -> 4096), fc7 (4096 -> 4096), fc8 (4096 -> 1000), and for 19 layers
/// conv3_4, conv4_4, conv5_4 registered last, as Chainer. Layers (available_layers()): the
/// convolutions (each followed by relu), pool1..pool5 (max_pooling_2d 2x2), fc6 and fc7 (relu,
/// dropout 0.5), fc8 and prob (softmax). x is (N, 3, H, W), BGR with the mean subtracted as
/// Chainer's `prepare` makes it (not provided here); fc6 needs pool5 to be (N, 512, 7, 7), i.e.
/// 224 x 224 inputs, while the layers up to pool5 take any size of at least 32 x 32.
/// Initial values: W ~ Normal(0.01) and b = 0, or zeros with a pretrained_model (loaded then).
class VGGLayers : public VisionLayers {
 protected:
  /// ValueError unless n_layers is 16 or 19.
  VGGLayers(const std::string& pretrained_model, int n_layers);
};

/// VGGLayers with 16 layers; pretrained_model: the path of Chainer's (or rensa's) .npz, or empty.
class VGG16Layers : public VGGLayers {
 public:
  /// `pretrained_model`: an .npz of Chainer's (or rensa's) VGG, loaded at construction, or "" for random weights.
  explicit VGG16Layers(const std::string& pretrained_model = "") : VGGLayers(pretrained_model, 16) {}
};

/// VGGLayers with 19 layers; pretrained_model: the path of Chainer's (or rensa's) .npz, or empty.
class VGG19Layers : public VGGLayers {
 public:
  /// `pretrained_model`: an .npz of Chainer's (or rensa's) VGG, loaded at construction, or "" for random weights.
  explicit VGG19Layers(const std::string& pretrained_model = "") : VGGLayers(pretrained_model, 19) {}
};

}  // namespace rensa::links
