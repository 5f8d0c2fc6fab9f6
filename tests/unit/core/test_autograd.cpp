#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <unordered_map>

#include "rensa/rensa.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;

TEST(Autograd, FanOutAccumulates) {
  Variable x(Array::from_vector<double>({1.0, 2.0}), true);
  Variable y = F::sum(x * x + x);
  y.backward();
  EXPECT_EQ(x.grad().array().to_vector<double>(), (std::vector<double>{3.0, 5.0}));
  // A second backward on a new graph accumulates into .grad.
  F::sum(x).backward();
  EXPECT_EQ(x.grad().array().to_vector<double>(), (std::vector<double>{4.0, 6.0}));
  x.cleargrad();
  EXPECT_TRUE(x.grad().is_null());
}

TEST(Autograd, LeafGradIsNotAliased) {
  Variable a(Array::ones({3}, Dtype::float64), true), b(Array::ones({3}, Dtype::float64), true);
  F::sum(a + b).backward();
  EXPECT_FALSE(a.grad().array().shares_storage(b.grad().array()));
  EXPECT_TRUE(a.grad().array().is_contiguous());
}

TEST(Autograd, NoBackpropModeRecordsNothing) {
  Variable x(Array::ones({2}), true);
  {
    auto guard = no_backprop_mode();
    Variable y = x * x;
    EXPECT_EQ(y.creator(), nullptr);
  }
  EXPECT_NE((x * x).creator(), nullptr);
  auto g = using_config("train", false);
  EXPECT_FALSE(config().train);
  EXPECT_THROW(using_config("nonsense", true), ValueError);
  // Chainer users look for it: the error says why there is none.
  rensa::test::expect_error<ValueError>([] { (void)using_config("deterministic", true); },
                                        {"using_config", "'deterministic'", "same bits"});
}

TEST(Autograd, RetainGradAndFreedGraph) {
  Variable x(Array::from_vector<double>({1.0, 2.0}), true);
  Variable h = x * 3.0;
  h.retain_grad();
  Variable y = F::sum(h * h);
  y.backward();
  EXPECT_EQ(h.grad().array().to_vector<double>(), (std::vector<double>{6.0, 12.0}));
  EXPECT_THROW(y.backward(), ValueError);  // graph freed
}

TEST(Autograd, DoubleBackprop) {
  Variable x(Array::from_vector<double>({1.0, 2.0}), true);
  Variable y = F::sum(x * x * x);
  auto g = rensa::grad({y}, {x}, {}, {.enable_double_backprop = true});
  EXPECT_EQ(g[0].array().to_vector<double>(), (std::vector<double>{3.0, 12.0}));
  EXPECT_TRUE(x.grad().is_null());
  F::sum(g[0]).backward();
  EXPECT_EQ(x.grad().array().to_vector<double>(), (std::vector<double>{6.0, 12.0}));
}

TEST(Autograd, UnchainBackwardCutsTheGraph) {
  Variable x(Array::ones({2}), true);
  Variable h = x * 2.0;
  Variable y = F::sum(h * h);
  h.unchain_backward();
  y.backward();
  EXPECT_TRUE(x.grad().is_null());
}

// Regression: Chainer's truncated-BPTT order (backward, then unchain_backward) did nothing, because
// backward had already dropped the nodes' input edges, and the next backward through the old state
// failed with advice that did not fit.
TEST(Autograd, UnchainBackwardAfterBackwardCutsTheGraph) {
  Variable W(Array::from_vector<double>({0.5, -0.25}), true);
  Variable h(Array::from_vector<double>({1.0, 2.0}));
  h = F::tanh(h * W);
  Variable loss = F::sum(h);
  loss.backward();
  const std::vector<double> g1 = W.grad().array().to_vector<double>();
  loss.unchain_backward();
  EXPECT_EQ(h.creator(), nullptr);  // h is a leaf now: the next backward stops there
  W.cleargrad();
  Variable h2 = F::tanh(h * W);
  F::sum(h2).backward();
  // d/dW sum(tanh(h * W)) with h fixed: h * (1 - tanh(h W)^2).
  const std::vector<double> hv = h.array().to_vector<double>(), wv = W.array().to_vector<double>();
  const std::vector<double> g2 = W.grad().array().to_vector<double>();
  for (std::size_t i = 0; i < 2; ++i) {
    const double t = std::tanh(hv[i] * wv[i]);
    EXPECT_NEAR(g2[i], hv[i] * (1 - t * t), 1e-12) << i;
  }
  EXPECT_EQ(g1.size(), 2u);
}

