#include "rensa/core/variable.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "rensa/core/backward.h"
#include "rensa/core/function_node.h"
#include "rensa/core/pool_allocator.h"

namespace rensa {

Variable::Variable(Array data, bool requires_grad)
    : impl_(std::allocate_shared<detail::VariableImpl>(detail::PoolAllocator<detail::VariableImpl>())) {
  impl_->data = std::move(data);
  impl_->requires_grad = requires_grad;
}

void Variable::require_impl(const char* op) const {
  RENSA_CHECK(impl_ != nullptr, ValueError, op, ": null variable");
}

void Variable::throw_null(const char* op) {
  RENSA_THROW(ValueError, op, ": null variable");
}

void Variable::set_array(Array data) const {
  require_impl("Variable::set_array");
  if (impl_->node && impl_->node->creator) {
    RENSA_CHECK(data.shape() == impl_->data.shape() && data.dtype() == impl_->data.dtype(), ShapeError,
                "Variable::set_array: a variable with a creator keeps its shape and dtype: ", impl_->data.shape(), " ",
                impl_->data.dtype(), " vs ", data.shape(), " ", data.dtype());
  }
  impl_->data = std::move(data);
  if (impl_->node) {
    impl_->node->shape = impl_->data.shape();
    impl_->node->dtype = impl_->data.dtype();
    impl_->node->device = impl_->data.device();
  }
}

Variable Variable::grad() const {
  require_impl("Variable::grad");
  return Variable(impl_->grad);
}

std::optional<double> Variable::grad_loss_scale() const {
  require_impl("Variable::grad_loss_scale");
  return impl_->grad_loss_scale;
}

void Variable::set_grad_loss_scale(std::optional<double> scale) const {
  require_impl("Variable::set_grad_loss_scale");
  RENSA_CHECK(!scale || (*scale > 0 && std::isfinite(*scale)), ValueError,
              "Variable::set_grad_loss_scale: the scale must be a positive number, got ", scale.value_or(0));
  impl_->grad_loss_scale = scale;
}

void Variable::set_grad(const Variable& grad) const {
  require_impl("Variable::set_grad");
  if (!grad.is_null()) {
    RENSA_CHECK(grad.shape() == shape(), ShapeError, "Variable::set_grad: gradient shape ", grad.shape(),
                " does not match data shape ", shape());
    RENSA_CHECK(grad.dtype() == dtype(), DtypeError, "Variable::set_grad: gradient dtype ", grad.dtype(),
                " does not match data dtype ", dtype());
  }
  impl_->grad = grad.impl_;
}

bool Variable::requires_grad() const {
  require_impl("Variable::requires_grad");
  return impl_->requires_grad;
}

void Variable::set_requires_grad(bool value) const {
  require_impl("Variable::set_requires_grad");
  RENSA_CHECK(!value || is_floating(dtype()), DtypeError,
              "Variable::set_requires_grad: only floating variables can require grad, got ", dtype());
  RENSA_CHECK(!(impl_->node && impl_->node->creator), ValueError,
              "Variable::set_requires_grad: only leaf variables can change requires_grad");
  impl_->requires_grad = value;
  if (impl_->node) impl_->node->requires_grad = value;
}

const std::string& Variable::name() const {
  require_impl("Variable::name");
  return impl_->name;
}
void Variable::set_name(std::string name) const {
  require_impl("Variable::set_name");
  impl_->name = std::move(name);
}

std::shared_ptr<FunctionNode> Variable::creator() const {
  require_impl("Variable::creator");
  return impl_->node ? impl_->node->creator : nullptr;
}

int64_t Variable::generation() const {
  require_impl("Variable::generation");
  return impl_->node ? impl_->node->generation : 0;
}

void Variable::retain_grad() const {
  require_impl("Variable::retain_grad");
  impl_->retain_grad = true;
}

const std::shared_ptr<detail::VariableNode>& Variable::node() const {
  require_impl("Variable::node");
  if (!impl_->node) {
    auto n = std::allocate_shared<detail::VariableNode>(detail::PoolAllocator<detail::VariableNode>());
    n->variable = impl_;
    n->requires_grad = impl_->requires_grad;
    n->shape = impl_->data.shape();
    n->dtype = impl_->data.dtype();
    n->device = impl_->data.device();
    impl_->node = std::move(n);
  }
  return impl_->node;
}

void Variable::backward(const BackwardOptions& options) const {
  require_impl("Variable::backward");
  rensa::backward({*this}, {grad()}, options);
}

void Variable::unchain() const {
  require_impl("Variable::unchain");
  if (impl_->node) {
    impl_->node->creator.reset();
    impl_->node->generation = 0;
  }
}

void Variable::unchain_backward() const {
  require_impl("Variable::unchain_backward");
  if (!impl_->node || !impl_->node->creator) return;
  // Every vertex behind this one becomes a leaf, so backward from later outputs stops here.
  std::vector<std::shared_ptr<FunctionNode>> stack{std::move(impl_->node->creator)};
  impl_->node->generation = 0;
  while (!stack.empty()) {
    auto f = std::move(stack.back());
    stack.pop_back();
    for (const auto& in : f->inputs()) {
      if (in && in->creator) {
        stack.push_back(std::move(in->creator));
        in->generation = 0;
      }
    }
    // The function's other outputs (an LSTM cell's c beside the h the loss used) become leaves
    // too, as in Chainer: the next segment's graph starts at them.
    for (const auto& out : f->outputs()) {
      auto o = out.lock();
      if (o && o->creator == f) {
        o->creator.reset();
        o->generation = 0;
      }
    }
    f->release();
  }
}

void Variable::add_grad_hook(std::shared_ptr<GradHook> hook) const {
  require_impl("Variable::add_grad_hook");
  RENSA_CHECK(hook != nullptr, ValueError, "Variable::add_grad_hook: null hook");
  impl_->hooks.push_back(std::move(hook));
}

void Variable::remove_grad_hook(const GradHook* hook) const {
  require_impl("Variable::remove_grad_hook");
  std::erase_if(impl_->hooks, [&](const auto& h) { return h.get() == hook; });
}

const std::vector<std::shared_ptr<GradHook>>& Variable::grad_hooks() const {
  require_impl("Variable::grad_hooks");
  return impl_->hooks;
}

namespace {
// "mean=%.8f, std=%.8f" of a floating or integer array (NumPy's population std).
std::string statistics(const Array& a) {
  const std::vector<double> v = a.to_vector<double>();
  double mean = 0, var = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  for (double x : v) var += (x - mean) * (x - mean);
  var /= static_cast<double>(v.size());
  char buf[96];
  std::snprintf(buf, sizeof buf, "mean=%.8f, std=%.8f", mean, std::sqrt(var));
  return buf;
}
}  // namespace

std::string Variable::debug_print() const {
  std::ostringstream os;
  if (impl_ && !impl_->name.empty()) {
    os << "<variable " << impl_->name << ">";
  } else {
    os << "<variable at " << static_cast<const void*>(impl_.get()) << ">";
  }
  const bool has_data = impl_ && !impl_->data.is_null();
  const Array data = has_data ? impl_->data : Array();
  os << "\n- device: ";
  if (has_data)
    os << data.device();
  else
    os << "None";
  os << "\n- backend: " << (has_data ? "rensa::Array" : "None");
  os << "\n- shape: ";
  if (has_data)
    os << data.shape();
  else
    os << "None";
  os << "\n- dtype: " << (has_data ? dtype_name(data.dtype()) : std::string_view("None"));
  os << "\n- statistics: " << (has_data && data.device().is_host() ? statistics(data) : "None");
  os << "\n- grad: ";
  const Variable g = impl_ ? grad() : Variable();
  if (g.is_null()) {
    os << "None";
  } else {
    const std::vector<double> gv = g.array().to_vector<double>();
    const bool zero = std::all_of(gv.begin(), gv.end(), [](double x) { return x == 0; });
    os << (zero ? std::string("0") : statistics(g.array()));
  }
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Variable& v) {
  if (v.is_null()) return os << "variable(null)";
  std::string s = v.array().to_string();
  // "array(...)" -> "variable(...)"
  return os << "variable" << s.substr(5);
}

}  // namespace rensa
