// Static graphs. A trace runs the forward eagerly under a Capture, which records every kernel call
// (with the Arrays it used, so the same buffers are written again), then traces the backward at
// once with rensa::grad on stand-in output gradients, recording its kernels without running them:
// at that point no outer backward is running, so the inner engine cannot disturb the bookkeeping of
// parameters an outer backward shares, and the forward's buffers (which the memory plan lets the
// backward's temporaries reuse) still hold what the call's own backward will read. A replay copies
// the inputs into the trace's input buffers and runs the steps; backward through its outputs copies
// the output gradients in and runs the backward steps.
#include "rensa/core/static_graph.h"

#include <algorithm>
#include <sstream>
#include <unordered_set>

#include "rensa/core/backend.h"
#include "rensa/core/backward.h"
#include "rensa/core/config.h"
#include "rensa/core/function_node.h"
#include "src/core/static_capture.h"

namespace rensa {
namespace {

struct InputKey {
  Shape shape;
  Dtype dtype;
  Device device;
  bool requires_grad;
  bool operator==(const InputKey&) const = default;
};

// What selects a schedule: the inputs and the settings a forward may branch on.
struct Key {
  bool train;
  bool enable_backprop;
  Dtype dtype;
  Device device;
  std::vector<InputKey> inputs;
  bool operator==(const Key&) const = default;
};

std::string describe(const InputKey& k) {
  std::ostringstream os;
  os << k.shape << " " << dtype_name(k.dtype) << " on " << k.device << (k.requires_grad ? " requiring grad" : "");
  return os.str();
}

// The first difference of `now` from `traced`, in words.
std::string difference(const Key& now, const Key& traced) {
  std::ostringstream os;
  if (now.inputs.size() != traced.inputs.size()) {
    os << now.inputs.size() << " inputs where the trace had " << traced.inputs.size();
  } else if (now.train != traced.train || now.enable_backprop != traced.enable_backprop) {
    os << "Config::train " << now.train << " and enable_backprop " << now.enable_backprop << " where the trace had "
       << traced.train << " and " << traced.enable_backprop;
  } else if (now.dtype != traced.dtype || now.device != traced.device) {
    os << "Config::dtype " << dtype_name(now.dtype) << " and device " << now.device << " where the trace had "
       << dtype_name(traced.dtype) << " and " << traced.device;
  } else {
    for (std::size_t i = 0; i < now.inputs.size(); ++i) {
      if (now.inputs[i] == traced.inputs[i]) continue;
      os << "input " << i << " is " << describe(now.inputs[i]) << " where the trace had " << describe(traced.inputs[i]);
      break;
    }
  }
  return os.str();
}

struct Schedule {
  std::string name;
  Key key;
  std::vector<Variable> inputs;  // the buffers the forward read its inputs from
  std::vector<Variable> params;  // leaves requiring grad behind the outputs
  std::vector<const detail::Storage*> param_storage;
  std::vector<Array> outputs;
  std::vector<std::function<void()>> forward, backward;
  std::vector<std::string> functions;  // applied by the traced forward, for the checks
  std::vector<Array> grad_outputs;     // where output gradients are copied (null: not differentiable)
  std::vector<Array> grads;            // per input requiring grad, then per parameter (null: none)
  std::size_t buffer_bytes = 0;
  bool busy = false;  // a recorded forward's backward has not run yet
  uint64_t last_used = 0;

  bool params_moved() const {
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (params[i].array().storage().get() != param_storage[i]) return true;
    }
    return false;
  }
};

class StaticNode final : public FunctionNode {
 public:
  explicit StaticNode(std::shared_ptr<Schedule> schedule) : schedule_(std::move(schedule)) { schedule_->busy = true; }
  ~StaticNode() override { free(); }
  const char* label() const override { return schedule_ ? schedule_->name.c_str() : "static_graph"; }
  void release_saved() override { free(); }