// Regression: a function with two outputs (an LSTM cell's c and h) where the loss used only h: after
// backward and unchain_backward the state c must be a leaf too, or the next segment runs into the
// freed cell (as train_char_lm did once lstm became one fused node).
TEST(Autograd, UnchainBackwardMakesSiblingOutputsLeaves) {
  Variable W(Array::from_vector<double>({0.5, -0.25, 0.1, 0.3, -0.2, 0.4, 0.05, -0.15}, {1, 8}), true);
  Variable c(Array::zeros({1, 2}, Dtype::float64));
  for (int segment = 0; segment < 3; ++segment) {
    auto [c2, h] = F::lstm(c, W);
    c = c2;
    Variable loss = F::sum(h);
    loss.backward();
    loss.unchain_backward();
    EXPECT_EQ(c.creator(), nullptr) << segment;
    W.cleargrad();
  }
}

TEST(Autograd, FreedGraphErrorNamesBothRemedies) {
  Variable W(Array::from_vector<double>({0.5, -0.25}), true);
  Variable h = F::tanh(Variable(Array::from_vector<double>({1.0, 2.0})) * W);
  F::sum(h).backward();
  // Without unchain_backward, the next step's graph runs into the freed one.
  rensa::test::expect_error<ValueError>([&] { F::sum(F::tanh(h * W)).backward(); },
                                 {"backward", "freed by an earlier backward", "retain_graph", "unchain_backward()",
                                  "truncated BPTT"});
}

TEST(Autograd, ImplicitGradNeedsOneElement) {
  Variable x(Array::ones({2}), true);
  Variable y = x * 2.0;
  EXPECT_THROW(y.backward(), ShapeError);
}

namespace {
struct CountingHook : GradHook {
  int finals = 0, finished = 0;
  void grad_final(const Variable&) override { ++finals; }
  void backward_finished() override { ++finished; }
};
}  // namespace

TEST(Autograd, GradFinalHooks) {
  Variable w(Array::ones({2}), true), v(Array::ones({2}), true);
  auto hook = std::make_shared<CountingHook>();
  w.add_grad_hook(hook);
  v.add_grad_hook(hook);
  F::sum(w * v + w).backward();
  EXPECT_EQ(hook->finals, 2);
  EXPECT_EQ(hook->finished, 1);
}

TEST(Autograd, VariableIdIsTheIdentity) {
  Variable a(Array::ones({2}), true);
  const Variable alias = a;           // another handle of the same variable
  const Variable b(a.array(), true);  // another variable over the same data
  EXPECT_EQ(a.id(), alias.id());
  EXPECT_NE(a.id(), b.id());
  EXPECT_EQ(Variable().id(), Variable().id());
  EXPECT_NE(a.id(), Variable().id());
  // Stable while the variable lives, whatever happens to its data, gradient and graph.
  const VariableId before = a.id();
  F::sum(a * 2.0).backward();
  a.cleargrad();
  a.set_array(Array::zeros({3}));
  EXPECT_EQ(a.id(), before);
  // It keys hashed and ordered maps without holding the variable.
  const std::unordered_map<VariableId, int> hashed{{a.id(), 1}, {b.id(), 2}};
  const std::map<VariableId, int> ordered{{a.id(), 1}, {b.id(), 2}};
  EXPECT_EQ(hashed.at(alias.id()), 1);
  EXPECT_EQ(ordered.at(b.id()), 2);
}

TEST(Autograd, GradHooksAreListed) {
  Variable w(Array::ones({2}), true);
  EXPECT_TRUE(w.grad_hooks().empty());
  auto h1 = std::make_shared<CountingHook>(), h2 = std::make_shared<CountingHook>();
  w.add_grad_hook(h1);
  w.add_grad_hook(h2);
  ASSERT_EQ(w.grad_hooks().size(), 2u);
  EXPECT_EQ(w.grad_hooks()[0], h1);
  EXPECT_EQ(w.grad_hooks()[1], h2);
  w.remove_grad_hook(h1.get());
  ASSERT_EQ(w.grad_hooks().size(), 1u);
  EXPECT_EQ(w.grad_hooks()[0], h2);
  F::sum(w * 3.0).backward();
  EXPECT_EQ(h1->finals, 0);
  EXPECT_EQ(h2->finals, 1);
  rensa::test::expect_error<ValueError>([] { (void)Variable().grad_hooks(); }, {"Variable::grad_hooks", "null"});
}
