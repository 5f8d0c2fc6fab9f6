#pragma once
// record() for functions whose number of inputs is known only at run time (concat, pad_sequence,
// transpose_sequence, forget): the initializer-list form cannot take a vector.
#include <memory>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "rensa/core/config.h"
#include "rensa/core/function_node.h"

namespace rensa::functions::detail {

/// Wraps `outputs` as Variables and, when backprop is on and an input requires grad, records
/// `backward` (one gradient per input, null where not needed).
template <class Fn>
std::vector<Variable> record_list(const char* label, std::span<const Variable> inputs, std::vector<Array> outputs,
                                  Fn&& backward) {
  if (!config().enable_backprop || !rensa::detail::NodeBuilder::any_requires_grad(inputs)) {
    return std::vector<Variable>(outputs.begin(), outputs.end());
  }
  auto node = std::make_shared<rensa::detail::LambdaNode<std::decay_t<Fn>>>(label, std::forward<Fn>(backward));
  return rensa::detail::NodeBuilder::connect(std::move(node), inputs, std::move(outputs), false);
}

}  // namespace rensa::functions::detail
