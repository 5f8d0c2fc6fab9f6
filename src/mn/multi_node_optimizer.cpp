// The multi-node stage: parameter broadcast, and gradient averaging (blocking, bucketed during
// backward, or double buffered) before the optimizer's own update.
#include "rensa/mn/multi_node_optimizer.h"

#include <algorithm>
#include <iostream>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rensa/core/timeline.h"

namespace rensa::mn {
namespace detail {

/// Readiness of one bucket of the plan in the current backward.
struct BucketState {
  std::vector<char> ready;  // per param: its gradient is final in the current backward
  std::size_t n_ready = 0;
};

/// Gradients being averaged, with the parameters they belong to.
struct InFlight {
  Communicator::Request request;
  std::vector<Variable> params;
  std::vector<Array> grads;
  std::vector<std::optional<double>> scales;  // the loss scale each gradient carries (double buffering)
};

struct MultiNodeStageState {
  // One hook observes every parameter; it lives as long as the stage.
  std::shared_ptr<GradHook> hook;
  // The bucket plan, built for the initialized parameters listed in plan_key (namedparams order).
  std::vector<GradientBucket> buckets;
  std::vector<BucketState> readiness;
  std::unordered_map<VariableId, std::pair<std::size_t, std::size_t>> where;
  std::vector<VariableId> plan_key;
  // Initialized parameters as of the last broadcast.
  std::vector<VariableId> broadcast_key;
  // The current step: hooks launch buckets only while armed; own_backward tells after_backward
  // that update(loss_fn) ran the backward (its new parameters were broadcast after the forward).
  bool armed = false;
  bool own_backward = false;
  std::size_t next_bucket = 0;
  std::size_t launched_during_backward = 0;
  std::vector<InFlight> in_flight;
  // Double buffering: the previous step's gradients (in flight, or averaged and loaded from a snapshot).
  std::vector<InFlight> pending;
  // Parameters carrying our gradient hook.
  std::vector<Variable> hooked;
};

}  // namespace detail

namespace {

using detail::InFlight;
using detail::MultiNodeStageState;
using ParamKey = std::vector<VariableId>;

ParamKey initialized_params(const Link& link) {
  ParamKey key;
  for (const Variable& p : link.params(false)) key.push_back(p.id());
  return key;
}

// Starts averaging the gradients of `params` (zero-filling missing ones when asked).
void launch(Communicator& comm, MultiNodeStageState& st, const std::vector<Variable>& params, bool zero_fill) {
  InFlight f;
  for (const Variable& p : params) {
    Variable g = p.grad();
    if (g.is_null()) {
      if (!zero_fill) continue;
      g = Variable(Array::zeros(p.shape(), p.dtype(), p.device()));
      p.set_grad(g);
    }
    f.params.push_back(p);
    f.grads.push_back(g.array());
    f.scales.push_back(p.grad_loss_scale());
  }
  if (f.params.empty()) return;
  f.request = comm.start_mean_grad(f.grads);
  st.in_flight.push_back(std::move(f));
}

void launch_bucket(Communicator& comm, MultiNodeStageState& st, std::size_t b, bool zero_fill) {
  timeline::Span span("launch bucket", timeline::Category::other, static_cast<int64_t>(b));
  launch(comm, st, st.buckets[b].params, zero_fill);
}

// Launches every bucket not launched yet, in order.
void launch_rest(Communicator& comm, MultiNodeStageState& st, bool zero_fill) {
  for (; st.next_bucket < st.buckets.size(); ++st.next_bucket) launch_bucket(comm, st, st.next_bucket, zero_fill);
}

void wait_all(std::vector<InFlight>& fs) {
  for (InFlight& f : fs) {
    if (f.request.valid()) f.request.wait();
    f.request = Communicator::Request();
  }
}

// Observes the parameters' gradients during an armed backward and launches full buckets in order.
class MultiNodeGradHook final : public GradHook {
 public:
  MultiNodeGradHook(MultiNodeStageState* state, Communicator comm, bool zero_fill)
      : state_(state), comm_(std::move(comm)), zero_fill_(zero_fill) {}

