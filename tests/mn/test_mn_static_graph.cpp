// A static graph under the multi-node optimizer: bucketed overlap and double buffering see the
// parameters' gradients as from an eager backward, so a static run equals an eager one bit for bit
// on every rank, and the ranks stay identical.
#include <memory>
#include <vector>

#include "rensa/mn/multi_node_optimizer.h"
#include "tests/mn/train_test_util.h"

namespace rensa::mn::test {
namespace {

struct Net : Chain {
  explicit Net(bool use_static) : use_static(use_static), graph([this](const Variable& x) { return body(x); }) {
    add_link("l1", l1);
    add_link("l2", l2);
  }
  Variable body(const Variable& x) { return (*l2)(F::dropout(F::tanh((*l1)(x)), 0.2)); }
  Variable forward(const Variable& x) override { return use_static ? graph(x) : body(x); }
  using Chain::forward;
  std::shared_ptr<links::Linear> l1 = std::make_shared<links::Linear>(4, 16, links::LinearOptions{.seed = 3});
  std::shared_ptr<links::Linear> l2 = std::make_shared<links::Linear>(16, 2, links::LinearOptions{.seed = 4});
  bool use_static;
  StaticGraph graph;
};

std::vector<std::vector<double>> train(Communicator& c, bool use_static, const MultiNodeOptimizerOptions& options) {
  Net net(use_static);
  optimizers::MomentumSGD opt(0.05, 0.9);
  // Small buckets: several overlapped allreduces per step.
  add_multi_node_stage(opt, c, options);
  opt.setup(net);
  rensa::seed(11 + static_cast<uint64_t>(c.rank()));
  for (int step = 0; step < 5; ++step) {
    auto [x, t] = batch_rows(step, 8 * c.size(), 4, 2, 8 * c.rank(), 8 * (c.rank() + 1));
    opt.update([&] { return F::mean_squared_error(net(Variable(x)), Variable(t)); });
  }
  if (use_static) {
    EXPECT_EQ(net.graph.stats().traces, 1);
  }
  return param_values(net);
}

TEST(MnStaticGraph, EqualsEagerWithOverlapAndDoubleBuffering) {
  Communicator c = comm();
  for (const bool double_buffering : {false, true}) {
    MultiNodeOptimizerOptions options;
    options.double_buffering = double_buffering;
    options.bucket_cap = 256;
    const auto eager = train(c, false, options);
    const auto replayed = train(c, true, options);
    EXPECT_EQ(eager, replayed) << "double_buffering " << double_buffering;
    const auto all = allgather_values(flatten(replayed));
    for (const auto& values : all) EXPECT_EQ(values, all[0]);
  }
}

}  // namespace
}  // namespace rensa::mn::test
