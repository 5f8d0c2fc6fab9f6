// Static graphs: training through a replayed schedule equals eager training bit for bit (dropout,
// batch normalization, weight decay, loss scaling), replays apply no function, a schedule per input
// shape and configuration, and every way a forward can fail to be static gets a clear error.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "rensa/rensa.h"
#include "rensa/testing/gradient_check.h"
#include "tests/unit/test_util.h"

namespace rensa {
namespace {

namespace F = functions;
namespace L = links;
using test::expect_error;
using test::randn;

// linear -> batch normalization -> relu -> dropout -> linear (initialized at the first call), eager
// or through a StaticGraph.
struct Net : Chain {
  explicit Net(bool use_static, StaticGraphOptions options = {})
      : use_static(use_static), graph([this](const Variable& x) { return body(x); }, std::move(options)) {
    add_link("l1", l1);
    add_link("bn", bn);
    add_link("l2", l2);
  }
  Variable body(const Variable& x) {
    Variable h = F::relu((*bn)((*l1)(x)));
    return (*l2)(F::dropout(h, 0.25));
  }
  Variable forward(const Variable& x) override { return use_static ? graph(x) : body(x); }
  using Chain::forward;
  std::shared_ptr<L::Linear> l1 = std::make_shared<L::Linear>(6, 8, L::LinearOptions{.seed = 1});
  std::shared_ptr<L::BatchNormalization> bn = std::make_shared<L::BatchNormalization>(8);
  std::shared_ptr<L::Linear> l2 = std::make_shared<L::Linear>(3, L::LinearOptions{.seed = 2});  // lazy
  bool use_static;
  StaticGraph graph;
};

struct TrainRun {
  std::vector<double> losses;
  std::vector<Array> params;
  std::vector<Array> persistents;
  StaticGraphStats stats;
};

// Trains a fresh Net for `steps` steps on fixed batches with MomentumSGD, weight decay and (when
// `scale`) a backward loss scale.
TrainRun train(bool use_static, int steps, std::optional<double> scale = std::nullopt) {
  Net net(use_static);
  optimizers::MomentumSGD opt(0.1, 0.9);
  opt.setup(net);
  opt.add_hook(std::make_shared<optimizers::WeightDecay>(1e-3));
  if (scale) opt.loss_scaling(1000, *scale);
  rensa::seed(7);
  TrainRun run;
  for (int i = 0; i < steps; ++i) {
    Variable x(randn({5, 6}, Dtype::float32, 100 + i % 3));
    Array t = Array::from_vector<int32_t>({0, 1, 2, 1, 0}, {5});
    Variable loss = F::softmax_cross_entropy(net(x), t);
    net.cleargrads();
    loss.backward({.loss_scale = scale});
    opt.update();
    run.losses.push_back(loss.array().item<double>());
  }
  for (const auto& [name, p] : net.namedparams()) run.params.push_back(p.array().copy());
  run.persistents.push_back(net.bn->avg_mean().copy());
  run.persistents.push_back(net.bn->avg_var().copy());
  run.stats = net.graph.stats();
  return run;
}

void expect_same_run(const TrainRun& a, const TrainRun& b) {
  ASSERT_EQ(a.losses.size(), b.losses.size());
  for (std::size_t i = 0; i < a.losses.size(); ++i) EXPECT_EQ(a.losses[i], b.losses[i]) << "step " << i;
  ASSERT_EQ(a.params.size(), b.params.size());
  for (std::size_t i = 0; i < a.params.size(); ++i) EXPECT_TRUE(array_equal(a.params[i], b.params[i])) << "param " << i;
  for (std::size_t i = 0; i < a.persistents.size(); ++i) EXPECT_TRUE(array_equal(a.persistents[i], b.persistents[i]));
}

TEST(StaticGraph, TrainsBitForBitAsEager) {
  const TrainRun eager = train(false, 6);
  const TrainRun replayed = train(true, 6);
  expect_same_run(eager, replayed);
  const StaticGraphStats& st = replayed.stats;
  EXPECT_EQ(st.eager_calls, 1);  // the first call (l2's lazy initialization)
  EXPECT_EQ(st.traces, 1);
  EXPECT_EQ(st.replays, 4);
  EXPECT_EQ(st.schedules, 1u);
  EXPECT_GT(st.forward_steps, 5u);
  EXPECT_GT(st.backward_steps, 5u);
  EXPECT_GT(st.buffer_bytes, 0u);
}

TEST(StaticGraph, LossScalingAsEager) { expect_same_run(train(false, 4, 64.0), train(true, 4, 64.0)); }

// Parameters and statistics loaded into an already traced static chain are what its replays read.
TEST(StaticGraph, ContinuesFromASnapshotAsEager) {
  const std::string path = ::testing::TempDir() + "static_graph_snapshot.npz";
  {
    Net trained(true);
    optimizers::MomentumSGD opt(0.1, 0.9);
    opt.setup(trained);
    for (int i = 0; i < 3; ++i) {
      opt.update([&] {
        return F::softmax_cross_entropy(trained(Variable(randn({5, 6}, Dtype::float32, 40 + i))),
                                        Array::from_vector<int32_t>({0, 1, 2, 1, 0}, {5}));
      });
    }
    serializers::save_npz(path, trained);
  }
  auto continue_from_snapshot = [&](Net& net) {
    serializers::load_npz(path, net);
    optimizers::MomentumSGD opt(0.1, 0.9);
    opt.setup(net);
    rensa::seed(3);
    for (int i = 0; i < 3; ++i) {
      opt.update([&] {
        return F::softmax_cross_entropy(net(Variable(randn({5, 6}, Dtype::float32, 50 + i))),
                                        Array::from_vector<int32_t>({2, 1, 0, 1, 2}, {5}));
      });
    }
    TrainRun run;
    for (const auto& [name, p] : net.namedparams()) run.params.push_back(p.array().copy());
    run.persistents = {net.bn->avg_mean().copy(), net.bn->avg_var().copy()};
    return run;
  };
  Net eager(false);
  eager(Variable(randn({5, 6}, Dtype::float32, 1)));  // l2's lazy initialization before loading
  Net replayed(true);
  for (int i = 0; i < 3; ++i) replayed(Variable(randn({5, 6}, Dtype::float32, 1)));  // traced before loading
  ASSERT_EQ(replayed.graph.stats().traces, 1);
  const TrainRun a = continue_from_snapshot(eager), b = continue_from_snapshot(replayed);
  EXPECT_EQ(replayed.graph.stats().traces, 1);
  expect_same_run(a, b);
  std::remove(path.c_str());
}

// A deep MLP: with the memory plan its buffers share blocks, and training is the same as without.
TEST(StaticGraph, MemoryPlanSharesBuffersAndChangesNothing) {
  auto run = [](bool plan, StaticGraphStats* stats) {
    std::vector<Variable> Ws;
    for (int i = 0; i < 6; ++i) Ws.emplace_back(randn({64, 64}, Dtype::float32, 60 + i), true);
    StaticGraph graph(
        [&Ws](const Variable& x) {
          Variable h = x;
          for (const auto& W : Ws) h = F::tanh(F::matmul(h, W));
          return h;
        },
        {.plan_memory = plan});
    for (int step = 0; step < 4; ++step) {
      Variable loss = F::sum(F::square(graph(Variable(randn({32, 64}, Dtype::float32, 70 + step)))));
      for (auto& W : Ws) W.cleargrad();
      loss.backward();
      for (auto& W : Ws) W.array().assign(F::sub(W, F::mul(W.grad(), 0.01)).array());
    }
    *stats = graph.stats();
    std::vector<Array> out;
    for (const auto& W : Ws) out.push_back(W.array().copy());
    return out;
  };
  StaticGraphStats planned, unplanned;
  const auto a = run(true, &planned), b = run(false, &unplanned);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(array_equal(a[i], b[i])) << i;
  EXPECT_LT(planned.buffer_bytes, unplanned.buffer_bytes * 3 / 4);
}

// An array the forward keeps elsewhere is not shared: it holds the latest replay's values.
TEST(StaticGraph, KeptArraysAreNotShared) {
  Variable W(randn({64, 64}, Dtype::float32, 1), true);
  Variable kept;
  auto body = [&W](const Variable& x) { return F::tanh(F::matmul(x, W)); };
  StaticGraph graph([&](const Variable& x) {
    kept = body(x);
    return F::sum(F::square(F::matmul(kept, W)));
  });
  for (int i = 0; i < 4; ++i) {
    const Array x = randn({32, 64}, Dtype::float32, 10 + i);
    graph(Variable(x)).backward();
    EXPECT_TRUE(array_equal(kept.array(), body(Variable(x)).array())) << i;
  }
}

// Counts the functions hooks see.
struct CountHook : FunctionHook {
  std::string name() const override { return "count"; }
  void forward_postprocess(const ForwardCall& call) override { labels.emplace_back(call.label); }
  std::vector<std::string> labels;
};

TEST(StaticGraph, ReplaysApplyNoFunction) {
  Net net(true);
  Variable x(randn({4, 6}, Dtype::float32, 3));
  net(x);
  CountHook hook;
  {
    FunctionHookScope scope(hook);
    net(x);
  }
  EXPECT_GT(hook.labels.size(), 4u);
  hook.labels.clear();
  {
    FunctionHookScope scope(hook);
    net(x);
  }
  EXPECT_EQ(hook.labels, std::vector<std::string>{"static_graph"});
}

TEST(StaticGraph, ScheduleForEachShapeAndMode) {
  Net net(true);
  net(Variable(randn({4, 6}, Dtype::float32, 3)));  // eager
  net(Variable(randn({4, 6}, Dtype::float32, 3)));
  net(Variable(randn({2, 6}, Dtype::float32, 4)));
  net(Variable(randn({4, 6}, Dtype::float32, 5)));
  EXPECT_EQ(net.graph.stats().traces, 2);
  EXPECT_EQ(net.graph.stats().replays, 1);
  // Evaluation (test mode, no graph) is a schedule of its own and matches eager evaluation.
  Array x = randn({3, 6}, Dtype::float32, 6);
  auto test_mode = using_config("train", false);
  auto no_grad = no_backprop_mode();
  Array eager = net.body(Variable(x)).array();
  net(Variable(x));
  Array replayed = net(Variable(x)).array();
  EXPECT_TRUE(array_equal(eager, replayed));
  EXPECT_EQ(net.graph.stats().traces, 3);
  EXPECT_TRUE(net(Variable(x)).creator() == nullptr);
}

TEST(StaticGraph, NewInputsAreAnErrorWhenRetracingIsOff) {
  Net net(true, {.retrace_on_new_inputs = false});
  net(Variable(randn({4, 6}, Dtype::float32, 3)));
  net(Variable(randn({4, 6}, Dtype::float32, 3)));
  expect_error<ValueError>([&] { net(Variable(randn({2, 6}, Dtype::float32, 3))); },
                           {"static_graph", "input 0 is (2, 6) float32", "where the trace had (4, 6) float32"});
}

TEST(StaticGraph, InputGradientMatchesNumerical) {
  Variable W(randn({3, 4}, Dtype::float64, 9), true);
  StaticGraph graph([W](const Variable& x) { return F::tanh(F::matmul(x, W)); });
  // check_backward calls the graph many times on perturbed inputs: each call after the first replays.
  testing::check_backward([&](const Variable& x) { return graph(x); }, randn({2, 3}, Dtype::float64, 10));
  EXPECT_GT(graph.stats().replays, 0);
  // W's gradient through a replay equals the eager one.
  W.cleargrad();
  Variable x(randn({2, 3}, Dtype::float64, 11), true);
  F::sum(graph(x)).backward();
  const Array gx = x.grad().array().copy(), gw = W.grad().array().copy();
  x.cleargrad();
  W.cleargrad();
  F::sum(F::tanh(F::matmul(x, W))).backward();
  EXPECT_TRUE(array_equal(gx, x.grad().array()));
  EXPECT_TRUE(array_equal(gw, W.grad().array()));
}

TEST(StaticGraph, TwoForwardsBeforeOneBackward) {
  Variable W(randn({3, 3}, Dtype::float32, 9), true);
  StaticGraph graph([W](const Variable& x) { return F::relu(F::matmul(x, W)); });
  Array a = randn({2, 3}, Dtype::float32, 1), b = randn({2, 3}, Dtype::float32, 2);
  graph(Variable(a));
  graph(Variable(a));  // traced; its graph dropped at once
  Variable loss = F::add(F::sum(graph(Variable(a))), F::sum(F::square(graph(Variable(b)))));
  loss.backward();
  EXPECT_EQ(graph.stats().schedules, 2u);  // the second forward could not reuse the first's buffers
  const Array g = W.grad().array().copy();
  W.cleargrad();
  auto f = [&](const Array& x) { return F::relu(F::matmul(Variable(x), W)); };
  F::add(F::sum(f(a)), F::sum(F::square(f(b)))).backward();
  EXPECT_TRUE(array_equal(g, W.grad().array()));
}

TEST(StaticGraph, NewParameterArrayRetraces) {
  Net net(true);
  Variable x(randn({4, 6}, Dtype::float32, 3));
  auto test_mode = using_config("train", false);
  net(x);
  net(x);
  net.l1->W().set_array(Array::zeros({8, 6}, Dtype::float32));
  Array replayed = net(x).array();
  EXPECT_EQ(net.graph.stats().traces, 2);
  EXPECT_TRUE(array_equal(replayed, net.body(x).array()));
}

TEST(StaticGraph, StaticCodeRunsOnEveryReplay) {
  int calls = 0;
  double seen = 0;
  StaticGraph graph([&](const Variable& x) {
    Variable y = F::mul(x, 2.0);
    static_code([&calls, &seen, y] {  // y by value: the function outlives this call
      ++calls;
      seen = y.array().to_vector<double>()[0];  // host reads are allowed here
    });
    return y;
  });
  graph(Variable(Array::from_vector<double>({1, 2}, {2})));
  graph(Variable(Array::from_vector<double>({3, 2}, {2})));
  graph(Variable(Array::from_vector<double>({5, 2}, {2})));
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(seen, 10.0);
}

TEST(StaticGraph, HostReadIsAnError) {
  StaticGraph graph([](const Variable& x) {
    Variable y = F::relu(x);
    const double first = y.array().to_vector<double>()[0];
    return F::mul(y, first);
  });
  graph(Variable(randn({2})));  // the first call is eager
  expect_error<ValueError>([&] { graph(Variable(randn({2}))); },
                           {"static_graph: code after 'relu' reads the values of an array (2,) float64", "static_code"});
  // A constant made on the host inside the forward is fine.
  StaticGraph constant([](const Variable& x) { return F::add(x, Variable(Array::from_vector<double>({1, 2}, {2}))); });
  constant(Variable(randn({2})));
  constant(Variable(randn({2})));
  EXPECT_TRUE(array_equal(constant(Variable(Array::zeros({2}, Dtype::float64))).array(),
                          Array::from_vector<double>({1, 2}, {2})));
}

TEST(StaticGraph, OutsideVariableIsAnError) {
  Variable W(randn({2}), true);
  Variable outside = F::exp(W);
  StaticGraph graph([&](const Variable& x) { return F::mul(x, outside); });
  graph(Variable(randn({2})));
  expect_error<ValueError>([&] { graph(Variable(randn({2}))); },
                           {"static_graph: the forward uses a variable computed outside it (by 'exp')", "input"});
}

TEST(StaticGraph, CheckFindsDifferentControlFlow) {
  bool branch = false;
  auto forward = [&](const Variable& x) { return branch ? F::tanh(x) : F::relu(x); };
  StaticGraph graph(forward, {.name = "net", .check_every = 1});
  Variable x(randn({3}));
  graph(x);
  graph(x);
  graph(x);  // checked: the same functions
  branch = true;
  expect_error<ValueError>([&] { graph(x); },
                           {"net: call 4 applied 'tanh' as function 0 where the trace applied 'relu'"});
  StaticGraph retracing(forward, {.check_every = 1, .retrace_on_mismatch = true});
  branch = false;
  retracing(x);
  retracing(x);
  branch = true;
  EXPECT_TRUE(array_equal(retracing(x).array(), F::tanh(x).array()));  // the eager call's outputs
  EXPECT_TRUE(array_equal(retracing(x).array(), F::tanh(x).array()));  // traced again
  EXPECT_EQ(retracing.stats().traces, 2);
}

// A mismatch drops every schedule of its key (here two, with another key's between them) and keeps
// the others.
TEST(StaticGraph, MismatchDropsEveryScheduleOfItsKey) {
  bool branch = false;
  Variable W(randn({3}), true);
  StaticGraph graph([&](const Variable& x) { return branch ? F::tanh(F::mul(x, W)) : F::relu(F::mul(x, W)); },
                    {.check_every = 6, .retrace_on_mismatch = true});
  const Variable a(randn({3}, Dtype::float64, 1)), b(randn({2, 3}, Dtype::float64, 2));
  graph(a);                // 1: eager
  graph(a);                // 2: schedule A
  graph(b);                // 3: schedule B, another shape
  {
    Variable pending = graph(a);  // 4: A, its backward pending
    graph(a);                     // 5: A is busy: schedule C, A's key
    EXPECT_EQ(graph.stats().schedules, 3u);
  }
  branch = true;
  EXPECT_TRUE(array_equal(graph(a).array(), F::tanh(F::mul(a, W)).array()));  // 6: checked, eager
  EXPECT_EQ(graph.stats().schedules, 1u);                                      // B is left
  EXPECT_TRUE(array_equal(graph(a).array(), F::tanh(F::mul(a, W)).array()));  // 7: traced again
  EXPECT_EQ(graph.stats().traces, 4);
}

TEST(StaticGraph, NestingAndDoubleBackpropAreErrors) {
  StaticGraph inner([](const Variable& x) { return F::relu(x); }, {.name = "inner"});
  StaticGraph outer([&](const Variable& x) { return inner(x); }, {.name = "outer"});
  outer(Variable(randn({2})));  // eager, inner too
  expect_error<ValueError>([&] { outer(Variable(randn({2}))); }, {"inner: called while 'outer' is traced"});
  Variable W(randn({2}), true);
  StaticGraph graph([W](const Variable& x) { return F::mul(F::square(x), W); });
  Variable x(randn({2}), true);
  graph(x);
  Variable y = F::sum(graph(x));
  expect_error<NotImplementedError>([&] { grad({y}, {x}, {}, {.enable_double_backprop = true}); },
                                    {"static_graph: double backprop"});
}

TEST(StaticGraph, BadArguments) {
  expect_error<ValueError>([] { StaticGraph g(StaticGraph::Forward(), {}); }, {"static_graph: the forward is empty"});
  auto id = [](const Variable& x) { return x; };
  expect_error<ValueError>([&] { StaticGraph g(id, {.check_every = -1}); }, {"check_every must be >= 0, got -1"});
  expect_error<ValueError>([&] { StaticGraph g(id, {.max_schedules = 0}); }, {"max_schedules must be >= 1"});
  StaticGraph g(id);
  expect_error<ValueError>([&] { g(Variable()); }, {"static_graph: input 0 is null"});
  StaticGraph two([](const std::vector<Variable>& xs) { return std::vector<Variable>{xs[0], xs[0]}; });
  expect_error<ValueError>([&] { two(Variable(randn({2}))); }, {"returned 2 outputs"});
  EXPECT_EQ(two(std::vector<Variable>{Variable(randn({2}))}).size(), 2u);
}

}  // namespace
}  // namespace rensa
