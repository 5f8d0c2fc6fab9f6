#pragma once
/// \file
/// Where the readers of downloaded datasets (CIFAR, SVHN, Kuzushiji-MNIST, PTB) look by default.
#include <string>

namespace rensa::datasets {

/// $RENSA_DATASET_ROOT when set, else $HOME/.rensa/dataset (Chainer's get_dataset_root, with
/// CHAINER_DATASET_ROOT's counterpart). rensa downloads nothing: put the files there yourself.
std::string get_dataset_root();

}  // namespace rensa::datasets
