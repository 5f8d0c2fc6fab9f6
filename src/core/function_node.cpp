#include "rensa/core/function_node.h"

#include <atomic>

namespace rensa {

Variable BackwardContext::output(std::size_t i) const {
  RENSA_CHECK(i < retained_.size() && !retained_[i].is_null(), ValueError,
              "BackwardContext::output: output ", i, " was not retained by the function");
  Variable v(retained_[i]);
  if (auto node = outputs_[i].lock()) {
    // Reconnect to the output's vertex so double backprop flows through the function.
    v.impl()->node = node;
    v.impl()->requires_grad = node->requires_grad;
  }
  return v;
}

Array FunctionNode::zero_grad_output(std::size_t i) const {
  if (i < output_meta_.size()) {
    const auto& m = output_meta_[i];
    return Array::zeros(m.shape, m.dtype, m.device);
  }
  auto n = i < outputs_.size() ? outputs_[i].lock() : nullptr;
  RENSA_CHECK(n != nullptr, ValueError, "backward: output ", i, " of '", label(), "' is gone");
  return Array::zeros(n->shape, n->dtype, n->device);
}

void FunctionNode::release() {
  // The input edges stay (a few small vertices): unchain_backward after a backward must still be
  // able to walk the graph and cut it, as Chainer's truncated BPTT does. The arrays go.
  retained_outputs_.clear();
  retained_outputs_.shrink_to_fit();
  release_saved();
  released_ = true;
}

namespace detail {

namespace {
std::atomic<uint64_t> g_sequence{0};  // creation order of nodes, for deterministic tie-breaks
}

bool NodeBuilder::any_requires_grad(std::span<const Variable> inputs) {
  for (const auto& v : inputs) {
    if (v.is_null()) continue;
    const auto& impl = v.impl();
    if (impl->requires_grad || (impl->node && impl->node->creator && impl->node->requires_grad)) return true;
  }
  return false;
}

void NodeBuilder::link_inputs(FunctionNode& node, std::span<const Variable> inputs) {
  int64_t gen = 0;
  node.inputs_.reserve(inputs.size());
  for (const auto& v : inputs) {
    if (v.is_null()) {
      node.inputs_.push_back(nullptr);
      continue;
    }
    const auto& n = v.node();
    gen = std::max(gen, n->generation);
    node.inputs_.push_back(n);
  }
  node.generation_ = gen + 1;
  node.sequence_ = g_sequence.fetch_add(1, std::memory_order_relaxed);
}

Variable NodeBuilder::link_output(const std::shared_ptr<FunctionNode>& node, Array output) {
  Variable out(std::move(output));
  out.impl()->requires_grad = true;
  const auto& n = out.node();
  n->creator = node;
  n->generation = node->generation_;
  node->outputs_.push_back(n);
  return out;
}

std::vector<Variable> NodeBuilder::connect(std::shared_ptr<FunctionNode> node, std::span<const Variable> inputs,
                                           std::vector<Array> outputs, bool retain_outputs) {
  link_inputs(*node, inputs);
  if (retain_outputs) node->retained_outputs_ = outputs;
  if (outputs.size() > 1) {
    node->output_meta_.reserve(outputs.size());
    for (const auto& a : outputs) node->output_meta_.push_back({a.shape(), a.dtype(), a.device()});
  }
  std::vector<Variable> result;
  result.reserve(outputs.size());
  node->outputs_.reserve(outputs.size());
  for (auto& a : outputs) result.push_back(link_output(node, std::move(a)));
  return result;
}

Variable NodeBuilder::connect1(std::shared_ptr<FunctionNode> node, std::span<const Variable> inputs, Array output,
                               bool retain_output) {
  link_inputs(*node, inputs);
  if (retain_output) node->retained_outputs_.assign(1, output);
  node->outputs_.reserve(1);
  return link_output(node, std::move(output));
}

}  // namespace detail
}  // namespace rensa
