// The multi-node optimizer: parameter broadcast, gradient averaging (blocking, bucketed during
// backward, or double buffered), then the actual optimizer's update.
#include "rensa/mn/multi_node_optimizer.h"

#include <iostream>
#include <unordered_map>
#include <utility>

#include "rensa/core/error.h"

namespace rensa::mn {
namespace detail {

/// A group of gradients averaged by one start_mean_grad call.
struct Bucket {
  std::vector<Variable> params;  // reverse namedparams() order
  std::vector<char> ready;       // per param: its gradient is final in the current backward
  std::size_t n_ready = 0;
};

/// Gradients being averaged, with the parameters they belong to.
struct InFlight {
  Communicator::Request request;
  std::vector<Variable> params;
  std::vector<Array> grads;
};

struct MultiNodeOptimizerState {
  // The bucket plan, built for the initialized parameters listed in plan_key (namedparams order).
  std::vector<Bucket> buckets;
  std::unordered_map<const ::rensa::detail::VariableImpl*, std::pair<std::size_t, std::size_t>> where;
  std::vector<const ::rensa::detail::VariableImpl*> plan_key;
  // Initialized parameters as of the last broadcast.
  std::vector<const ::rensa::detail::VariableImpl*> broadcast_key;
  // The current step.
  bool armed = false;
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
using detail::MultiNodeOptimizerState;
using ParamKey = std::vector<const ::rensa::detail::VariableImpl*>;

ParamKey initialized_params(const Link& link) {
  ParamKey key;
  for (const Variable& p : link.params(false)) key.push_back(p.impl().get());
  return key;
}

// Starts averaging the gradients of `params` (zero-filling missing ones when asked).
void launch(Communicator& comm, MultiNodeOptimizerState& st, std::vector<Variable> params, bool zero_fill) {
  InFlight f;
  for (Variable& p : params) {
    Variable g = p.grad();
    if (g.is_null()) {
      if (!zero_fill) continue;
      g = Variable(Array::zeros(p.shape(), p.dtype(), p.device()));
      p.set_grad(g);
    }
    f.params.push_back(p);
    f.grads.push_back(g.array());
  }
  if (f.params.empty()) return;
  f.request = comm.start_mean_grad(f.grads);
  st.in_flight.push_back(std::move(f));
}

void launch_bucket(Communicator& comm, MultiNodeOptimizerState& st, std::size_t b, bool zero_fill) {
  launch(comm, st, st.buckets[b].params, zero_fill);
}

// Launches every bucket not launched yet, in order.
void launch_rest(Communicator& comm, MultiNodeOptimizerState& st, bool zero_fill) {
  for (; st.next_bucket < st.buckets.size(); ++st.next_bucket) launch_bucket(comm, st, st.next_bucket, zero_fill);
}

void wait_all(std::vector<InFlight>& fs) {
  for (InFlight& f : fs) {
    if (f.request.valid()) f.request.wait();
    f.request = Communicator::Request();
  }
}

}  // namespace

/// Observes the parameters' gradients during an armed backward and launches full buckets in order.
class MultiNodeGradHook final : public GradHook {
 public:
  MultiNodeGradHook(MultiNodeOptimizerState* state, Communicator comm, bool zero_fill)
      : state_(state), comm_(std::move(comm)), zero_fill_(zero_fill) {}

  void grad_final(const Variable& variable) override {
    MultiNodeOptimizerState& st = *state_;
    if (!st.armed) return;
    const auto it = st.where.find(variable.impl().get());
    if (it == st.where.end()) return;
    auto [b, i] = it->second;
    detail::Bucket& bucket = st.buckets[b];
    if (bucket.ready[i] != 0) return;
    bucket.ready[i] = 1;
    ++bucket.n_ready;
    // Strictly in bucket order, so every rank issues the same sequence of requests.
    while (st.next_bucket < st.buckets.size() &&
           st.buckets[st.next_bucket].n_ready == st.buckets[st.next_bucket].params.size()) {
      launch_bucket(comm_, st, st.next_bucket, zero_fill_);
      ++st.next_bucket;
      ++st.launched_during_backward;
    }
  }

