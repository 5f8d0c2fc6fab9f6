// The multi-node optimizer: N ranks on their shares of a global batch reach the parameters one process
// reaches on the whole batch, for every communicator, with and without overlap, after a broadcast of
// rank 0's parameters (also lazily initialized ones); the optimizer stays the user's object, its
// hooks run on averaged gradients; zero-filled gradients; double buffering (exact one-step staleness, and convergence);
// half-precision wire dtypes converge; argument errors.
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "rensa/mn/multi_node_optimizer.h"
#include "rensa/training.h"
#include "rensa/serializers/npz.h"
#include "tests/mn/train_test_util.h"
#include "tests/unit/test_util.h"

namespace rensa::mn::test {
namespace {

namespace O = ::rensa::optimizers;
using Values = std::vector<std::vector<double>>;
using OptFactory = std::function<std::unique_ptr<O::Optimizer>()>;

MultiNodeStage& stage_of(const O::Optimizer& opt) { return dynamic_cast<MultiNodeStage&>(*opt.stage()); }

constexpr int64_t kIn = 6, kHidden = 10, kOut = 3, kLocal = 3;

struct Training {
  std::string name = "flat";
  Dtype wire = Dtype::float32;
  MultiNodeOptimizerOptions options;
  int steps = 5;
  /// Each rank starts from different values (the broadcast must fix them).
  bool perturb = true;
  /// W of l1 inferred at the first forward, from a generator seeded differently on each rank.
  bool lazy = false;
  /// The test runs backward and calls update() itself.
  bool user_backward = false;
  std::function<void(O::Optimizer&)> add_hooks;
};

Variable loss_of(Net& net, const Array& x, const Array& y) { return F::mean_squared_error(net(Variable(x)), Variable(y)); }

// The N-rank run: rank r trains on rows [r * kLocal, (r + 1) * kLocal) of each global batch.
Values train_multi(const Training& run, const OptFactory& make, std::vector<double>* losses = nullptr) {
  Communicator c = comm(run.name, run.wire);
  if (run.lazy) rensa::seed(100 + static_cast<uint64_t>(c.rank()));
  Net net(kIn, kHidden, kOut, 7, run.lazy);
  if (run.perturb && c.rank() != 0) {
    for (const auto& [path, p] : net.namedparams(false)) {
      p.array().assign(rensa::test::randn(p.shape(), Dtype::float32, 77 + static_cast<uint64_t>(c.rank())));
    }
  }
  auto opt = create_multi_node_optimizer(make(), c, run.options);
  opt->setup(net);
  if (run.add_hooks) run.add_hooks(*opt);
  const int64_t global = kLocal * c.size();
  const int64_t lo = kLocal * c.rank();
  for (int step = 0; step < run.steps; ++step) {
    auto [x, y] = batch_rows(step, global, kIn, kOut, lo, lo + kLocal);
    if (run.user_backward) {
      Variable loss = loss_of(net, x, y);
      net.cleargrads();
      loss.backward();
      opt->update();
    } else {
      opt->update([&] {
        Variable loss = loss_of(net, x, y);
        if (losses != nullptr) losses->push_back(loss.array().item<double>());
        return loss;
      });
    }
  }
  return param_values(net);
}

// One process on the whole global batch, with the same initial values as rank 0. With `stale`, the
// update of step t applies the gradient of step t - 1 (what double buffering computes).
Values train_single(const Training& run, const OptFactory& make, bool stale = false) {
  if (run.lazy) rensa::seed(100);
  Net net(kIn, kHidden, kOut, 7, run.lazy);
  auto opt = make();
  opt->setup(net);
  if (run.add_hooks) run.add_hooks(*opt);
  const int64_t global = kLocal * comm().size();
  std::vector<Variable> previous;
  for (int step = 0; step < run.steps; ++step) {
    auto [x, y] = batch_rows(step, global, kIn, kOut, 0, global);
    if (!stale) {
      opt->update([&] { return loss_of(net, x, y); });
      continue;
    }
    Variable loss = loss_of(net, x, y);
    net.cleargrads();
    loss.backward();
    std::vector<Variable> current;
    for (const Variable& p : net.params(false)) current.push_back(p.grad());
    if (!previous.empty()) {
      const auto params = net.params(false);
      for (std::size_t i = 0; i < params.size(); ++i) params[i].set_grad(previous[i]);
      opt->update();
    }
    previous = current;
  }
  return param_values(net);
}

OptFactory momentum() {
  return [] { return std::make_unique<O::MomentumSGD>(0.05, 0.9); };
}
OptFactory adam() {
  return [] { return std::make_unique<O::Adam>(0.01); };
}

void expect_matches_single(const Training& run, const OptFactory& make, double tol = 2e-5) {
  const Values multi = train_multi(run, make);
  const Values single = train_single(run, make);
  const double diff = max_rel_diff(multi, single);
  EXPECT_LT(diff, tol) << "communicator " << run.name << ", overlap " << run.options.overlap << ", rank "
                       << comm().rank();
  // Every rank holds the same bits.
  const auto all = allgather_values(flatten(multi));
  for (std::size_t r = 1; r < all.size(); ++r) EXPECT_EQ(all[r], all[0]) << "rank " << r << " differs from rank 0";
}

// Every variant that averages, over the hosts comm() gives it (scripts/netns-cluster's are real).
std::vector<std::string> exact_variants() {
  std::vector<std::string> out;
  for (const CommunicatorVariant& v : communicator_variants()) {
    if (v.communicates && testing::runs_here(v, simulated_ranks_per_host(v))) out.push_back(v.name);
  }
  return out;
}

TEST(MultiNodeOptimizer, MatchesSingleProcessForEveryCommunicator) {
  for (const std::string& name : exact_variants()) {
    for (bool overlap : {false, true}) {
      Training run;
      run.name = name;
      run.options.overlap = overlap;
      run.options.bucket_cap = 256;  // several buckets
      expect_matches_single(run, momentum());
    }
  }
}

TEST(MultiNodeOptimizer, AdamMatchesSingleProcess) {
  Training run;
  run.options.bucket_cap = 200;
  expect_matches_single(run, adam(), 1e-4);
}

// Mixed precision (docs/mixed_precision.md): data-parallel training under mixed_bf16 and mixed16, with
// every wire dtype and overlap, equals one process's on the global batch within the 16-bit
// rounding of the per-rank gradients (the single process rounds the summed product once).
TEST(MultiNodeOptimizer, MixedPrecisionMatchesSingleProcess) {
  for (const Dtype policy : {Dtype::mixed_bf16, Dtype::mixed16}) {
    auto g = using_config("dtype", policy);
    for (const std::string name : {"flat", "hierarchical", "two_dimensional"}) {
      for (const Dtype wire : {Dtype::float32, Dtype::bfloat16, Dtype::float16}) {
        for (bool overlap : {false, true}) {
          SCOPED_TRACE(std::string(dtype_name(policy)) + " " + name + " wire " + std::string(dtype_name(wire)) +
                       (overlap ? " overlap" : ""));
          Training run;
          run.name = name;
          run.wire = wire;
          run.options.overlap = overlap;
          run.options.bucket_cap = 256;
          expect_matches_single(run, momentum(), policy == Dtype::mixed_bf16 ? 4e-3 : 1e-3);
        }
      }
    }
  }
}

TEST(MultiNodeOptimizer, UserBackwardThenUpdate) {
  Training run;
  run.user_backward = true;
  expect_matches_single(run, momentum());
}

TEST(MultiNodeOptimizer, OverlapLaunchesBucketsDuringBackward) {
  Communicator c = comm();
  Net net(kIn, kHidden, kOut, 7);
  auto opt = create_multi_node_optimizer(momentum()(), c, {.bucket_cap = 64});
  opt->setup(net);
  auto [x, y] = batch_rows(0, kLocal * c.size(), kIn, kOut, 0, kLocal);
  opt->update([&] { return loss_of(net, x, y); });
  // Six parameters of 12 to 400 bytes: one bucket each, every one launched from the gradient hooks
  // (in bucket order) before backward returned.
  EXPECT_EQ(stage_of(*opt).num_buckets(), 6u);
  EXPECT_EQ(stage_of(*opt).buckets_launched_during_backward(), 6u);
  EXPECT_EQ(opt->t(), 1);
}

TEST(MultiNodeOptimizer, BucketPlanIsPublic) {
  Net net(kIn, kHidden, kOut, 7);
  // Reverse namedparams order, at most 200 bytes each, a larger parameter alone.
  const std::vector<GradientBucket> plan = plan_gradient_buckets(net, 200);
  std::vector<std::vector<std::string>> paths;
  std::vector<int64_t> elements, bytes;
  for (const GradientBucket& b : plan) {
    paths.push_back(b.paths);
    elements.push_back(b.elements);
    bytes.push_back(b.bytes);
    ASSERT_EQ(b.params.size(), b.paths.size());
  }
  const std::vector<std::vector<std::string>> want{{"/l3/b", "/l3/W", "/l2/b"}, {"/l2/W"}, {"/l1/b"}, {"/l1/W"}};
  EXPECT_EQ(paths, want);
  EXPECT_EQ(elements, (std::vector<int64_t>{43, 100, 10, 60}));
  EXPECT_EQ(bytes, (std::vector<int64_t>{172, 400, 40, 240}));
  EXPECT_EQ(plan_gradient_buckets(net, int64_t{1} << 20).size(), 1u);
  rensa::test::expect_error<ValueError>([&] { plan_gradient_buckets(net, 0); },
                                        {"plan_gradient_buckets", "bucket_cap must be positive, got 0"});

  // The stage's plan is the same rule's.
  Communicator c = comm();
  auto opt = create_multi_node_optimizer(momentum()(), c, {.bucket_cap = 200});
  opt->setup(net);
  EXPECT_TRUE(stage_of(*opt).buckets().empty());
  auto [x, y] = batch_rows(0, kLocal * c.size(), kIn, kOut, 0, kLocal);
  opt->update([&] { return loss_of(net, x, y); });
  ASSERT_EQ(stage_of(*opt).buckets().size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(stage_of(*opt).buckets()[i].paths, want[i]);
  EXPECT_EQ(stage_of(*opt).buckets_launched_during_backward(), want.size());
}

TEST(MultiNodeOptimizer, LazyParametersAreBroadcast) {
  for (bool overlap : {false, true}) {
    Training run;
    run.lazy = true;
    run.options.overlap = overlap;
    expect_matches_single(run, momentum());
  }
}

TEST(MultiNodeOptimizer, HooksRunOnAveragedGradients) {
  Training run;
  run.add_hooks = [](O::Optimizer& opt) {
    opt.add_hook(std::make_shared<O::WeightDecay>(1e-2));
    opt.add_hook(std::make_shared<O::GradientClipping>(0.05));  // the global norm must be the same everywhere
  };
  expect_matches_single(run, momentum());
}

// Every optimizer Chainer has beyond MomentumSGD and Adam, under the multi-node stage; with
// GradientNoise, whose noise is the same on every rank, the replicas stay identical and match one
// process's.
TEST(MultiNodeOptimizer, ChainersOtherOptimizersAndGradientNoise) {
  const std::vector<std::pair<std::string, OptFactory>> makers = {
      {"AdaDelta", [] { return std::make_unique<O::AdaDelta>(0.9, 1e-4); }},
      {"CorrectedMomentumSGD", [] { return std::make_unique<O::CorrectedMomentumSGD>(0.05, 0.9); }},
      {"MSVAG", [] { return std::make_unique<O::MSVAG>(0.05, 0.8); }},
      {"RMSpropGraves", [] { return std::make_unique<O::RMSpropGraves>(0.01, 0.9, 0.8, 1e-3); }},
      {"SMORMS3", [] { return std::make_unique<O::SMORMS3>(0.01); }},
      {"AdaBound", [] { return std::make_unique<O::AdaBound>(0.01, 0.9, 0.99, 0.05, 0.1); }},
      {"AMSBound", [] { return std::make_unique<O::AMSBound>(0.01, 0.9, 0.99, 0.05, 0.1); }},
  };
  for (const auto& [name, make] : makers) {
    SCOPED_TRACE(name);
    Training run;
    run.options.bucket_cap = 200;
    expect_matches_single(run, make, 1e-4);
  }
  Training run;
  run.add_hooks = [](O::Optimizer& opt) {
    opt.add_hook(std::make_shared<O::GradientNoise>(0.01, O::GradientNoise::exponential_decay_noise, 3));
  };
  expect_matches_single(run, momentum());
}

// The optimizer is the user's own object with a stage installed: nothing is forwarded, so whatever
// the user reaches through it or through the pointer kept from before is the same state.
TEST(MultiNodeOptimizer, IsTheUsersOptimizer) {
  Communicator c = comm();
  Net net(kIn, kHidden, kOut, 7);
  auto sgd = std::make_unique<O::MomentumSGD>(0.1, 0.9);
  O::MomentumSGD* mine = sgd.get();
  std::unique_ptr<O::MomentumSGD> opt = create_multi_node_optimizer(std::move(sgd), c, {.bucket_cap = 64});
  ASSERT_EQ(opt.get(), mine);
  EXPECT_EQ(stage_of(*opt).options().bucket_cap, 64);
  opt->setup(net);
  EXPECT_EQ(opt->target(), &net);
  EXPECT_DOUBLE_EQ(opt->hyperparam("lr"), 0.1);
  opt->set_hyperparam("lr", 0.02);
  EXPECT_DOUBLE_EQ(opt->lr(), 0.02);
  EXPECT_TRUE(opt->has_hyperparam("momentum"));
  EXPECT_EQ(opt->hyperparams().size(), 2u);
  rensa::test::expect_error<ValueError>([&] { opt->set_hyperparam("alpha", 1.0); }, {"alpha", "lr", "momentum"});
  opt->add_hook(std::make_shared<O::WeightDecay>(1e-4));
  EXPECT_EQ(opt->hooks().size(), 1u);
  opt->remove_hook("WeightDecay");
  EXPECT_TRUE(opt->hooks().empty());
  EXPECT_NE(opt->rule(net.l1->W()), nullptr);
  auto [x, y] = batch_rows(0, kLocal * c.size(), kIn, kOut, kLocal * c.rank(), kLocal * (c.rank() + 1));
  opt->update([&] { return loss_of(net, x, y); });
  EXPECT_EQ(opt->t(), 1);
  EXPECT_EQ(opt->rule(net.l1->W())->t, 1);
  opt->new_epoch();
  EXPECT_EQ(opt->epoch(), 1);
}

TEST(MultiNodeOptimizer, ZeroFillsMissingGradients) {
  Communicator c = comm();
  // Rank 0 uses parameter b; the others do not: b's gradient is rank 0's divided by the rank count.
  Chain model;
  Variable a = model.add_param("a", Array::full({4}, 1.0, Dtype::float32));
  Variable b = model.add_param("b", Array::full({3}, 2.0, Dtype::float32));
  for (bool overlap : {false, true}) {
    a.array().fill(1.0);
    b.array().fill(2.0);
    auto opt = create_multi_node_optimizer(std::make_unique<O::SGD>(1.0), c, {.overlap = overlap});
    opt->setup(model);
    opt->update([&] {
      Variable loss = F::sum(a * static_cast<double>(c.rank() + 1));
      if (c.rank() == 0) loss = loss + F::sum(b * 3.0);
      return loss;
    });
    const double n = c.size();
    const double mean_rank_plus_one = (n + 1) / 2;
    for (double v : a.array().to_vector<double>()) EXPECT_NEAR(v, 1.0 - mean_rank_plus_one, 1e-6);
    for (double v : b.array().to_vector<double>()) EXPECT_NEAR(v, 2.0 - 3.0 / n, 1e-6);
  }
}

TEST(MultiNodeOptimizer, DoubleBufferingAppliesPreviousGradients) {
  for (bool overlap : {false, true}) {
    Training run;
    run.options.double_buffering = true;
    run.options.overlap = overlap;
    run.options.bucket_cap = 256;
    run.steps = 6;
    const Values multi = train_multi(run, momentum());
    const Values single = train_single(run, momentum(), /*stale=*/true);
    EXPECT_LT(max_rel_diff(multi, single), 2e-5) << "overlap " << overlap;
  }
}

// What a snapshot holds (the keys written before the multi-node optimizer became a stage): the
// optimizer's own state, and with double buffering the averaged gradients not yet applied.
TEST(MultiNodeOptimizer, SnapshotKeys) {
  Communicator c = comm();
  Net net(kIn, kHidden, kOut, 7);
  auto opt = create_multi_node_optimizer(momentum()(), c, {.double_buffering = true});
  opt->setup(net);
  auto [x, y] = batch_rows(0, kLocal * c.size(), kIn, kOut, kLocal * c.rank(), kLocal * (c.rank() + 1));
  for (int step = 0; step < 2; ++step) opt->update([&] { return loss_of(net, x, y); });
  serializers::DictionarySerializer s;
  opt->serialize(s);
  std::set<std::string> keys;
  for (const auto& [key, value] : s.target()) keys.insert(key);
  std::set<std::string> want{"t", "epoch", "hyperparam/lr", "hyperparam/momentum", "_multi_node/n_pending"};
  for (const auto& [path, p] : net.namedparams()) {
    const std::string name = path.substr(1);
    want.insert(std::string(name).append("/t"));
    want.insert(std::string(name).append("/v"));
    want.insert(std::string("_multi_node/pending/").append(name));
  }
  EXPECT_EQ(keys, want);
}

TEST(MultiNodeOptimizer, DoubleBufferingConverges) {
  Training run;
  run.options.double_buffering = true;
  run.steps = 60;
  std::vector<double> losses;
  // The same batch every step: the loss of a fixed problem must fall.
  Communicator c = comm();
  Net net(kIn, kHidden, kOut, 7);
  auto opt = create_multi_node_optimizer(std::make_unique<O::Adam>(0.01), c, run.options);
  opt->setup(net);
  auto [x, y] = batch_rows(0, kLocal * c.size(), kIn, kOut, kLocal * c.rank(), kLocal * (c.rank() + 1));
  for (int step = 0; step < run.steps; ++step) {
    opt->update([&] {
      Variable loss = loss_of(net, x, y);
      losses.push_back(loss.array().item<double>());
      return loss;
    });
  }
  EXPECT_EQ(opt->t(), run.steps - 1);  // the first step only starts communication
  const auto all = allgather_values({losses.front(), losses.back()});
  double first = 0, last = 0;
  for (const auto& v : all) {
    first += v[0];
    last += v[1];
  }
  EXPECT_LT(last, 0.5 * first);
}

TEST(MultiNodeOptimizer, HalfPrecisionWireConverges) {
  for (Dtype wire : {Dtype::float16, Dtype::bfloat16}) {
    for (bool overlap : {false, true}) {
      Training run;
      run.wire = wire;
      run.options.overlap = overlap;
      run.steps = 8;
      // Close to the float32 result (rounding of the wire only) ...
      const Values multi = train_multi(run, momentum());
      const Values single = train_single(run, momentum());
      EXPECT_LT(max_rel_diff(multi, single), wire == Dtype::float16 ? 5e-3 : 3e-2) << dtype_name(wire);
      // ... and training a fixed problem makes progress.
      Communicator c = comm("flat", wire);
      Net net(kIn, kHidden, kOut, 7);
      auto opt = create_multi_node_optimizer(std::make_unique<O::Adam>(0.01), c, run.options);
      opt->setup(net);
      auto [x, y] = batch_rows(0, kLocal * c.size(), kIn, kOut, kLocal * c.rank(), kLocal * (c.rank() + 1));
      double first = 0, last = 0;
      for (int step = 0; step < 60; ++step) {
        opt->update([&] {
          Variable loss = loss_of(net, x, y);
          (step == 0 ? first : last) = loss.array().item<double>();
          return loss;
        });
      }
      const auto all = allgather_values({first, last});
      double f = 0, l = 0;
      for (const auto& v : all) {
        f += v[0];
        l += v[1];
      }
      EXPECT_LT(l, 0.5 * f) << dtype_name(wire);
    }
  }
}

TEST(MultiNodeOptimizer, DummyCommunicatorTrainsLocally) {
  // No communication: each rank follows its own data (parameters still broadcast at setup).
  Training run;
  run.name = "dummy";
  run.steps = 3;
  const Values multi = train_multi(run, momentum());
  for (const auto& v : multi) {
    for (double x : v) EXPECT_TRUE(std::isfinite(x));
  }
  // Which shows the comparison of the other tests can tell averaged gradients from local ones.
  if (comm().size() > 1) {
    EXPECT_GT(max_rel_diff(multi, train_single(run, momentum())), 1e-3);
  }
}

TEST(MultiNodeOptimizer, Errors) {
  Communicator c = comm();
  rensa::test::expect_error<ValueError>([&] { create_multi_node_optimizer(std::unique_ptr<O::SGD>(), c); },
                                        {"null optimizer"});
  rensa::test::expect_error<ValueError>(
      [&] { create_multi_node_optimizer(std::make_unique<O::SGD>(), Communicator()); }, {"null communicator"});
  rensa::test::expect_error<ValueError>(
      [&] { create_multi_node_optimizer(std::make_unique<O::SGD>(), c, {.bucket_cap = 0}); }, {"bucket_cap", "0"});
  rensa::test::expect_error<ValueError>(
      [&] {
        create_multi_node_optimizer(create_multi_node_optimizer(std::make_unique<O::SGD>(), c), c);
      },
      {"already a multi-node optimizer"});
  auto opt = create_multi_node_optimizer(std::make_unique<O::SGD>(), c);
  rensa::test::expect_error<ValueError>([&] { opt->update(); }, {"setup"});
  // Another stage is in the way: one stage per optimizer.
  struct Other : O::OptimizerStage {
    const char* name() const override { return "Other"; }
  };
  auto other = std::make_unique<O::SGD>();
  other->set_stage(std::make_unique<Other>());
  rensa::test::expect_error<ValueError>([&] { create_multi_node_optimizer(std::move(other), c); },
                                        {"Other", "MultiNodeStage", "installed already"});
}

}  // namespace
}  // namespace rensa::mn::test
