#pragma once
/// \file
/// WeightStandardization (Chainer's link_hooks.WeightStandardization; Qiao et al. 2019): a link's
/// weight standardized per output unit in every forward.

#include <string>

#include "rensa/links/link_hook.h"

namespace rensa::link_hooks {

/// Options of WeightStandardization.
struct WeightStandardizationOptions {
  /// Added to the variance (> 0).
  double eps = 1e-5;
  /// Name of the parameter standardized.
  std::string weight_name = "W";
  /// The hook's name (its key among a link's hooks).
  std::string name = "WeightStandardization";
};

/// Add it to one link with Link::add_hook. Each forward reads the weight as
/// group_normalization(W, 1, ones, zeros, eps): every output unit's weights (W[o, ...]) less their
/// mean, over their standard deviation. Differentiable. Honoured by the links of
/// Link::set_param_transform; on another link the first forward throws ValueError.
class WeightStandardization : public LinkHook {
 public:
  /// ValueError unless eps > 0.
  explicit WeightStandardization(WeightStandardizationOptions options = {});
  std::string name() const override { return options_.name; }
  /// ValueError for a null link (a scope) or one without the weight.
  void added(Link* link) override;
  void forward_preprocess(const LinkForwardCall& call) override;
  void forward_postprocess(const LinkForwardCall& call) override;

 private:
  WeightStandardizationOptions options_;
};

}  // namespace rensa::link_hooks
