#pragma once
/// \file
/// GoogLeNet: the Inception network of Szegedy et al. 2014 (Chainer's L.GoogLeNet), with Chainer's
/// layer names so its .npz files load.

#include <string>

#include "rensa/links/vision_layers.h"

namespace rensa::links {

/// Children conv1 (7x7 stride 2 pad 3, 3 -> 64), conv2_reduce (1x1, 64 -> 64), conv2 (3x3 pad 1,
/// 64 -> 192), Inception modules inc3a, inc3b, inc4a .. inc4e, inc5a, inc5b (Chainer's sizes),
/// loss3_fc (Linear 1024 -> 1000), and the auxiliary classifiers loss1_conv (1x1, 512 -> 128),
/// loss1_fc1 (2048 -> 1024), loss1_fc2 (1024 -> 1000), loss2_conv (1x1, 528 -> 128), loss2_fc1,
/// loss2_fc2, in Chainer's order. Layers: conv1 (relu), pool1 (max_pooling_2d 3x3 stride 2 and
/// local_response_normalization n 5, k 1, alpha 2e-5), conv2_reduce (relu), conv2 (relu, LRN),
/// pool2, inception_3a, inception_3b, pool3, inception_4a .. inception_4e, pool4, inception_5a,
/// inception_5b, pool5 (average_pooling_2d 7x7 stride 1), loss3_fc (dropout 0.4, then loss3_fc),
/// prob (softmax), and, computed after prob as in Chainer, loss1_fc2 (from inception_4a:
/// average_pooling_2d 5x5 stride 3, loss1_conv, relu, loss1_fc1, relu, loss1_fc2) and loss2_fc2
/// (the same from inception_4d). Layers up to inception_5b take any input of at least 32 x 32;
/// pool5 onwards need 224 x 224. Initial values: LeCunUniform for the children outside the
/// Inception modules (zeros with a pretrained_model), the modules' defaults inside.
class GoogLeNet : public VisionLayers {
 public:
  /// pretrained_model: the path of Chainer's (or rensa's) .npz, or empty.
  explicit GoogLeNet(const std::string& pretrained_model = "");
};

}  // namespace rensa::links
