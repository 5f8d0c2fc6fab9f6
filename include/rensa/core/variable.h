#pragma once
/// \file
/// Variable: an Array plus the autograd state (gradient, creator, requires_grad).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rensa/core/array.h"

namespace rensa {

class FunctionNode;
class Variable;

/// Observer attached to leaf variables (parameters) by higher layers, e.g. a data-parallel
/// optimizer that starts communication during backward. The engine calls `grad_final` once per
/// backward when the variable's gradient will receive no further contribution, and
/// `backward_finished` once per backward for each distinct hook that saw a grad_final.
class GradHook {
 public:
  virtual ~GradHook() = default;
  /// Called when `variable`'s gradient is final for this backward.
  virtual void grad_final(const Variable& variable) = 0;
  /// Called once at the end of the backward, after this hook's grad_final calls.
  virtual void backward_finished() {}
};

namespace detail {
struct VariableImpl;

/// The graph vertex of a variable. It outlives the Variable while functions that consumed it are
/// alive, but it does not keep the variable's data alive (functions keep what they need).
struct VariableNode {
  std::weak_ptr<VariableImpl> variable;
  std::shared_ptr<FunctionNode> creator;
  int64_t generation = 0;
  bool requires_grad = false;
  Shape shape;
  Dtype dtype = Dtype::float32;
  Device device;
  // backward bookkeeping, valid during one backward call
  std::shared_ptr<VariableImpl> grad_acc;
  int64_t pending = 0;
  uint64_t epoch = 0;
  int capture_slot = -1;
};

struct VariableImpl {
  Array data;
  std::shared_ptr<VariableImpl> grad;
  std::shared_ptr<VariableNode> node;  // created when the variable enters a graph
  std::string name;
  bool requires_grad = false;
  bool retain_grad = false;
  std::optional<double> grad_loss_scale;  // the scale of the backward that last set this leaf's gradient
  std::vector<std::shared_ptr<GradHook>> hooks;
};
}  // namespace detail

/// The identity of a variable (Variable::id): equal for handles of the same variable, distinct for
/// variables alive at the same time, ordered and hashable (std::hash) so it can key a map. A key
/// may be reused once its variable is destroyed. The value means nothing else.
enum class VariableId : std::uintptr_t {};

/// Options of Variable::backward and rensa::backward.
struct BackwardOptions {
  /// Keep the gradients of every intermediate variable (not only of leaves).
  bool retain_grad = false;
  /// Record the backward computation so gradients can be differentiated again.
  bool enable_double_backprop = false;
  /// Keep the graph (and its saved arrays) so backward can run through it again. Implied by
  /// enable_double_backprop.
  bool retain_graph = false;
  /// Chainer's loss_scale: an output's implicit gradient of 1 becomes this (a gradient set by hand is
  /// taken as it is), and each leaf whose gradient this backward sets records it
  /// (Variable::grad_loss_scale), so that the optimizer divides that gradient by it before updating.
  /// Unset, leaves record no scale.
  std::optional<double> loss_scale = std::nullopt;
};

/// A node of the computational graph: holds an Array (`array()`), its gradient (`grad()`), and the
/// function that created it. Copying a Variable aliases the same variable (data, grad and graph).
/// A Variable made from an Array does not require grad unless asked to.
class Variable {
 public:
  /// A null variable (`is_null()`), used for "no gradient".
  Variable() = default;
  /// Wraps `data` (aliasing it). Implicit so functions accept Arrays.
  Variable(Array data, bool requires_grad = false);  // NOLINT(google-explicit-constructor)

  /// True for a null handle.
  bool is_null() const { return impl_ == nullptr; }
  /// True unless null.
  explicit operator bool() const { return impl_ != nullptr; }

  /// The data (aliased, not copied).
  const Array& array() const {
    if (impl_ == nullptr) [[unlikely]] throw_null("Variable::array");
    return impl_->data;
  }
  /// Replaces the data; the shape may change only on a variable without creator.
  void set_array(Array data) const;
  /// The data's shape (ValueError for a null variable, as for the other accessors).
  const Shape& shape() const { return array().shape(); }
  /// The data's dtype.
  Dtype dtype() const { return array().dtype(); }
  /// The data's device.
  Device device() const { return array().device(); }
  /// The data's number of axes.
  int64_t ndim() const { return array().ndim(); }
  /// The data's number of elements.
  int64_t size() const { return array().size(); }