  std::vector<Variable> backward(const BackwardContext& ctx) override {
    Schedule& s = *schedule_;
    RENSA_CHECK(!config().enable_backprop, NotImplementedError, s.name,
                ": double backprop through a static graph is not supported; call the forward eagerly for it");
    for (std::size_t i = 0; i < s.grad_outputs.size(); ++i) {
      if (!s.grad_outputs[i].is_null()) s.grad_outputs[i].assign(ctx.grad_output(i).array());
    }
    for (const auto& step : s.backward) step();
    std::vector<Variable> gx(s.inputs.size() + s.params.size());
    std::size_t k = 0;
    for (std::size_t i = 0; i < s.inputs.size(); ++i) {
      if (!s.key.inputs[i].requires_grad) continue;
      // A copy: an input's gradient may be kept (retain_grad) past the next replay.
      if (!s.grads[k].is_null()) gx[i] = Variable(s.grads[k].copy());
      ++k;
    }
    // The engine copies a parameter's gradient out of the shared buffer before keeping it.
    for (std::size_t j = 0; j < s.params.size(); ++j, ++k) {
      if (!s.grads[k].is_null()) gx[s.inputs.size() + j] = Variable(s.grads[k]);
    }
    return gx;
  }

 private:
  void free() {
    if (schedule_) schedule_->busy = false;
    schedule_.reset();
  }
  std::shared_ptr<Schedule> schedule_;
};

// The leaves requiring grad behind `outputs`, other than `inputs`. ValueError when the forward used
// a variable computed outside it (a node created before the trace began).
std::vector<Variable> find_params(const std::string& name, const std::vector<Variable>& outputs,
                                  const std::vector<Variable>& inputs, uint64_t first_node) {
  std::unordered_set<const detail::VariableNode*> seen;
  for (const auto& x : inputs) seen.insert(x.node().get());
  std::unordered_set<const FunctionNode*> visited;
  std::vector<Variable> params;
  std::vector<const FunctionNode*> stack;
  auto visit = [&](const Variable& v) {
    const auto& n = v.node();
    if (n->creator) {
      if (visited.insert(n->creator.get()).second) stack.push_back(n->creator.get());
    } else if (n->requires_grad && seen.insert(n.get()).second) {
      params.push_back(v);
    }
  };
  for (const auto& y : outputs) visit(y);
  while (!stack.empty()) {
    const FunctionNode* f = stack.back();
    stack.pop_back();
    RENSA_CHECK(f->sequence() >= first_node, ValueError, name, ": the forward uses a variable computed outside it (by '",
                f->label(), "'); pass it as an input");
    for (const auto& in : f->inputs()) {
      if (!in || !in->requires_grad) continue;
      if (in->creator) {
        if (visited.insert(in->creator.get()).second) stack.push_back(in->creator.get());
        continue;
      }
      if (!seen.insert(in.get()).second) continue;
      auto impl = in->variable.lock();
      RENSA_CHECK(impl != nullptr, ValueError, name, ": a leaf of the traced graph was dropped during the trace");
      params.push_back(Variable(impl));
    }
  }
  return params;
}

// Traces `s.backward` into `capture` (dry) with stand-in output gradients: a schedule cannot depend
// on values.
void trace_backward(Schedule& s, const std::vector<Variable>& outputs, detail::Capture& capture) {
  std::vector<Variable> ys, gys, targets;
  s.grad_outputs.assign(outputs.size(), Array());
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const Variable& y = outputs[i];
    if (!is_floating(y.dtype()) || !(y.creator() || y.requires_grad())) continue;
    s.grad_outputs[i] = Array::empty(y.shape(), y.dtype(), y.device());
    ys.push_back(y);
    gys.push_back(Variable(s.grad_outputs[i]));
  }
  for (std::size_t i = 0; i < s.inputs.size(); ++i) {
    if (s.key.inputs[i].requires_grad) targets.push_back(s.inputs[i]);
  }
  targets.insert(targets.end(), s.params.begin(), s.params.end());
  s.grads.assign(targets.size(), Array());
  if (ys.empty() || targets.empty()) return;
  GradOptions options;
  options.allow_unused_zeros = false;
  std::vector<Variable> g;
  {
    detail::CaptureScope scope(capture);
    g = grad(ys, targets, gys, options);
  }
  for (std::size_t k = 0; k < g.size(); ++k) {
    if (!g[k].is_null()) s.grads[k] = g[k].array();
  }
}

}  // namespace

struct StaticGraph::Impl {
  Forward forward;
  StaticGraphOptions options;
  std::vector<std::shared_ptr<Schedule>> schedules;
  StaticGraphStats counts;
  uint64_t clock = 0;
  bool warmed_up = false;

  Key make_key(const std::vector<Variable>& inputs) const {
    const Config& cfg = config();
    Key key{cfg.train, cfg.enable_backprop, cfg.dtype, cfg.device, {}};
    key.inputs.reserve(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const Variable& x = inputs[i];
      RENSA_CHECK(!x.is_null(), ValueError, options.name, ": input ", i, " is null");
      key.inputs.push_back({x.shape(), x.dtype(), x.device(), x.requires_grad()});
    }
    return key;
  }

