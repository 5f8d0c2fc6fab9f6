#pragma once
/// \file
/// SpectralNormalization (Chainer's link_hooks.SpectralNormalization; Miyato et al. 2018): a link's
/// weight divided by its largest singular value, estimated by power iteration, in every forward.

#include <optional>
#include <string>

#include "rensa/links/link_hook.h"

namespace rensa::link_hooks {

/// Options of SpectralNormalization (Chainer's arguments).
struct SpectralNormalizationOptions {
  /// Power iterations per forward (>= 1).
  int n_power_iteration = 1;
  /// Added to the norms of the singular vector estimates (1e-6, for 16-bit training).
  double eps = 1e-6;
  /// Also learn a scale "gamma" (a 0-d parameter of the link, initialized to the weight's largest
  /// singular value): W_bar = gamma W / sigma. Add the hook before setting up the optimizer.
  bool use_gamma = false;
  /// Divide sigma by this (W_bar = factor W / sigma); unset means 1.
  std::optional<double> factor = std::nullopt;
  /// The parameter to normalize.
  std::string weight_name = "W";
  /// The hook's name on the link; default "SpectralNormalization".
  std::string name = "SpectralNormalization";
};

/// Add it to one link with Link::add_hook (not as a scope). Each forward reads the weight as
/// W_bar = W / sigma(W), sigma = u^T W_mat v with W_mat the weight as a (out, -1) matrix (axis 1
/// moved first for the deconvolutions, axis 0 otherwise) and u, v its first singular vectors after
/// n_power_iteration steps from the persistent u ("<weight>_u", drawn from N(0, 1) with the default
/// generator when the weight is first known). The gradient flows through W_mat in sigma and W; u
/// and v are constants. In training mode (Config::train) the new u is stored. Honoured by the links
/// of Link::set_param_transform; on another link the first forward throws ValueError.
class SpectralNormalization : public LinkHook {
 public:
  /// ValueError unless n_power_iteration >= 1 and eps >= 0.
  explicit SpectralNormalization(SpectralNormalizationOptions options = {});
  std::string name() const override { return options_.name; }
  /// The persistent value holding u: weight_name + "_u".
  std::string vector_name() const { return options_.weight_name + "_u"; }
  /// The weight's axis of output units: 1 for Deconvolution2D and DeconvolutionND, 0 otherwise
  /// (known once added).
  int axis() const { return axis_; }

  /// ValueError for a null link (a scope) or one without the weight.
  void added(Link* link) override;
  /// Removes "<weight>_u" (and "gamma") from the link.
  void deleted(Link* link) override;
  void forward_preprocess(const LinkForwardCall& call) override;
  void forward_postprocess(const LinkForwardCall& call) override;

 private:
  void prepare(Link& link, const Variable& W);
  Variable normalize(Link& link, const Variable& W);
  SpectralNormalizationOptions options_;
  int axis_ = 0;
  bool prepared_ = false;
};

}  // namespace rensa::link_hooks
