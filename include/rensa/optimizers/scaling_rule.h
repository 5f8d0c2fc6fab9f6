#pragma once
/// \file
/// The learning-rate scaling rule of data-parallel training (Goyal et al. 2017, "Accurate, Large
/// Minibatch SGD"): when the global batch grows k times, the learning rate grows k times (linear),
/// or sqrt(k) times (square root, often preferred for adaptive optimizers such as Adam and LAMB).

#include <cstdint>
#include <string_view>

namespace rensa::optimizers {

/// How the learning rate follows the batch size.
enum class ScalingRule { linear, sqrt };

/// The learning rate for a global batch of `batchsize` examples per rank times `n_ranks` ranks,
/// from `base_lr`, tuned at a global batch of `base_batchsize`:
///   linear: base_lr * global / base_batchsize;  sqrt: base_lr * sqrt(global / base_batchsize).
/// ValueError naming scaled_learning_rate and the value for a base_lr that is not positive and
/// finite, or a batchsize, base_batchsize or n_ranks below 1.
double scaled_learning_rate(double base_lr, int64_t base_batchsize, int64_t batchsize, int64_t n_ranks = 1,
                            ScalingRule rule = ScalingRule::linear);

/// "linear" or "sqrt"; ValueError naming the valid names for another.
ScalingRule scaling_rule_from_name(std::string_view name);

}  // namespace rensa::optimizers
