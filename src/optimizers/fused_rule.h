#pragma once
// The update rule shared by the built-in optimizers: its state arrays are created at the first
// update with the parameter's shape, dtype and device, and each step is one fused pass whose
// arithmetic the optimizer writes beside its hyperparameters (backends::fused_update).
#include <array>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "rensa/optimizers/optimizer.h"
#include "src/backends/fused_update.h"

namespace rensa::optimizers::detail {

class FusedRule final : public UpdateRule {
 public:
  static constexpr int kMaxState = 3;

  /// One step in place: `state` holds the `n_state()` arrays this step uses (created like the
  /// parameter), `t` is the rule's step count, already incremented.
  using StepFn = std::function<void(const Array& param, const Array& grad, const Array* state, int64_t t)>;
  /// A step that also sees the parameter's Variable (its name and shape decide LARS's and LAMB's
  /// exclusions); `param.array()` is the array updated in place.
  using VariableStepFn =
      std::function<void(const Variable& param, const Array& grad, const Array* state, int64_t t)>;

  /// `owner` names the optimizer in errors; `state_names` are the serialized names of all state
  /// arrays the rule may use; the first `n_required` must be present when loading a rule that has
  /// taken steps (the others, such as Adam's "vhat", are optional). `n_state` says how many the next
  /// step uses (null: all of them).
  FusedRule(const char* owner, std::vector<std::string> state_names, int n_required, std::function<int()> n_state,
            StepFn step);
  FusedRule(const char* owner, std::vector<std::string> state_names, int n_required, std::function<int()> n_state,
            VariableStepFn step);

  /// State array `i` starts at `value` instead of zero (SMORMS3's "mem" starts at 1).
  void set_initial_value(std::size_t i, double value);

  void update_core(const Variable& param) override;
  void serialize(serializers::Serializer& s) override;
  std::vector<std::pair<std::string, Array>> state() const override;

 private:
  // Creates missing state arrays and moves loaded ones to the parameter's dtype and device.
  void prepare_state(const Array& param, int n_state);

  const char* owner_;
  std::vector<std::string> state_names_;
  int n_required_;
  std::function<int()> n_state_;
  StepFn step_;
  VariableStepFn variable_step_;
  std::array<Array, kMaxState> state_;
  std::array<double, kMaxState> initial_{};
};

}  // namespace rensa::optimizers::detail
