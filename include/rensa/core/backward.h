#pragma once
/// \file
/// The backward engine: gradients of outputs with respect to the graph's leaves or chosen inputs.

#include <vector>

#include "rensa/core/variable.h"

namespace rensa {

/// Backpropagates from `outputs`, seeded with `grad_outputs` (one per output; a null entry means
/// ones for a one-element output). Leaf gradients accumulate into Variable::grad(). Nodes run in
/// reverse creation order (highest generation first); fan-out gradients are summed. Without
/// retain_graph the graph's saved data is freed as backward passes; backward through a freed part
/// throws ValueError.
void backward(const std::vector<Variable>& outputs, const std::vector<Variable>& grad_outputs = {},
              const BackwardOptions& options = {});

/// Options of rensa::grad.
struct GradOptions {
  /// Build a graph of the gradient computation, so the results can be differentiated again.
  bool enable_double_backprop = false;
  /// Keep the graph for later backward calls (implied by enable_double_backprop).
  bool retain_graph = false;
  /// Return zeros (instead of a null Variable) for inputs the outputs do not depend on.
  bool allow_unused_zeros = true;
};

/// Gradients of sum(outputs[i] * grad_outputs[i]) with respect to each of `inputs`, returned
/// rather than accumulated into .grad(); leaves' .grad() are untouched.
std::vector<Variable> grad(const std::vector<Variable>& outputs, const std::vector<Variable>& inputs,
                           const std::vector<Variable>& grad_outputs = {}, const GradOptions& options = {});

}  // namespace rensa
