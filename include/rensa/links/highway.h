#pragma once
/// \file
/// Highway: the gated skip layer of Srivastava et al. 2015 (Chainer's L.Highway).

#include <cstdint>
#include <functional>
#include <memory>

#include "rensa/links/linear.h"
#include "rensa/links/link.h"

namespace rensa::links {

/// Options of Highway.
struct HighwayOptions {
  /// No biases on the plain and transform children.
  bool nobias = false;
  /// The activation of the plain path; null means relu.
  std::function<Variable(const Variable&)> activate = nullptr;
  /// Initializer of the plain path's W; null means LeCunNormal(). \p init_Wt is the transform gate's.
  std::shared_ptr<const initializers::Initializer> init_Wh = nullptr, init_Wt = nullptr;
  /// Bias initializers; null means 0 for the plain path and -1 for the transform gate (Chainer's
  /// init_bt = -1, which starts the layer close to the identity).
  std::shared_ptr<const initializers::Initializer> init_bh = nullptr, init_bt = nullptr;
  /// \var init_Wt
  /// Initializer of the transform gate's W; null means LeCunNormal().
  /// \var init_bt
  /// Initializer of the transform gate's bias; null means -1.
};

/// y = activate(plain(x)) * t + x * (1 - t) with t = sigmoid(transform(x)); children "plain" and
/// "transform" are Linear(in_out_size, in_out_size). ValueError unless in_out_size > 0.
class Highway : public Chain {
 public:
  /// ValueError unless in_out_size > 0.
  explicit Highway(int64_t in_out_size, HighwayOptions options = {});
  Variable forward(const Variable& x) override;
  using Link::forward;

 private:
  std::function<Variable(const Variable&)> activate_;
  std::shared_ptr<Linear> plain_, transform_;
};

}  // namespace rensa::links
