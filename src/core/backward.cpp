// The backward engine. Nodes are processed highest generation first (ties: latest created first),
// so every consumer of a variable runs before its creator and the variable's gradient is complete
// when its creator runs. A pre-pass counts, for each vertex, the edges from reachable functions;
// when the count reaches zero the gradient is final (used for leaves' hooks and for rensa::grad).
#include "rensa/core/backward.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <optional>
#include <queue>
#include <unordered_set>

#include "rensa/core/function_node.h"
#include "rensa/functions/basic_math.h"

namespace rensa {
namespace {

using detail::VariableNode;

std::atomic<uint64_t> g_epoch{0};
constexpr std::size_t kSmall = 4;

struct NodeOrder {
  bool operator()(const std::shared_ptr<FunctionNode>& a, const std::shared_ptr<FunctionNode>& b) const {
    if (a->generation() != b->generation()) return a->generation() < b->generation();
    return a->sequence() < b->sequence();
  }
};

Variable add_grads(const Variable& a, const Variable& b) {
  if (a.is_null()) return b;
  if (b.is_null()) return a;
  return functions::add(a, b);
}

class Engine {
 public:
  Engine(const std::vector<Variable>& outputs, const std::vector<Variable>& grad_outputs, bool retain_graph,
         bool double_backprop, bool retain_grad, std::optional<double> loss_scale = std::nullopt)
      : retain_graph_(retain_graph),
        double_backprop_(double_backprop),
        retain_grad_(retain_grad),
        loss_scale_(loss_scale),
        epoch_(g_epoch.fetch_add(1, std::memory_order_relaxed) + 1),
        observed_(detail::forward_observed() || config().debug) {
    RENSA_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), ValueError, "backward: ", outputs.size(),
                " outputs but ", grad_outputs.size(), " gradients");
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      const Variable& y = outputs[i];
      RENSA_CHECK(!y.is_null(), ValueError, "backward: output ", i, " is null");
      Variable gy = grad_outputs.empty() ? Variable() : grad_outputs[i];
      if (gy.is_null()) {
        RENSA_CHECK(y.size() == 1, ShapeError,
                    "backward: a gradient can be created implicitly only for outputs of "
                    "one element; output ",
                    i, " has shape ", y.shape(), " (set its grad first)");
        gy = Variable(loss_scale ? Array::full(y.shape(), *loss_scale, y.dtype(), y.device())
                                 : Array::ones(y.shape(), y.dtype(), y.device()));
      } else {
        RENSA_CHECK(gy.shape() == y.shape() && gy.dtype() == y.dtype(), ShapeError, "backward: gradient ", gy.shape(),
                    " ", gy.dtype(), " does not match output ", i, " ", y.shape(), " ", y.dtype());
      }
      const auto& node = y.node();
      RENSA_CHECK(node->requires_grad || node->creator, ValueError, "backward: output ", i,
                  " does not require grad and has no graph behind it");
      seeds_.push_back({node, gy});
    }
  }

  ~Engine() {
    for (const auto& n : touched_) {
      n->grad_acc.reset();
      n->capture_slot = -1;
    }
  }

  /// Marks vertices whose final gradient is returned instead of delivered to .grad().
  void capture(const std::vector<Variable>& inputs) {
    captured_.assign(inputs.size(), Variable());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      RENSA_CHECK(!inputs[i].is_null(), ValueError, "grad: input ", i, " is null");
      const auto& node = inputs[i].node();
      RENSA_CHECK(node->capture_slot < 0, ValueError, "grad: input ", i, " appears twice");
      node->capture_slot = static_cast<int>(i);
      capture_nodes_.push_back(node.get());
      touch(node);
    }
  }

  void run() {
    count_edges();
    for (auto& [node, gy] : seeds_) {
      accumulate(node, gy);
      if (node->creator && runs(node->creator.get())) push(node->creator);
    }
    // A seed vertex with no other consumers is final now (a leaf or a captured input).
    for (auto& [node, gy] : seeds_) {
      if (node->pending == 0) finalize(node.get());
    }
    while (!queue_.empty()) {
      std::shared_ptr<FunctionNode> f = queue_.top();  // owned: releasing consumers may drop it
      queue_.pop();
      f->in_queue = false;
      process(f.get());
    }
    for (GradHook* h : finished_hooks_) h->backward_finished();
  }

  std::vector<Variable> captured() {
    for (std::size_t i = 0; i < capture_nodes_.size(); ++i) {
      if (captured_[i].is_null() && capture_nodes_[i]->grad_acc) captured_[i] = Variable(capture_nodes_[i]->grad_acc);
    }
    return captured_;
  }

 private:
  // Vertices seen by this backward are kept alive until it ends (they are small; saved arrays are
  // freed with their functions as backward passes).
  void touch(const std::shared_ptr<VariableNode>& n) {
    if (n->epoch != epoch_) {
      n->epoch = epoch_;
      n->pending = 0;
      touched_.push_back(n);
    }
  }

  // Counts, for each vertex, the edges into it from the functions backward will run: every function
  // reachable from the outputs, or, for rensa::grad, only those with a captured input behind them
  // (the graph before the inputs is neither run nor released).
  void count_edges() {
    std::vector<FunctionNode*> stack, reached;
    for (auto& [node, gy] : seeds_) {
      touch(node);
      if (node->creator && node->creator->epoch != epoch_) {
        node->creator->epoch = epoch_;
        stack.push_back(node->creator.get());
      }
    }
    while (!stack.empty()) {
      FunctionNode* f = stack.back();
      stack.pop_back();
      reached.push_back(f);
      for (const auto& in : f->inputs()) {
        if (!in || !in->requires_grad) continue;
        FunctionNode* c = in->creator.get();
        if (c && c->epoch != epoch_) {
          c->epoch = epoch_;
          stack.push_back(c);
        }
      }
    }
    if (!capture_nodes_.empty()) {
      // Creators have lower generations than their consumers: one ascending pass decides each.
      std::sort(reached.begin(), reached.end(),
                [](const FunctionNode* a, const FunctionNode* b) { return a->generation() < b->generation(); });
      std::erase_if(reached, [this](const FunctionNode* f) {
        for (const auto& in : f->inputs()) {
          if (in && in->requires_grad &&
              (captured_here(in.get()) || (in->creator && needed_.count(in->creator.get()) != 0))) {
            needed_.insert(f);
            return false;
          }
        }
        return true;
      });
    }
    for (FunctionNode* f : reached) {
      RENSA_CHECK(!f->released(), ValueError, "backward: the graph through '", f->label(),
                  "' was freed by an earlier backward, which drops what each function saved. To "
                  "backpropagate through it again, pass retain_graph to that earlier backward; to start a "
                  "new graph from a variable computed before it (truncated BPTT), call unchain_backward() on "
                  "the earlier loss, or unchain() on the variable, after its backward");
      for (const auto& in : f->inputs()) {
        if (!in || !in->requires_grad) continue;
        touch(in);
        ++in->pending;
      }
    }
  }

  // Whether `n` is an input of this rensa::grad (a grad run inside a backward, as fused functions do
  // for double backprop, must not mistake the outer one's inputs for its own).
  bool captured_here(const VariableNode* n) const {
    const auto slot = static_cast<std::size_t>(n->capture_slot);
    return n->capture_slot >= 0 && slot < capture_nodes_.size() && capture_nodes_[slot] == n;
  }

  // Whether backward runs `f` (see count_edges).
  bool runs(const FunctionNode* f) const { return capture_nodes_.empty() || needed_.count(f) != 0; }

  void push(const std::shared_ptr<FunctionNode>& f) {
    if (!f->in_queue) {
      f->in_queue = true;
      queue_.push(f);
    }
  }

  void accumulate(const std::shared_ptr<VariableNode>& n, Variable g) {
    touch(n);
    if (g.is_null()) return;
    // g is taken over (moved from process's gxs), so that the caller's copy is released here.
    const Variable sum = n->grad_acc ? add_grads(Variable(std::move(n->grad_acc)), g) : std::move(g);
    n->grad_acc = sum.impl();
  }

  // The vertex's gradient is complete: deliver it (leaf), capture it, or keep it (retain_grad).
  void finalize(VariableNode* n) {
    if (captured_here(n)) {
      if (n->grad_acc) captured_[static_cast<std::size_t>(n->capture_slot)] = Variable(n->grad_acc);
      return;
    }
    if (!capture_nodes_.empty()) return;  // rensa::grad leaves .grad() untouched
    auto var = n->variable.lock();
    if (!var || !n->grad_acc) return;
    const bool leaf = !n->creator;
    if (!leaf && !(retain_grad_ || var->retain_grad)) return;
    Variable g = leaf ? Variable(std::move(n->grad_acc)) : Variable(n->grad_acc);
    if (leaf && var->grad) g = add_grads(Variable(var->grad), g);
    if (!double_backprop_) {
      // A leaf's gradient is updated in place by optimizers and hooks, so it must be contiguous
      // and not shared with any other array (add's backward, for one, passes gy through).
      const Array& a = g.array();
      if (g.creator() || (leaf && (!a.is_contiguous() || a.storage().use_count() > 1))) g = Variable(a.copy());
    }
    var->grad = g.impl();
    if (leaf) {
      var->grad_loss_scale = loss_scale_;
      Variable v(var);
      for (const auto& h : var->hooks) {
        h->grad_final(v);
        if (std::find(finished_hooks_.begin(), finished_hooks_.end(), h.get()) == finished_hooks_.end()) {
          finished_hooks_.push_back(h.get());
        }
      }
    }
  }

  void process(FunctionNode* f) {
    const auto& outs = f->outputs();
    // Most functions have one output and at most a few inputs: avoid heap buffers for them.
    Variable gy_buf[kSmall];
    std::vector<Variable> gy_heap;
    std::span<Variable> gys(gy_buf, outs.size() <= kSmall ? outs.size() : 0);
    if (outs.size() > kSmall) {
      gy_heap.resize(outs.size());
      gys = gy_heap;
    }
    bool any = false;
    for (std::size_t i = 0; i < outs.size(); ++i) {
      auto n = outs[i].lock();
      if (n && n->epoch == epoch_ && n->grad_acc) {
        gys[i] = Variable(n->grad_acc);
        if (!captured_here(n.get()) && !(retain_grad_ || var_retains(n.get()))) n->grad_acc.reset();
        any = true;
      }
    }
    const auto& ins = f->inputs();
    char target_buf[kSmall] = {};
    std::vector<char> target_heap;
    std::span<char> targets(target_buf, ins.size() <= kSmall ? ins.size() : 0);
    if (ins.size() > kSmall) {
      target_heap.assign(ins.size(), 0);
      targets = target_heap;
    }
    for (std::size_t i = 0; i < ins.size(); ++i) targets[i] = ins[i] && ins[i]->requires_grad;

    std::vector<Variable> gxs;
    if (any) {
      for (std::size_t i = 0; i < outs.size(); ++i) {
        if (gys[i].is_null()) gys[i] = Variable(f->zero_grad_output(i));
      }
      ConfigGuard guard = double_backprop_ ? force_backprop_mode() : no_backprop_mode();
      BackwardContext ctx(gys, targets, f->retained_outputs(), outs);
      if (observed_) [[unlikely]] {
        gxs = observed_backward(*f, ctx, gys);
      } else {
        gxs = f->backward(ctx);
      }
      RENSA_CHECK(gxs.size() == ins.size(), ValueError, "backward of '", f->label(), "' returned ", gxs.size(),
                  " gradients for ", ins.size(), " inputs");
    }
    for (std::size_t i = 0; i < ins.size(); ++i) {
      if (!targets[i]) continue;
      const std::shared_ptr<VariableNode>& in = ins[i];  // f holds it until f->release() below
      if (any && !gxs[i].is_null()) {
        RENSA_CHECK(gxs[i].shape() == in->shape && gxs[i].dtype() == in->dtype, ShapeError, "backward of '", f->label(),
                    "' returned a gradient of ", gxs[i].shape(), " ", gxs[i].dtype(), " for input ", i, " of ",
                    in->shape, " ", in->dtype);
        accumulate(in, std::move(gxs[i]));
      }
      if (--in->pending == 0) finalize(in.get());
      if (in->creator && runs(in->creator.get())) push(in->creator);
    }
    if (!retain_graph_) f->release();
  }

  // f's backward between the hooks' backward_preprocess and backward_postprocess (called on
  // unwinding too, with no gradients, so timers stay balanced).
  static std::vector<Variable> observed_backward(FunctionNode& f, const BackwardContext& ctx,
                                                 std::span<const Variable> gys) {
    struct OnUnwind {
      FunctionNode& f;
      std::span<const Variable> gys;
      bool done = false;
      ~OnUnwind() {
        if (!done) detail::backward_end({f, gys, {}});
      }
    };
    detail::backward_begin({f, gys, {}});
    OnUnwind unwind{f, gys};
    std::vector<Variable> gxs = f.backward(ctx);
    unwind.done = true;
    detail::backward_end({f, gys, gxs});
    return gxs;
  }

  static bool var_retains(VariableNode* n) {
    auto v = n->variable.lock();
    return v && v->retain_grad;
  }

  struct Seed {
    std::shared_ptr<VariableNode> node;
    Variable grad;
  };
  bool retain_graph_, double_backprop_, retain_grad_;
  std::optional<double> loss_scale_;
  uint64_t epoch_;
  bool observed_;  // hooks or debug mode, read once per backward
  std::vector<Seed> seeds_;
  std::vector<std::shared_ptr<VariableNode>> touched_;
  std::vector<VariableNode*> capture_nodes_;
  std::unordered_set<const FunctionNode*> needed_;  // rensa::grad: the functions it runs
  std::vector<Variable> captured_;
  std::vector<GradHook*> finished_hooks_;
  std::priority_queue<std::shared_ptr<FunctionNode>, std::vector<std::shared_ptr<FunctionNode>>, NodeOrder> queue_;
};

}  // namespace