  /// The gradient, or a null Variable when there is none.
  Variable grad() const;
  /// Sets the gradient (null clears it); ShapeError/DtypeError if it does not match the data.
  void set_grad(const Variable& grad) const;
  /// Clears the gradient.
  void cleargrad() const { set_grad(Variable()); }
  /// The loss scale the gradient carries: BackwardOptions::loss_scale of the backward that last set
  /// it (Chainer's `_loss_scale`); Optimizer::update divides the gradient by it.
  std::optional<double> grad_loss_scale() const;
  /// Sets the loss scale the gradient carries (nullopt: none); ValueError unless positive and finite.
  void set_grad_loss_scale(std::optional<double> scale) const;

  /// Whether backward computes a gradient for this variable (leaves: set by the user).
  bool requires_grad() const;
  /// Marks a leaf as needing a gradient. DtypeError for true on a non-floating dtype; ValueError on a variable with a creator.
  void set_requires_grad(bool value) const;
  /// The variable's name (empty by default), shown by computational-graph dumps.
  const std::string& name() const;
  /// Sets the name.
  void set_name(std::string name) const;

  /// The function that produced this variable, or nullptr for a leaf.
  std::shared_ptr<FunctionNode> creator() const;
  /// 0 for leaves; otherwise the creator's generation.
  int64_t generation() const;
  /// Keep this (non-leaf) variable's gradient after backward.
  void retain_grad() const;

  /// Backpropagates from this variable. A variable of one element gets gradient 1 unless it has a
  /// gradient set; otherwise set one first (ShapeError).
  void backward(const BackwardOptions& options = {}) const;
  /// Makes this variable a leaf: forgets its creator.
  void unchain() const;
  /// Cuts the graph behind this variable: every function reachable backward drops its inputs, and
  /// every variable behind it becomes a leaf. Works after backward too, which is Chainer's order for
  /// truncated BPTT: `loss.backward(); loss.unchain_backward();` then the next segment's graph starts
  /// at the kept state.
  void unchain_backward() const;

  /// Registers an observer called when this leaf's gradient is final (see GradHook). The same hook
  /// may observe many variables. ValueError for a null hook.
  void add_grad_hook(std::shared_ptr<GradHook> hook) const;
  /// Unregisters `hook` (every registration of it); nothing happens if it is not registered.
  void remove_grad_hook(const GradHook* hook) const;
  /// The observers registered on this variable, in the order added. ValueError for a null variable.
  const std::vector<std::shared_ptr<GradHook>>& grad_hooks() const;

  /// Chainer's Variable.debug_print: "<variable NAME>" (or "<variable at 0x...>"), then lines
  /// "- device: ", "- backend: ", "- shape: ", "- dtype: ", "- statistics: mean=..., std=..." and
  /// "- grad: " (None, 0 when all zero, or its statistics), "None" for what a null variable lacks.
  std::string debug_print() const;

  /// True when both handles refer to the same variable.
  bool is(const Variable& other) const { return impl_ == other.impl_; }
  /// This variable's identity, stable for its lifetime: `a.id() == b.id()` exactly when `a.is(b)`
  /// (both null included). Keys maps of per-variable state without holding the variable.
  VariableId id() const noexcept { return VariableId{reinterpret_cast<std::uintptr_t>(impl_.get())}; }

  // internal
  /// Wraps an existing implementation (for the engine).
  explicit Variable(std::shared_ptr<detail::VariableImpl> impl) : impl_(std::move(impl)) {}
  /// The shared implementation (for the engine).
  const std::shared_ptr<detail::VariableImpl>& impl() const { return impl_; }
  /// The graph vertex, created on first use.
  const std::shared_ptr<detail::VariableNode>& node() const;

 private:
  void require_impl(const char* op) const;
  [[noreturn]] static void throw_null(const char* op);
  std::shared_ptr<detail::VariableImpl> impl_;
};

/// Prints as the array does, with `variable(` in place of `array(`; `variable(null)` for null.
std::ostream& operator<<(std::ostream& os, const Variable& v);

}  // namespace rensa
