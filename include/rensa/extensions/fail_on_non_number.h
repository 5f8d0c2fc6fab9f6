#pragma once
/// \file
/// FailOnNonNumber: stops training when a parameter or gradient is NaN or infinite (Chainer's
/// FailOnNonNumber).

#include <string>

#include "rensa/training/extension.h"

namespace rensa::extensions {

/// Every iteration, checks every parameter (and, with check_grad, its gradient) of every optimizer's
/// target; throws rensa::Error naming the optimizer, the parameter path and whether the data or the
/// gradient holds the non-finite value.
class FailOnNonNumber : public training::Extension {
 public:
  /// `check_grad`: check the gradients too.
  explicit FailOnNonNumber(bool check_grad = true) : check_grad_(check_grad) {}
  void operator()(training::Trainer& trainer) override;
  std::string default_name() const override { return "FailOnNonNumber"; }

 private:
  bool check_grad_;
};

}  // namespace rensa::extensions
