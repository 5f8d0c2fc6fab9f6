#include "rensa/core/function_node.h"

#include <atomic>

#include "rensa/core/error.h"

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

std::vector<Array> FunctionNode::forward(const std::vector<Array>& /*inputs*/) {
  RENSA_THROW(NotImplementedError, "function '", label(),
              "' has no forward(): override FunctionNode::forward to call apply(), or record it with record()");
}

std::vector<Variable> FunctionNode::apply(std::span<const Variable> inputs) {
  auto self = weak_from_this().lock();
  RENSA_CHECK(self != nullptr, ValueError, "apply: function '", label(),
              "' must be owned by a std::shared_ptr (create it with std::make_shared)");
  RENSA_CHECK(!applied_, ValueError, "apply: function '", label(),
              "' was already applied; create a new node for every call");
  applied_ = true;
  rensa::detail::ForwardEntry entry(label(), inputs);
  std::vector<Array> xs;
  xs.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    RENSA_CHECK(!inputs[i].is_null(), ValueError, "apply: input ", i, " of '", label(), "' is a null Variable");
    xs.push_back(inputs[i].array());
  }
  std::vector<Array> ys;
  {
    auto guard = no_backprop_mode();
    ys = forward(xs);
  }
  for (std::size_t j = 0; j < ys.size(); ++j) {
    RENSA_CHECK(!ys[j].is_null(), ValueError, "apply: forward of '", label(), "' returned a null array as output ", j);
  }
  for (std::size_t i : retain_inputs_) {
    RENSA_CHECK(i < inputs.size(), ValueError, "apply: '", label(), "' retains input ", i, " but has ",
                inputs.size(), " inputs");
  }
  for (std::size_t j : retain_outputs_) {
    RENSA_CHECK(j < ys.size(), ValueError, "apply: '", label(), "' retains output ", j, " but has ", ys.size(),
                " outputs");
  }
  const Config& cfg = config();
  const bool observed = detail::forward_observed() || cfg.debug;
  if (!cfg.enable_backprop || !detail::NodeBuilder::any_requires_grad(inputs)) {
    std::vector<Variable> outs(ys.begin(), ys.end());
    if (observed) detail::forward_recorded(label(), inputs, outs, nullptr);
    return outs;
  }
  if (!retain_inputs_.empty()) {
    retained_inputs_.assign(inputs.size(), Variable());
    for (std::size_t i : retain_inputs_) retained_inputs_[i] = inputs[i];
  }
  std::vector<Array> kept;
  if (!retain_outputs_.empty()) {
    kept.resize(ys.size());
    for (std::size_t j : retain_outputs_) kept[j] = ys[j];
  }
  auto outs = detail::NodeBuilder::connect(self, inputs, std::move(ys), false);
  retained_outputs_ = std::move(kept);
  if (observed) detail::forward_recorded(label(), inputs, outs, this);
  return outs;
}

void FunctionNode::release() {
  // The input edges stay (a few small vertices): unchain_backward after a backward must still be
  // able to walk the graph and cut it, as Chainer's truncated BPTT does. The arrays go.
  retained_outputs_.clear();
  retained_outputs_.shrink_to_fit();
  retained_inputs_.clear();
  retained_inputs_.shrink_to_fit();
  release_saved();
  released_ = true;
}

namespace detail {

namespace {
std::atomic<uint64_t> g_sequence{0};  // creation order of nodes, for deterministic tie-breaks
}

uint64_t NodeBuilder::next_sequence() { return g_sequence.load(std::memory_order_relaxed); }

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

std::vector<Variable> NodeBuilder::connect(const std::shared_ptr<FunctionNode>& node, std::span<const Variable> inputs,
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

Variable NodeBuilder::connect1(const std::shared_ptr<FunctionNode>& node, std::span<const Variable> inputs,
                               Array output, bool retain_output) {
  link_inputs(*node, inputs);
  if (retain_output) node->retained_outputs_.assign(1, output);
  node->outputs_.reserve(1);
  return link_output(node, std::move(output));
}

}  // namespace detail
}  // namespace rensa
