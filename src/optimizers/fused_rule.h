#pragma once
// The update rule shared by the built-in optimizers: its state arrays are created at the first
// update with the parameter's shape, dtype and device, and each step is one call of the device's
// fused optimizer_update kernel.
#include <array>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "rensa/core/backend.h"
#include "rensa/optimizers/optimizer.h"

namespace rensa::optimizers::detail {

/// Fills the kernel's hyperparameters for step `t` (the rule's count, already incremented) and
/// returns how many state arrays this step uses.
using HyperparamFn = std::function<int(int64_t t, double* hp)>;

class FusedRule final : public UpdateRule {
 public:
  static constexpr int kMaxState = 3;
  static constexpr int kMaxHyperparams = 8;

  /// `owner` names the optimizer in errors; `state_names` are the serialized names of all state
  /// arrays the kind may use; the first `n_required` must be present when loading a rule that has
  /// taken steps (the others, such as Adam's "vhat", are optional).
  FusedRule(OptimizerKind kind, const char* owner, std::vector<std::string> state_names, int n_required,
            HyperparamFn hyperparams);

  void update(const Variable& param) override;
  void serialize(serializers::Serializer& s) override;
  std::vector<std::pair<std::string, Array>> state() const override;

 private:
  // Creates missing state arrays and moves loaded ones to the parameter's dtype and device.
  void prepare_state(const Array& param, int n_state);

  OptimizerKind kind_;
  const char* owner_;
  std::vector<std::string> state_names_;
  int n_required_;
  HyperparamFn hyperparams_;
  std::array<Array, kMaxState> state_;
};

}  // namespace rensa::optimizers::detail
