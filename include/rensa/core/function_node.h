#pragma once
/// \file
/// FunctionNode: a recorded application of a differentiable function, and the helpers that record
/// one from a function's forward.

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "rensa/core/config.h"
#include "rensa/core/function_hook.h"
#include "rensa/core/pool_allocator.h"
#include "rensa/core/variable.h"

namespace rensa {

namespace detail {
struct NodeBuilder;
struct DebugSite;
}

/// What a backward function receives.
class BackwardContext {
 public:
  /// Views of the backward's gradients, needed-input flags, retained outputs and output nodes (made by the engine).
  BackwardContext(std::span<const Variable> grad_outputs, std::span<const char> targets,
                  std::span<const Array> retained, std::span<const std::weak_ptr<detail::VariableNode>> outputs)
      : grad_outputs_(grad_outputs), targets_(targets), retained_(retained), outputs_(outputs) {}
  /// Gradient of output i (zeros when the output received none).
  const Variable& grad_output(std::size_t i = 0) const { return grad_outputs_[i]; }
  /// Number of outputs of the function.
  std::size_t num_outputs() const { return grad_outputs_.size(); }
  /// Whether input i needs a gradient; others may be left null.
  bool needs_grad(std::size_t i) const { return targets_[i] != 0; }
  /// Output i as a variable, when the function retained its outputs; it is connected to the
  /// graph, so double backprop through it works.
  Variable output(std::size_t i = 0) const;

 private:
  std::span<const Variable> grad_outputs_;
  std::span<const char> targets_;
  std::span<const Array> retained_;
  std::span<const std::weak_ptr<detail::VariableNode>> outputs_;
};

/// A function application in the graph. Holds its input vertices and what its backward needs.
///
/// A user-defined function subclasses it as in Chainer (docs/custom_functions.md): override
/// label(), forward() (arrays in, arrays out) and backward() (gradients from differentiable
/// functions, so double backprop works), then call apply() on a node made with std::make_shared.
class FunctionNode : public std::enable_shared_from_this<FunctionNode> {
 public:
  virtual ~FunctionNode() = default;
  /// The function's name, e.g. "linear"; error messages name the function by it.
  virtual const char* label() const = 0;
  /// The outputs from the inputs' arrays (graph recording is off while it runs). Called by apply();
  /// the default throws NotImplementedError (functions recorded with record() need none).
  virtual std::vector<Array> forward(const std::vector<Array>& inputs);
  /// Gradients of the inputs (null where not needed), computed with differentiable functions.
  virtual std::vector<Variable> backward(const BackwardContext& ctx) = 0;
  /// Drops what backward needs (saved arrays and captured variables). The default drops nothing
  /// but what retain_inputs() kept.
  virtual void release_saved() {}

  /// Chainer's FunctionNode.apply: runs forward() on the inputs' arrays and, when backprop is
  /// enabled and some input requires grad, records this node as the outputs' creator. The node must
  /// be owned by a std::shared_ptr (std::make_shared) and applied once; ValueError otherwise, and
  /// when forward returns a null array.
  std::vector<Variable> apply(std::span<const Variable> inputs);
  /// apply() on a braced list of inputs.
  std::vector<Variable> apply(std::initializer_list<Variable> inputs) {
    return apply(std::span<const Variable>(inputs.begin(), inputs.size()));
  }

  /// The graph vertices of the inputs (null for a null input).
  const std::vector<std::shared_ptr<detail::VariableNode>>& inputs() const { return inputs_; }
  /// The graph vertices of the outputs (weak: they may be gone).
  const std::vector<std::weak_ptr<detail::VariableNode>>& outputs() const { return outputs_; }
  /// The outputs kept by retain_outputs(), in output order.
  const std::vector<Array>& retained_outputs() const { return retained_outputs_; }
  /// A zero gradient for output i (for outputs that received none).
  Array zero_grad_output(std::size_t i) const;
  /// One more than the largest generation of the inputs' creators: backward runs nodes in decreasing generation.
  int64_t generation() const { return generation_; }
  /// Process-wide creation number, increasing; orders nodes of equal generation.
  uint64_t sequence() const { return sequence_; }
  /// True once backward ran through this node without retain_graph (or unchain_backward cut it).
  bool released() const { return released_; }
  /// Drops the saved data (saved arrays, retained outputs, captured variables): backward cannot run
  /// through this node again. Its input edges stay, so unchain_backward can still cut the graph.
  void release();

  /// Where the function was applied, captured in debug mode (Config::debug) only; null otherwise.
  const std::shared_ptr<const detail::DebugSite>& creation_site() const { return creation_site_; }
  /// Records where the function was applied (debug mode).
  void set_creation_site(std::shared_ptr<const detail::DebugSite> site) { creation_site_ = std::move(site); }

  // engine bookkeeping
  /// The number of the backward pass that last visited this node (engine bookkeeping).
  uint64_t epoch = 0;
  /// True while the node waits in the backward queue (engine bookkeeping).
  bool in_queue = false;

 protected:
  FunctionNode() = default;
  /// Called from forward(): keep inputs `indexes` for backward, as variables connected to the
  /// graph (read them with retained_inputs()). ValueError for an index past the inputs.
  void retain_inputs(std::vector<std::size_t> indexes) { retain_inputs_ = std::move(indexes); }
  /// Called from forward(): keep outputs `indexes` for backward (BackwardContext::output).
  void retain_outputs(std::vector<std::size_t> indexes) { retain_outputs_ = std::move(indexes); }
  /// The inputs kept by retain_inputs(), in input order: a null Variable for those not kept.
  const std::vector<Variable>& retained_inputs() const { return retained_inputs_; }