 private:
  MultiNodeOptimizerState* state_;
  Communicator comm_;
  bool zero_fill_;
};

MultiNodeOptimizer::MultiNodeOptimizer(std::unique_ptr<optimizers::Optimizer> actual, Communicator comm,
                                       MultiNodeOptimizerOptions options)
    : actual_(std::move(actual)),
      comm_(std::move(comm)),
      options_(options),
      state_(std::make_shared<MultiNodeOptimizerState>()) {
  RENSA_CHECK(actual_ != nullptr, ValueError, "create_multi_node_optimizer: null optimizer");
  RENSA_CHECK(comm_.valid(), ValueError, "create_multi_node_optimizer: null communicator");
  RENSA_CHECK(options_.bucket_cap > 0, ValueError, "create_multi_node_optimizer: bucket_cap must be positive, got ",
              options_.bucket_cap);
  RENSA_CHECK(dynamic_cast<MultiNodeOptimizer*>(actual_.get()) == nullptr, ValueError,
              "create_multi_node_optimizer: the optimizer is already a multi-node optimizer");
  optimizer_name_ = "MultiNodeOptimizer";
  sync_counters();
}

MultiNodeOptimizer::~MultiNodeOptimizer() {
  MultiNodeOptimizerState& st = *state_;
  for (auto* fs : {&st.pending, &st.in_flight}) {
    for (InFlight& f : *fs) {
      try {
        if (f.request.valid()) f.request.wait();
      } catch (const std::exception& e) {
        std::cerr << "MultiNodeOptimizer: gradient averaging failed while shutting down: " << e.what() << '\n';
      }
    }
  }
  for (const Variable& p : st.hooked) {
    for (const auto& h : p.impl()->hooks) {
      if (dynamic_cast<MultiNodeGradHook*>(h.get()) != nullptr) {
        p.remove_grad_hook(h.get());
        break;
      }
    }
  }
}

void MultiNodeOptimizer::sync_counters() {
  t_ = actual_->t();
  epoch_ = actual_->epoch();
}

void MultiNodeOptimizer::setup(Link& link) {
  MultiNodeOptimizerState& st = *state_;
  wait_all(st.in_flight);
  wait_all(st.pending);
  st.in_flight.clear();
  st.pending.clear();
  actual_->setup(link);
  target_ = &link;
  comm_.bcast_data(link);
  st.broadcast_key = initialized_params(link);
  st.plan_key.clear();
  st.buckets.clear();
  st.where.clear();
  sync_counters();
}

bool MultiNodeOptimizer::broadcast_new_params() {
  MultiNodeOptimizerState& st = *state_;
  ParamKey key = initialized_params(*target_);
  if (key == st.broadcast_key) return false;
  comm_.bcast_data(*target_);
  st.broadcast_key = std::move(key);
  return true;
}

void MultiNodeOptimizer::update(const std::function<Variable()>& loss_fn) {
  RENSA_CHECK(target_ != nullptr, ValueError, "MultiNodeOptimizer::update: no target; call setup(link) first");
  MultiNodeOptimizerState& st = *state_;
  Variable loss = loss_fn();
  RENSA_CHECK(!loss.is_null(), ValueError, "MultiNodeOptimizer::update: the loss function returned a null variable");
  if (broadcast_new_params()) {
    // The forward ran with this rank's own initial values of the new parameters: run it again with
    // rank 0's, so every rank's gradient belongs to the same model.
    loss = Variable();
    loss = loss_fn();
    RENSA_CHECK(!loss.is_null(), ValueError,
                "MultiNodeOptimizer::update: the loss function returned a null variable");
  }
  const bool overlap = options_.overlap;
  if (overlap) {
    // Hooks go on every initialized parameter (parameters may be added after setup) and the plan
    // follows the initialized set.
    const ParamKey key = initialized_params(*target_);
    if (key != st.plan_key) {
      st.buckets.clear();
      st.where.clear();
      const auto named = target_->namedparams(false);
      int64_t bytes = 0;
      for (auto it = named.rbegin(); it != named.rend(); ++it) {
        const Variable& p = it->second;
        const int64_t nbytes = p.size() * static_cast<int64_t>(itemsize(p.dtype()));
        if (st.buckets.empty() || (!st.buckets.back().params.empty() && bytes + nbytes > options_.bucket_cap)) {
          st.buckets.emplace_back();
          bytes = 0;
        }
        st.where[p.impl().get()] = {st.buckets.size() - 1, st.buckets.back().params.size()};
        st.buckets.back().params.push_back(p);
        bytes += nbytes;
        bool has_hook = false;
        for (const auto& h : p.impl()->hooks) has_hook = has_hook || dynamic_cast<MultiNodeGradHook*>(h.get());
        if (!has_hook) {
          p.add_grad_hook(std::make_shared<MultiNodeGradHook>(&st, comm_, options_.zero_fill));
          st.hooked.push_back(p);
        }
      }
      st.plan_key = key;
    }
    for (detail::Bucket& b : st.buckets) {
      b.ready.assign(b.params.size(), 0);
      b.n_ready = 0;
    }
    st.next_bucket = 0;
    st.launched_during_backward = 0;
  }
  target_->cleargrads();
  st.armed = overlap;
  try {
    loss.backward();
  } catch (...) {
    st.armed = false;
    throw;
  }
  st.armed = false;
  loss = Variable();
  reduce_and_update(overlap);
}

void MultiNodeOptimizer::update() {
  RENSA_CHECK(target_ != nullptr, ValueError, "MultiNodeOptimizer::update: no target; call setup(link) first");
  if (broadcast_new_params()) {
    // This step's gradients were computed with other ranks' values of the new parameters.
    target_->cleargrads();
    return;
  }
  reduce_and_update(false);
}

void MultiNodeOptimizer::reduce_and_update(bool overlapped) {
  MultiNodeOptimizerState& st = *state_;
  if (!options_.double_buffering) {
    if (overlapped) {
      launch_rest(comm_, st, options_.zero_fill);
      wait_all(st.in_flight);
      st.in_flight.clear();
    } else {
      comm_.multi_node_mean_grad(*target_, options_.zero_fill);
    }
    actual_->update();
    sync_counters();
    return;
  }
  // Double buffering: this step's gradients start averaging now and are applied at the next step.
  if (overlapped) {
    launch_rest(comm_, st, options_.zero_fill);
  } else {
    const auto named = target_->namedparams(false);
    std::vector<Variable> params;
    params.reserve(named.size());
    for (auto it = named.rbegin(); it != named.rend(); ++it) params.push_back(it->second);
    launch(comm_, st, std::move(params), options_.zero_fill);
  }
  std::vector<InFlight> previous = std::move(st.pending);
  st.pending = std::move(st.in_flight);
  st.in_flight.clear();
  // Nothing may touch the gradients in flight: the parameters see the previous step's instead.
  target_->cleargrads();
  if (previous.empty()) return;
  wait_all(previous);
  for (InFlight& f : previous) {
    for (std::size_t i = 0; i < f.params.size(); ++i) {
      const Variable& p = f.params[i];
      const Array& g = f.grads[i];
      // Only gradients loaded from a snapshot can disagree: averaged ones were taken from p itself.
      const bool initialized = !p.array().is_null();
      RENSA_CHECK(initialized && p.shape() == g.shape() && p.dtype() == g.dtype(), ValueError,
                  "MultiNodeOptimizer::update: the pending gradient of parameter '", p.name(), "' is ",
                  g.shape(), " ", g.dtype(), " but the parameter is ",
                  initialized ? to_string(p.shape()) + " " + std::string(dtype_name(p.dtype()))
                              : std::string("uninitialized"),
                  " (was the snapshot written for another model?)");
      p.set_grad(Variable(g));
    }
  }
  actual_->update();
  sync_counters();
}

void MultiNodeOptimizer::add_hook(std::shared_ptr<optimizers::OptimizerHook> hook) {
  actual_->add_hook(std::move(hook));
}
void MultiNodeOptimizer::remove_hook(const std::string& name) { actual_->remove_hook(name); }
const std::vector<std::shared_ptr<optimizers::OptimizerHook>>& MultiNodeOptimizer::hooks() const {
  return actual_->hooks();
}
double MultiNodeOptimizer::hyperparam(const std::string& name) const { return actual_->hyperparam(name); }
void MultiNodeOptimizer::set_hyperparam(const std::string& name, double value) {
  actual_->set_hyperparam(name, value);
}
bool MultiNodeOptimizer::has_hyperparam(const std::string& name) const { return actual_->has_hyperparam(name); }
const std::map<std::string, double>& MultiNodeOptimizer::hyperparams() const { return actual_->hyperparams(); }
double MultiNodeOptimizer::lr() const { return actual_->lr(); }
optimizers::UpdateRule* MultiNodeOptimizer::rule(const Variable& param) { return actual_->rule(param); }

void MultiNodeOptimizer::new_epoch() {
  actual_->new_epoch();
  sync_counters();
}

void MultiNodeOptimizer::serialize(serializers::Serializer& s) {
  actual_->serialize(s);
  sync_counters();
  if (!options_.double_buffering || target_ == nullptr) return;
  MultiNodeOptimizerState& st = *state_;
  serializers::Serializer& ms = s.child("_multi_node");
  if (!s.is_loading()) {
    // The averaged gradients to apply at the next update, by parameter path.
    wait_all(st.pending);
    std::unordered_map<const ::rensa::detail::VariableImpl*, Array> grads;
    for (InFlight& f : st.pending) {
      for (std::size_t i = 0; i < f.params.size(); ++i) grads[f.params[i].impl().get()] = f.grads[i];
    }
    int64_t n = static_cast<int64_t>(grads.size());
    ms.scalar("n_pending", n);
    for (const auto& [path, p] : target_->namedparams(false)) {
      const auto it = grads.find(p.impl().get());
      if (it != grads.end()) ms.child("pending").array(path.substr(1), it->second);
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
  // parameter when it is applied, in reduce_and_update.
  InFlight f;
  serializers::Serializer& ps = ms.child("pending");
  for (const auto& [path, p] : target_->namedparams(true)) {
    if (!ps.contains(path.substr(1))) continue;
    const bool initialized = !p.array().is_null();
    Array g;
    if (initialized) g = Array::zeros(p.shape(), p.dtype(), p.device());
    ps.array(path.substr(1), g);
    if (!initialized) g = g.copy();  // an adopted array may alias the deserializer's
    f.params.push_back(p);
    f.grads.push_back(std::move(g));
  }
  RENSA_CHECK(static_cast<int64_t>(f.params.size()) == n, ValueError, "MultiNodeOptimizer::serialize: ", n,
              " pending gradients were saved but ", f.params.size(), " match parameters of the model");
  st.pending.push_back(std::move(f));
}

std::size_t MultiNodeOptimizer::num_buckets() const { return state_->buckets.size(); }
std::size_t MultiNodeOptimizer::buckets_launched_during_backward() const {
  return state_->launched_during_backward;
}

std::unique_ptr<optimizers::UpdateRule> MultiNodeOptimizer::create_update_rule() {
  RENSA_THROW(NotImplementedError, "MultiNodeOptimizer: update rules belong to the actual optimizer");
}

std::unique_ptr<MultiNodeOptimizer> create_multi_node_optimizer(std::unique_ptr<optimizers::Optimizer> optimizer,
                                                                Communicator comm, MultiNodeOptimizerOptions options) {
  return std::make_unique<MultiNodeOptimizer>(std::move(optimizer), std::move(comm), options);
}

}  // namespace rensa::mn