  void grad_final(const Variable& variable) override {
    MultiNodeStageState& st = *state_;
    if (!st.armed) return;
    const auto it = st.where.find(variable.id());
    if (it == st.where.end()) return;
    auto [b, i] = it->second;
    detail::BucketState& bucket = st.readiness[b];
    if (bucket.ready[i] != 0) return;
    bucket.ready[i] = 1;
    ++bucket.n_ready;
    // Strictly in bucket order, so every rank issues the same sequence of requests.
    while (st.next_bucket < st.buckets.size() &&
           st.readiness[st.next_bucket].n_ready == st.buckets[st.next_bucket].params.size()) {
      launch_bucket(comm_, st, st.next_bucket, zero_fill_);
      ++st.next_bucket;
      ++st.launched_during_backward;
    }
  }

 private:
  MultiNodeStageState* state_;
  Communicator comm_;
  bool zero_fill_;
};

}  // namespace

std::vector<GradientBucket> plan_gradient_buckets(const Link& target, int64_t bucket_cap) {
  RENSA_CHECK(bucket_cap > 0, ValueError, "plan_gradient_buckets: bucket_cap must be positive, got ", bucket_cap);
  std::vector<GradientBucket> buckets;
  const auto named = target.namedparams(false);
  for (auto it = named.rbegin(); it != named.rend(); ++it) {
    const Variable& p = it->second;
    const int64_t nbytes = p.size() * static_cast<int64_t>(itemsize(p.dtype()));
    if (buckets.empty() || buckets.back().bytes + nbytes > bucket_cap) buckets.emplace_back();
    GradientBucket& b = buckets.back();
    b.paths.push_back(it->first);
    b.params.push_back(p);
    b.elements += p.size();
    b.bytes += nbytes;
  }
  return buckets;
}

MultiNodeStage::MultiNodeStage(Communicator comm, MultiNodeOptimizerOptions options)
    : comm_(std::move(comm)), options_(options), state_(std::make_unique<MultiNodeStageState>()) {
  RENSA_CHECK(comm_.valid(), ValueError, "create_multi_node_optimizer: null communicator");
  RENSA_CHECK(options_.bucket_cap > 0, ValueError, "create_multi_node_optimizer: bucket_cap must be positive, got ",
              options_.bucket_cap);
  state_->hook = std::make_shared<MultiNodeGradHook>(state_.get(), comm_, options_.zero_fill);
}

MultiNodeStage::~MultiNodeStage() {
  MultiNodeStageState& st = *state_;
  for (auto* fs : {&st.pending, &st.in_flight}) {
    for (InFlight& f : *fs) {
      try {
        if (f.request.valid()) f.request.wait();
      } catch (const std::exception& e) {
        std::cerr << "MultiNodeStage: gradient averaging failed while shutting down: " << e.what() << '\n';
      }
    }
  }
  for (const Variable& p : st.hooked) p.remove_grad_hook(st.hook.get());
}

void MultiNodeStage::on_setup(optimizers::Optimizer& optimizer) {
  MultiNodeStageState& st = *state_;
  wait_all(st.in_flight);
  wait_all(st.pending);
  st.in_flight.clear();
  st.pending.clear();
  st.own_backward = false;
  Link& link = *optimizer.target();
  comm_.bcast_data(link);
  st.broadcast_key = initialized_params(link);
  st.plan_key.clear();
  st.buckets.clear();
  st.where.clear();
}

bool MultiNodeStage::broadcast_new_params(Link& target) {
  MultiNodeStageState& st = *state_;
  ParamKey key = initialized_params(target);
  if (key == st.broadcast_key) return false;
  comm_.bcast_data(target);
  st.broadcast_key = std::move(key);
  return true;
}

bool MultiNodeStage::after_forward(optimizers::Optimizer& optimizer) {
  // The forward ran with this rank's own initial values of new parameters: running it again with
  // rank 0's makes every rank's gradient belong to the same model.
  return broadcast_new_params(*optimizer.target());
}

void MultiNodeStage::plan_buckets(Link& target) {
  MultiNodeStageState& st = *state_;
  // Hooks go on every initialized parameter (parameters may be added after setup) and the plan
  // follows the initialized set.
  const ParamKey key = initialized_params(target);
  if (key != st.plan_key) {
    st.buckets = plan_gradient_buckets(target, options_.bucket_cap);
    st.where.clear();
    for (std::size_t b = 0; b < st.buckets.size(); ++b) {
      for (std::size_t i = 0; i < st.buckets[b].params.size(); ++i) {
        const Variable& p = st.buckets[b].params[i];
        st.where[p.id()] = {b, i};
        const auto& hooks = p.grad_hooks();
        if (std::find(hooks.begin(), hooks.end(), st.hook) == hooks.end()) {
          p.add_grad_hook(st.hook);
          st.hooked.push_back(p);
        }
      }
    }
    st.plan_key = key;
  }
  st.readiness.resize(st.buckets.size());
  for (std::size_t b = 0; b < st.buckets.size(); ++b) {
    st.readiness[b].ready.assign(st.buckets[b].params.size(), 0);
    st.readiness[b].n_ready = 0;
  }
  st.next_bucket = 0;
  st.launched_during_backward = 0;
}

void MultiNodeStage::around_backward(optimizers::Optimizer& optimizer, const std::function<void()>& backward) {
  MultiNodeStageState& st = *state_;
  if (options_.overlap) {
    plan_buckets(*optimizer.target());
    st.armed = true;
  }
  try {
    backward();
  } catch (...) {
    st.armed = false;
    throw;
  }
  st.armed = false;
  st.own_backward = true;
}

bool MultiNodeStage::after_backward(optimizers::Optimizer& optimizer) {
  Link& target = *optimizer.target();
  const bool own_backward = std::exchange(state_->own_backward, false);
  if (!own_backward && broadcast_new_params(target)) {
    // This step's gradients were computed with other ranks' values of the new parameters.
    target.cleargrads();
    return false;
  }
  return average(target, own_backward && options_.overlap);
}

bool MultiNodeStage::average(Link& target, bool overlapped) {
  MultiNodeStageState& st = *state_;
  if (!options_.double_buffering) {
    if (overlapped) {
      launch_rest(comm_, st, options_.zero_fill);
      wait_all(st.in_flight);
      st.in_flight.clear();
    } else {
      comm_.multi_node_mean_grad(target, options_.zero_fill);
    }
    return true;
  }
  // Double buffering: this step's gradients start averaging now and are applied at the next step.
  if (overlapped) {
    launch_rest(comm_, st, options_.zero_fill);
  } else {
    const auto named = target.namedparams(false);
    std::vector<Variable> params;
    params.reserve(named.size());
    for (auto it = named.rbegin(); it != named.rend(); ++it) params.push_back(it->second);
    launch(comm_, st, params, options_.zero_fill);
  }
  std::vector<InFlight> previous = std::move(st.pending);
  st.pending = std::move(st.in_flight);
  st.in_flight.clear();
  // Nothing may touch the gradients in flight: the parameters see the previous step's instead.
  target.cleargrads();
  if (previous.empty()) return false;
  wait_all(previous);
  for (InFlight& f : previous) {
    for (std::size_t i = 0; i < f.params.size(); ++i) {
      const Variable& p = f.params[i];
      const Array& g = f.grads[i];
      // Only gradients loaded from a snapshot can disagree: averaged ones were taken from p itself.
      const bool initialized = !p.array().is_null();
      RENSA_CHECK(
          initialized && p.shape() == g.shape() && p.dtype() == g.dtype(), ValueError,
          "MultiNodeStage: the pending gradient of parameter '", p.name(), "' is ", g.shape(), " ", g.dtype(),
          " but the parameter is ",
          initialized ? to_string(p.shape()) + " " + std::string(dtype_name(p.dtype())) : std::string("uninitialized"),
          " (was the snapshot written for another model?)");
      p.set_grad(Variable(g));
      p.set_grad_loss_scale(f.scales[i]);  // the scale of its own step's backward
    }
  }
  return true;
}

void MultiNodeStage::serialize(optimizers::Optimizer& optimizer, serializers::Serializer& s) {
  Link* target = optimizer.target();
  if (!options_.double_buffering || target == nullptr) return;
  MultiNodeStageState& st = *state_;
  serializers::Serializer& ms = s.child("_multi_node");
  if (!s.is_loading()) {
    // The averaged gradients to apply at the next update, by parameter path.
    wait_all(st.pending);
    std::unordered_map<VariableId, std::pair<Array, std::optional<double>>> grads;
    for (InFlight& f : st.pending) {
      for (std::size_t i = 0; i < f.params.size(); ++i) grads[f.params[i].id()] = {f.grads[i], f.scales[i]};
    }
    int64_t n = static_cast<int64_t>(grads.size());
    ms.scalar("n_pending", n);
    for (const auto& [path, p] : target->namedparams(false)) {
      const auto it = grads.find(p.id());
      if (it == grads.end()) continue;
      ms.child("pending").array(path.substr(1), it->second.first);
      if (double scale = it->second.second.value_or(0); scale > 0)
        ms.child("pending_loss_scale").scalar(path.substr(1), scale);
    }
    return;
  }
  wait_all(st.in_flight);
  wait_all(st.pending);
  st.in_flight.clear();
  st.pending.clear();
  if (!ms.contains("n_pending")) return;
  int64_t n = 0;
  ms.scalar("n_pending", n);
  if (n == 0) return;
  // Lazily initialized parameters may still be uninitialized here (the updater loads the optimizer
  // before the model): a gradient then takes its shape from the file and is matched against the
  // parameter when it is applied, in average().
  InFlight f;
  serializers::Serializer& ps = ms.child("pending");
  for (const auto& [path, p] : target->namedparams(true)) {
    if (!ps.contains(path.substr(1))) continue;
    const bool initialized = !p.array().is_null();
    Array g;
    if (initialized) g = Array::zeros(p.shape(), p.dtype(), p.device());
    ps.array(path.substr(1), g);
    if (!initialized) g = g.copy();  // an adopted array may alias the deserializer's
    std::optional<double> scale;
    if (serializers::Serializer& ss = ms.child("pending_loss_scale"); ss.contains(path.substr(1))) {
      double v = 0;
      ss.scalar(path.substr(1), v);
      scale = v;
    }
    f.params.push_back(p);
    f.grads.push_back(std::move(g));
    f.scales.push_back(scale);
  }
  RENSA_CHECK(static_cast<int64_t>(f.params.size()) == n, ValueError, "MultiNodeStage::serialize: ", n,
              " pending gradients were saved but ", f.params.size(), " match parameters of the model");
  st.pending.push_back(std::move(f));
}

std::size_t MultiNodeStage::num_buckets() const {
  return state_->buckets.size();
}
const std::vector<GradientBucket>& MultiNodeStage::buckets() const {
  return state_->buckets;
}
std::size_t MultiNodeStage::buckets_launched_during_backward() const {
  return state_->launched_during_backward;
}

MultiNodeStage& add_multi_node_stage(optimizers::Optimizer& optimizer, Communicator comm,
                                     MultiNodeOptimizerOptions options) {
  RENSA_CHECK(dynamic_cast<MultiNodeStage*>(optimizer.stage()) == nullptr, ValueError,
              "create_multi_node_optimizer: the optimizer is already a multi-node optimizer");
  auto stage = std::make_unique<MultiNodeStage>(std::move(comm), options);
  MultiNodeStage& ref = *stage;
  optimizer.set_stage(std::move(stage));
  return ref;
}

}  // namespace rensa::mn