void backward(const std::vector<Variable>& outputs, const std::vector<Variable>& grad_outputs,
              const BackwardOptions& options) {
  RENSA_CHECK(!options.loss_scale || (*options.loss_scale > 0 && std::isfinite(*options.loss_scale)), ValueError,
              "backward: loss_scale must be a positive number, got ", options.loss_scale.value_or(0));
  Engine engine(outputs, grad_outputs, options.retain_graph || options.enable_double_backprop,
                options.enable_double_backprop, options.retain_grad, options.loss_scale);
  engine.run();
}

std::vector<Variable> grad(const std::vector<Variable>& outputs, const std::vector<Variable>& inputs,
                           const std::vector<Variable>& grad_outputs, const GradOptions& options) {
  std::vector<Variable> result;
  {
    Engine engine(outputs, grad_outputs, options.retain_graph || options.enable_double_backprop,
                  options.enable_double_backprop, false);
    engine.capture(inputs);
    engine.run();
    result = engine.captured();
  }
  for (std::size_t i = 0; i < result.size(); ++i) {
    if (result[i].is_null() && options.allow_unused_zeros) {
      result[i] = Variable(Array::zeros(inputs[i].shape(), inputs[i].dtype(), inputs[i].device()));
    }
  }
  return result;
}

}  // namespace rensa