  std::shared_ptr<Schedule> trace(const std::vector<Variable>& inputs, const Key& key) {
    auto s = std::make_shared<Schedule>();
    s->name = options.name;
    s->key = key;
    for (const auto& x : inputs) {
      s->inputs.emplace_back(x.array().copy(), x.requires_grad());
      s->buffer_bytes += x.array().nbytes();
    }
    const uint64_t first_node = detail::NodeBuilder::next_sequence();
    auto ledger = std::make_shared<detail::Ledger>(options.plan_memory);
    detail::Capture capture(options.name, ledger);
    std::vector<Variable> outputs;
    {
      detail::CaptureScope scope(capture);
      outputs = forward(s->inputs);
    }
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      RENSA_CHECK(!outputs[i].is_null(), ValueError, options.name, ": the forward returned a null output ", i);
      s->outputs.push_back(outputs[i].array());
    }
    s->functions = capture.functions();
    detail::Capture backward(options.name, ledger);
    backward.dry = true;
    if (key.enable_backprop) {
      s->params = find_params(options.name, outputs, s->inputs, first_node);
      for (const auto& p : s->params) s->param_storage.push_back(p.array().storage().get());
      trace_backward(*s, outputs, backward);
    }
    s->forward = std::move(capture.steps);
    s->backward = std::move(backward.steps);
    s->buffer_bytes += ledger->bytes();
    return s;
  }

  // The call's outputs: copies of the schedule's (the next replay rewrites those), recorded as one
  // function of the inputs and parameters when backprop is on.
  std::vector<Variable> finish(const std::shared_ptr<Schedule>& s, const std::vector<Variable>& inputs) {
    std::vector<Array> outs;
    outs.reserve(s->outputs.size());
    for (const auto& y : s->outputs) outs.push_back(y.copy());
    std::vector<Variable> node_inputs = inputs;
    node_inputs.insert(node_inputs.end(), s->params.begin(), s->params.end());
    std::vector<Variable> result;
    if (!config().enable_backprop || s->grads.empty() || !detail::NodeBuilder::any_requires_grad(node_inputs)) {
      for (auto& a : outs) result.emplace_back(std::move(a));
    } else {
      auto node = std::make_shared<StaticNode>(s);
      FunctionNode* raw = node.get();
      result = detail::NodeBuilder::connect(node, node_inputs, std::move(outs), false);
      if (detail::forward_observed()) [[unlikely]]
        detail::forward_recorded(s->name.c_str(), inputs, result, raw);
    }
    return result;
  }

  std::vector<Variable> replay(const std::shared_ptr<Schedule>& s, const std::vector<Variable>& inputs) {
    detail::ForwardEntry entry(s->name.c_str(), std::span<const Variable>(inputs));
    for (std::size_t i = 0; i < inputs.size(); ++i) s->inputs[i].array().assign(inputs[i].array());
    for (const auto& step : s->forward) step();
    return finish(s, inputs);
  }

  // Runs the forward eagerly and compares the functions it applies with the trace's.
  std::vector<Variable> check(const std::vector<Variable>& inputs, const Schedule& s, int64_t call) {
    ++counts.eager_calls;
    detail::FunctionLog log(options.name);
    std::vector<Variable> outputs;
    {
      FunctionHookScope scope(log);
      outputs = forward(inputs);
    }
    const auto& now = log.functions();
    const auto& traced = s.functions;
    const std::size_t n = std::min(now.size(), traced.size());
    std::size_t k = 0;
    while (k < n && now[k] == traced[k]) ++k;
    if (k == n && now.size() == traced.size()) return outputs;
    std::ostringstream os;
    os << options.name << ": call " << call << " ";
    if (k < n) {
      os << "applied '" << now[k] << "' as function " << k << " where the trace applied '" << traced[k] << "'";
    } else if (now.size() < traced.size()) {
      os << "ended after " << now.size() << " functions where the trace went on with '" << traced[k] << "'";
    } else {
      os << "applied '" << now[k] << "' as function " << k << " after the trace's last";
    }
    os << "; the forward's graph differs from its trace, so a replay would compute something else";
    if (!options.retrace_on_mismatch) RENSA_THROW(ValueError, os.str(), " (retrace_on_mismatch traces it again)");
    // By a copy of the key: erasing may destroy `s`.
    std::erase_if(schedules, [key = s.key](const auto& other) { return other->key == key; });
    return outputs;
  }

  void evict() {
    while (schedules.size() > options.max_schedules) {
      auto oldest = schedules.end();
      for (auto it = schedules.begin(); it != schedules.end(); ++it) {
        if (!(*it)->busy && (oldest == schedules.end() || (*it)->last_used < (*oldest)->last_used)) oldest = it;
      }
      if (oldest == schedules.end()) return;
      schedules.erase(oldest);
    }
  }

  std::vector<Variable> call(const std::vector<Variable>& inputs) {
    const int64_t n = counts.traces + counts.replays + counts.eager_calls + 1;
    // The first call runs eagerly: lazy initialization and other one-time setup belong to no
    // schedule (a trace would record an initializer's draws, and every replay would redraw them).
    const Key key = make_key(inputs);
    if (!warmed_up || (options.eager_in_test && !config().train)) {
      warmed_up = true;
      ++counts.eager_calls;
      return forward(inputs);
    }
    // A parameter given a new array (to_device, a lazy link re-initialized) invalidates every
    // schedule that reads it.
    std::erase_if(schedules, [](const auto& s) { return s->params_moved(); });
    std::shared_ptr<Schedule> match;
    const Schedule* known = nullptr;
    for (const auto& s : schedules) {
      if (!(s->key == key)) continue;
      known = s.get();
      if (!s->busy) {
        match = s;
        break;
      }
    }
    if (!known && !schedules.empty() && !options.retrace_on_new_inputs) {
      RENSA_THROW(ValueError, options.name, ": ", difference(key, schedules.front()->key),
                  " (retrace_on_new_inputs traces a schedule for each)");
    }
    if (known && (config().debug || (options.check_every > 0 && n % options.check_every == 0))) {
      return check(inputs, *known, n);
    }
    if (!match) {
      match = trace(inputs, key);
      schedules.push_back(match);
      ++counts.traces;
      match->last_used = ++clock;
      std::vector<Variable> result = finish(match, inputs);
      evict();
      return result;
    }
    ++counts.replays;
    match->last_used = ++clock;
    return replay(match, inputs);
  }
};