 private:
  friend struct detail::NodeBuilder;
  std::vector<Variable> retained_inputs_;
  std::vector<std::size_t> retain_inputs_, retain_outputs_;
  bool applied_ = false;
  std::vector<std::shared_ptr<detail::VariableNode>> inputs_;
  std::vector<std::weak_ptr<detail::VariableNode>> outputs_;
  std::vector<Array> retained_outputs_;
  // Shape, dtype and device of each output of a multi-output function, so backward can pass zeros
  // for outputs that got no gradient even after they are gone.
  struct OutputMeta {
    Shape shape;
    Dtype dtype;
    Device device;
  };
  std::vector<OutputMeta> output_meta_;
  std::shared_ptr<const detail::DebugSite> creation_site_;
  int64_t generation_ = 0;
  uint64_t sequence_ = 0;
  bool released_ = false;
};

namespace detail {

/// A FunctionNode whose backward is a callable `Variable-vector(const BackwardContext&)`.
template <class F>
class LambdaNode final : public FunctionNode {
 public:
  LambdaNode(const char* label, F&& fn) : label_(label), fn_(std::move(fn)) {}
  const char* label() const override { return label_; }
  std::vector<Variable> backward(const BackwardContext& ctx) override {
    // backward() refuses a released node before calling this; the check keeps that local.
    RENSA_CHECK(fn_.has_value(), ValueError, "backward of '", label_, "': its saved values were released");
    return (*fn_)(ctx);
  }
  void release_saved() override { fn_.reset(); }

 private:
  const char* label_;
  std::optional<F> fn_;
};

/// Connects a node to its inputs and outputs (shared by all ways of recording).
struct NodeBuilder {
  static bool any_requires_grad(std::span<const Variable> inputs);
  /// The sequence number the next recorded node gets (nodes are numbered in creation order).
  static uint64_t next_sequence();
  static std::vector<Variable> connect(const std::shared_ptr<FunctionNode>& node, std::span<const Variable> inputs,
                                       std::vector<Array> outputs, bool retain_outputs);
  /// connect() for one output, without the vectors (the common case, on the hot path).
  static Variable connect1(const std::shared_ptr<FunctionNode>& node, std::span<const Variable> inputs, Array output,
                           bool retain_output);

 private:
  static void link_inputs(FunctionNode& node, std::span<const Variable> inputs);
  static Variable link_output(const std::shared_ptr<FunctionNode>& node, Array output);
};

}  // namespace detail

/// Wraps forward results as output variables and, when backprop is enabled and some input requires
/// grad, records `backward` (a callable taking `const BackwardContext&` and returning one Variable
/// per input, null where no gradient is needed). With `retain_outputs`, backward can read the
/// outputs through ctx.output(i) without keeping them alive in a cycle. `inputs`: a vector or span
/// of Variables, so the number of inputs may be known only at run time.
template <class F>
std::vector<Variable> record(const char* label, std::span<const Variable> inputs, std::vector<Array> outputs,
                             F&& backward, bool retain_outputs = false) {
  const Config& cfg = config();
  const bool observed = detail::forward_observed() || cfg.debug;
  if (!cfg.enable_backprop || !detail::NodeBuilder::any_requires_grad(inputs)) {
    std::vector<Variable> out;
    out.reserve(outputs.size());
    for (auto& a : outputs) out.emplace_back(std::move(a));
    if (observed) [[unlikely]] detail::forward_recorded(label, inputs, out, nullptr);
    return out;
  }
  using Node = detail::LambdaNode<std::decay_t<F>>;
  auto node = std::allocate_shared<Node>(detail::PoolAllocator<Node>(), label, std::forward<F>(backward));
  FunctionNode* raw = node.get();
  auto out = detail::NodeBuilder::connect(node, inputs, std::move(outputs), retain_outputs);
  if (observed) [[unlikely]] detail::forward_recorded(label, inputs, out, raw);
  return out;
}

/// record() for inputs written as a list: `{x, W, b}`.
template <class F>
std::vector<Variable> record(const char* label, std::initializer_list<Variable> inputs, std::vector<Array> outputs,
                             F&& backward, bool retain_outputs = false) {
  return record(label, std::span<const Variable>(inputs.begin(), inputs.size()), std::move(outputs),
                std::forward<F>(backward), retain_outputs);
}

/// record() for a function with one output.
template <class F>
Variable record1(const char* label, std::initializer_list<Variable> inputs, Array output, F&& backward,
                 bool retain_output = false) {
  std::span<const Variable> in(inputs.begin(), inputs.size());
  const Config& cfg = config();
  const bool observed = detail::forward_observed() || cfg.debug;
  if (!cfg.enable_backprop || !detail::NodeBuilder::any_requires_grad(in)) {
    Variable out(std::move(output));
    if (observed) [[unlikely]] detail::forward_recorded(label, in, {&out, 1}, nullptr);
    return out;
  }
  using Node = detail::LambdaNode<std::decay_t<F>>;
  auto node = std::allocate_shared<Node>(detail::PoolAllocator<Node>(), label, std::forward<F>(backward));
  FunctionNode* raw = node.get();
  Variable out = detail::NodeBuilder::connect1(node, in, std::move(output), retain_output);
  if (observed) [[unlikely]] detail::forward_recorded(label, in, {&out, 1}, raw);
  return out;
}

}  // namespace rensa