StaticGraph::StaticGraph(Forward forward, StaticGraphOptions options) : impl_(std::make_shared<Impl>()) {
  RENSA_CHECK(forward != nullptr, ValueError, options.name, ": the forward is empty");
  RENSA_CHECK(options.check_every >= 0, ValueError, options.name, ": check_every must be >= 0, got ",
              options.check_every);
  RENSA_CHECK(options.max_schedules >= 1, ValueError, options.name, ": max_schedules must be >= 1");
  impl_->forward = std::move(forward);
  impl_->options = std::move(options);
}

StaticGraph::StaticGraph(std::function<Variable(const Variable&)> forward, StaticGraphOptions options)
    : StaticGraph(forward == nullptr ? Forward()
                                     : Forward([f = std::move(forward)](const std::vector<Variable>& xs) {
                                         return std::vector<Variable>{f(xs.at(0))};
                                       }),
                  std::move(options)) {}

StaticGraph::~StaticGraph() = default;

std::vector<Variable> StaticGraph::operator()(const std::vector<Variable>& inputs) { return impl_->call(inputs); }

Variable StaticGraph::operator()(const Variable& x) {
  std::vector<Variable> y = impl_->call({x});
  RENSA_CHECK(y.size() == 1, ValueError, impl_->options.name, ": the forward returned ", y.size(),
              " outputs; call it with a vector of inputs to get them all");
  return y[0];
}

void StaticGraph::reset() { impl_->schedules.clear(); }

StaticGraphStats StaticGraph::stats() const {
  StaticGraphStats st = impl_->counts;
  st.schedules = impl_->schedules.size();
  for (const auto& s : impl_->schedules) {
    st.forward_steps += s->forward.size();
    st.backward_steps += s->backward.size();
    st.buffer_bytes += s->buffer_bytes;
  }
  return st;
}

void static_code(const std::function<void()>& fn) {
  RENSA_CHECK(fn != nullptr, ValueError, "static_code: the function is empty");
  // It may read any array it reaches: no buffer it sees may be shared.
  if (detail::capture_open()) detail::current_capture()->ledger->stop_sharing();
  detail::record_and_run(fn);
}

}  // namespace rensa
