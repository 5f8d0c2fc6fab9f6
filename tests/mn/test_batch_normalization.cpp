// Multi-node batch normalization: on N ranks with unequal (and empty) local batches, the output, the
// gradients (first and second order) and the running averages equal one BatchNormalization on the
// concatenated global batch; training with the multi-node optimizer (overlap on and off, while
// gradient averaging runs on the background thread) equals one process on the global batch;
// convert_batch_normalization finds nested links; test mode does not communicate; the differentiable
// allreduce; argument errors.
#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rensa/mn/batch_normalization.h"
#include "rensa/mn/multi_node_optimizer.h"
#include "tests/mn/train_test_util.h"
#include "tests/unit/test_util.h"

namespace rensa::mn::test {
namespace {

namespace O = ::rensa::optimizers;
using rensa::test::expect_error;
using rensa::test::randn;
using rensa::test::randu;

/// Rank r's rows [lo, hi) of a global batch of sum(sizes) rows.
struct Rows {
  int64_t lo = 0, hi = 0, global = 0;
};
Rows rows_of(const std::vector<int64_t>& sizes, int rank) {
  Rows r;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (static_cast<int>(i) < rank) r.lo += sizes[i];
    r.global += sizes[i];
  }
  r.hi = r.lo + sizes[static_cast<std::size_t>(rank)];
  return r;
}

Array rows(const Array& a, const Rows& r) {
  return a.slice(0, r.lo, r.hi).copy();
}

/// Elementwise sum over ranks (on every rank).
Array sum_over_ranks(const Array& a) {
  return comm().allreduce(a, ReduceOp::sum);
}

void expect_close(const Array& got, const Array& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_TRUE(allclose(got.astype(Dtype::float64), want.astype(Dtype::float64), tol, tol))
      << what << " on rank " << comm().rank() << "\ngot: " << got << "\nwant: " << want;
}

struct Case {
  Shape sample;  // the shape of one example: (C) or (C, H, W)
  Dtype dtype;
  std::vector<int64_t> sizes;  // examples per rank
  double tol;
};

// Forward, gradients of x, gamma and beta, and the running averages of MultiNodeBatchNormalization
// on this rank's rows against BatchNormalization on the global batch (computed on every rank).
void check_against_single(const Case& c) {
  auto dtype_guard = using_config("dtype", c.dtype);
  const Rows r = rows_of(c.sizes, comm().rank());
  Shape global_shape{r.global};
  for (int64_t d : c.sample) global_shape.push_back(d);
  const int64_t channels = c.sample[0];
  const Array x_all = randn(global_shape, c.dtype, 11);
  const Array w_all = randn(global_shape, c.dtype, 12);  // loss = sum(y * w)
  const Array gamma = randu({channels}, 0.5, 1.5, c.dtype, 13), beta = randn({channels}, c.dtype, 14);

  MultiNodeBatchNormalization mn(channels, comm());
  L::BatchNormalization single(channels);
  for (L::BatchNormalization* bn : {static_cast<L::BatchNormalization*>(&mn), &single}) {
    bn->gamma().array().assign(gamma);
    bn->beta().array().assign(beta);
  }
  for (int step = 0; step < 2; ++step) {  // twice: the running averages move from their initial values
    Variable x(rows(x_all, r), true);
    Variable y = mn(x);
    F::sum(F::mul(y, Variable(rows(w_all, r)))).backward();
    Variable xs(x_all, true);
    Variable ys = single(xs);
    F::sum(F::mul(ys, Variable(w_all))).backward();
    const std::string what = "step " + std::to_string(step) + ", sample " + to_string(c.sample) + ", " +
                             std::string(dtype_name(c.dtype)) + ", rows " + std::to_string(r.hi - r.lo);
    expect_close(y.array(), rows(ys.array(), r), c.tol, "y, " + what);
    expect_close(x.grad().array(), rows(xs.grad().array(), r), c.tol, "x grad, " + what);
    // gamma and beta get this rank's share of the gradient; the optimizer sums (averages) them.
    expect_close(sum_over_ranks(mn.gamma().grad().array()), single.gamma().grad().array(), c.tol,
                 "gamma grad, " + what);
    expect_close(sum_over_ranks(mn.beta().grad().array()), single.beta().grad().array(), c.tol, "beta grad, " + what);
    expect_close(mn.avg_mean(), single.avg_mean(), c.tol, "avg_mean, " + what);
    expect_close(mn.avg_var(), single.avg_var(), c.tol, "avg_var, " + what);
    mn.cleargrads();
    single.cleargrads();
  }
}

std::vector<int64_t> sizes_by_rank(const std::function<int64_t(int)>& f) {
  std::vector<int64_t> s;
  for (int i = 0; i < comm().size(); ++i) s.push_back(f(i));
  return s;
}

TEST(MultiNodeBatchNormalization, UnequalBatchesMatchSingleProcess) {
  const auto r_plus_1 = sizes_by_rank([](int r) { return r + 1; });
  const auto two_r_plus_3 = sizes_by_rank([](int r) { return 2 * r + 3; });
  check_against_single({{3}, Dtype::float64, two_r_plus_3, 1e-10});
  check_against_single({{3}, Dtype::float32, two_r_plus_3, 2e-4});
  check_against_single({{2, 3, 2}, Dtype::float64, r_plus_1, 1e-10});
  check_against_single({{2, 3, 2}, Dtype::float32, r_plus_1, 2e-4});
}

TEST(MultiNodeBatchNormalization, RankWithEmptyBatch) {
  // Rank 0 has no example: it still takes part in every collective and gets empty results.
  const auto sizes = sizes_by_rank([](int r) { return r == 0 ? int64_t{0} : int64_t{r + 1}; });
  check_against_single({{3}, Dtype::float64, sizes, 1e-10});
  check_against_single({{2, 2, 3}, Dtype::float64, sizes, 1e-10});
}

TEST(MultiNodeBatchNormalization, EmptyOnEveryRankIsAnErrorEverywhere) {
  auto dtype_guard = using_config("dtype", Dtype::float64);
  MultiNodeBatchNormalization bn(3, comm());
  expect_error<ValueError>(
      [&] {
        bn(Variable(Array::zeros({0, 3}, Dtype::float64)));
      },
      {"batch_normalization", "(0, 3)", "no element on any worker"});
  // The ranks are still in step.
  EXPECT_TRUE(all_ranks(true));
}

TEST(MultiNodeBatchNormalization, DoubleBackpropMatchesSingleProcess) {
  auto dtype_guard = using_config("dtype", Dtype::float64);
  const auto sizes = sizes_by_rank([](int r) { return 2 * r + 3; });
  const Rows r = rows_of(sizes, comm().rank());
  const Shape shape{r.global, 2, 2};
  const Array x_all = randn(shape, Dtype::float64, 21), w_all = randn(shape, Dtype::float64, 22);
  const Array v_all = randn(shape, Dtype::float64, 23);
  const Array gamma = randu({2}, 0.5, 1.5, Dtype::float64, 24), beta = randn({2}, Dtype::float64, 25);
  MultiNodeBatchNormalization mn(2, comm());
  L::BatchNormalization single(2);
  for (L::BatchNormalization* bn : {static_cast<L::BatchNormalization*>(&mn), &single}) {
    bn->gamma().array().assign(gamma);
    bn->beta().array().assign(beta);
  }
  // loss2 = <d loss / dx, v> with loss = sum(y * w), differentiated again by backward().
  auto second_order = [](L::BatchNormalization& bn, const Array& x, const Array& w, const Array& v) {
    Variable xv(x, true);
    Variable loss = F::sum(F::mul(bn(xv), Variable(w)));
    Variable gx = grad({loss}, {xv}, {}, {.enable_double_backprop = true})[0];
    Variable loss2 = F::sum(F::mul(gx, Variable(v)));
    loss2.backward();
    return std::make_pair(gx.array(), xv.grad().array());
  };
  const auto [gx, ggx] = second_order(mn, rows(x_all, r), rows(w_all, r), rows(v_all, r));
  const auto [gx_s, ggx_s] = second_order(single, x_all, w_all, v_all);
  expect_close(gx, rows(gx_s, r), 1e-10, "first-order x grad");
  expect_close(ggx, rows(ggx_s, r), 1e-10, "second-order x grad");
  expect_close(sum_over_ranks(mn.gamma().grad().array()), single.gamma().grad().array(), 1e-10,
               "second-order gamma grad");
}

TEST(MultiNodeBatchNormalization, TestModeUsesRunningAveragesWithoutCommunication) {
  auto dtype_guard = using_config("dtype", Dtype::float64);
  MultiNodeBatchNormalization bn(3, comm());
  bn.avg_mean().assign(randn({3}, Dtype::float64, 31));
  bn.avg_var().assign(randu({3}, 0.5, 2.0, Dtype::float64, 32));
  int calls = 0;
  const auto reducer = bn.allreduce_sum();
  ASSERT_TRUE(static_cast<bool>(reducer));
  bn.set_allreduce_sum([&](const Variable& v) {
    ++calls;
    return reducer(v);
  });
  // Ranks call test mode a different number of times, with different batches: nothing is exchanged.
  auto test_mode = using_config("train", false);
  for (int i = 0; i <= comm().rank(); ++i) {
    const Array x = randn({2 + i, 3}, Dtype::float64, 33);
    Variable y = bn(Variable(x));
    Variable want = F::fixed_batch_normalization(Variable(x), bn.gamma(), bn.beta(), Variable(bn.avg_mean()),
                                                 Variable(bn.avg_var()), {2e-5});
    expect_close(y.array(), want.array(), 1e-14, "test mode");
  }
  EXPECT_EQ(calls, 0);
  EXPECT_TRUE(all_ranks(true));
  auto train_mode = using_config("train", true);
  bn(Variable(randn({2, 3}, Dtype::float64, 34)));
  EXPECT_EQ(calls, 2);
}

// A model with batch normalization in nested chains.
struct Block : Chain {
  std::shared_ptr<L::Linear> fc;
  std::shared_ptr<L::BatchNormalization> bn;
  Block(int64_t in, int64_t out, uint64_t seed)
      : fc(std::make_shared<L::Linear>(in, out, L::LinearOptions{.seed = seed})),
        bn(std::make_shared<L::BatchNormalization>(out)) {
    add_link("fc", fc);
    add_link("bn", bn);
  }
  Variable forward(const Variable& x) override { return F::tanh((*bn)((*fc)(x))); }
  using Link::forward;
};

struct BnNet : Chain {
  std::shared_ptr<Block> b1;
  std::shared_ptr<L::BatchNormalization> bn;
  std::shared_ptr<L::Linear> out;
  BnNet(int64_t in, int64_t hidden, int64_t n_out, uint64_t seed)
      : b1(std::make_shared<Block>(in, hidden, seed)),
        bn(std::make_shared<L::BatchNormalization>(hidden)),
        out(std::make_shared<L::Linear>(hidden, n_out, L::LinearOptions{.seed = seed + 1})) {
    add_link("b1", b1);
    add_link("bn", bn);
    add_link("out", out);
  }
  Variable forward(const Variable& x) override { return (*out)((*bn)((*b1)(x))); }
  using Link::forward;
};

TEST(ConvertBatchNormalization, CountsAndConvertsNestedLinks) {
  BnNet net(4, 5, 2, 3);
  EXPECT_FALSE(static_cast<bool>(net.bn->allreduce_sum()));
  EXPECT_EQ(convert_batch_normalization(net, comm()), 2);
  EXPECT_TRUE(static_cast<bool>(net.bn->allreduce_sum()));
  EXPECT_TRUE(static_cast<bool>(net.b1->bn->allreduce_sum()));
  // Again (replacing the communicator), and on a batch normalization itself.
  EXPECT_EQ(convert_batch_normalization(net, comm()), 2);
  L::BatchNormalization lone(3);
  EXPECT_EQ(convert_batch_normalization(lone, comm()), 1);
  L::Linear no_bn(3, 2);
  EXPECT_EQ(convert_batch_normalization(no_bn, comm()), 0);
  // The converted layers take global statistics: every rank's output is a slice of the global one.
  const auto sizes = sizes_by_rank([](int r) { return r + 2; });
  const Rows r = rows_of(sizes, comm().rank());
  const Array x_all = randn({r.global, 4}, Dtype::float32, 41);
  BnNet single(4, 5, 2, 3);
  Variable y = net(Variable(rows(x_all, r)));
  Variable ys = single(Variable(x_all));
  expect_close(y.array(), rows(ys.array(), r), 1e-5, "converted model");
}

constexpr int64_t kIn = 4, kHidden = 6, kOut = 2;

// Trains BnNet for `steps` steps, on this rank's rows (multi) or on the global batch (single). The
// loss of each rank is its share of the global mean squared error (scaled by its rows), so the mean
// over ranks that the optimizer takes is the global loss even for unequal batches.
std::vector<std::vector<double>> train(const std::string& name, const std::vector<int64_t>& sizes, bool multi,
                                       bool overlap, std::size_t* launched_during_backward = nullptr) {
  const Rows all = rows_of(sizes, comm().rank());
  const Rows r = multi ? all : Rows{0, all.global, all.global};
  BnNet net(kIn, kHidden, kOut, 9);
  std::unique_ptr<O::Optimizer> opt = std::make_unique<O::MomentumSGD>(0.1, 0.9);
  MultiNodeStage* stage = nullptr;
  if (multi) {
    EXPECT_EQ(convert_batch_normalization(net, comm(name)), 2);
    stage = &add_multi_node_stage(*opt, comm(name), {.bucket_cap = 64, .overlap = overlap});
  }
  opt->setup(net);
  const double scale =
      multi ? static_cast<double>((r.hi - r.lo) * comm().size()) / static_cast<double>(all.global) : 1.0;
  for (int step = 0; step < 4; ++step) {
    auto [x, t] = batch_rows(step, all.global, kIn, kOut, r.lo, r.hi);
    opt->update([&] { return F::mul(F::mean_squared_error(net(Variable(x)), Variable(t)), scale); });
    if (stage != nullptr && launched_during_backward != nullptr) {
      *launched_during_backward = std::max(*launched_during_backward, stage->buckets_launched_during_backward());
    }
  }
  auto values = param_values(net);
  for (const auto& [path, a] : net.namedpersistents()) values.push_back(a->astype(Dtype::float64).to_vector<double>());
  return values;
}

TEST(MultiNodeBatchNormalization, TrainingMatchesSingleProcess) {
  const auto sizes = sizes_by_rank([](int r) { return r + 2; });
  const auto single = train("flat", sizes, false, false);
  // hierarchical over two simulated hosts: the batch normalization's allreduce goes through MPI on
  // the user's thread while the gradient buckets are averaged on the background thread.
  for (const std::string name : {"flat", "hierarchical"}) {
    for (bool overlap : {false, true}) {
      std::size_t launched = 0;
      const auto multi = train(name, sizes, true, overlap, &launched);
      EXPECT_LT(max_rel_diff(multi, single), 1e-5) << name << ", overlap " << overlap << ", rank " << comm().rank();
      if (overlap) {
        EXPECT_GT(launched, 0u) << name;
      }
      const auto everyone = allgather_values(flatten(multi));
      for (std::size_t i = 1; i < everyone.size(); ++i) {
        EXPECT_EQ(everyone[i], everyone[0]) << name << ": rank " << i << " differs from rank 0";
      }
    }
  }
}

TEST(MultiNodeBatchNormalization, BlockingAllreduceWhileGradientAveragingIsInFlight) {
  // A large request on the background thread, then batch normalization's collectives in forward and
  // backward on this thread before waiting for it: both give their exact results.
  auto dtype_guard = using_config("dtype", Dtype::float64);
  Array big = Array::full({1 << 20}, static_cast<double>(comm().rank() + 1), Dtype::float32);
  Communicator::Request req = comm().start_mean_grad({big});
  const auto sizes = sizes_by_rank([](int r) { return r + 1; });
  const Rows r = rows_of(sizes, comm().rank());
  const Array x_all = randn({r.global, 3}, Dtype::float64, 51);
  MultiNodeBatchNormalization mn(3, comm());
  L::BatchNormalization single(3);
  Variable x(rows(x_all, r), true);
  F::sum(F::square(mn(x))).backward();
  Variable xs(x_all, true);
  F::sum(F::square(single(xs))).backward();
  req.wait();
  expect_close(x.grad().array(), rows(xs.grad().array(), r), 1e-10, "x grad");
  const double mean = (comm().size() + 1) / 2.0;
  const auto v = big.to_vector<float>();
  EXPECT_EQ(v.front(), static_cast<float>(mean));
  EXPECT_EQ(v.back(), static_cast<float>(mean));
}

TEST(MultiNodeAllreduce, SumsValuesAndGradientsOverRanks) {
  const int rank = comm().rank(), size = comm().size();
  Variable x(Array::full({2, 3}, rank + 1.0, Dtype::float64), true);
  Variable y = functions::allreduce(x, comm());
  const double total = size * (size + 1) / 2.0;
  EXPECT_TRUE(allclose(y.array(), Array::full({2, 3}, total, Dtype::float64)));
  // Each rank weighs the sum by its own w: x's gradient is the sum of every rank's w.
  F::sum(F::mul(y, Variable(Array::full({2, 3}, 10.0 * rank, Dtype::float64)))).backward();
  EXPECT_TRUE(allclose(x.grad().array(), Array::full({2, 3}, 10.0 * (total - size), Dtype::float64)));
  // No gradient needed: nothing is recorded (and backward does not communicate).
  EXPECT_EQ(functions::allreduce(Variable(Array::full({1}, 1.0, Dtype::float64)), comm()).creator(), nullptr);
}

TEST(MultiNodeBatchNormalization, Errors) {
  expect_error<ValueError>([] { MultiNodeBatchNormalization(3, Communicator()); },
                           {"MultiNodeBatchNormalization", "null communicator"});
  L::BatchNormalization bn(3);
  expect_error<ValueError>([&] { convert_batch_normalization(bn, Communicator()); },
                           {"convert_batch_normalization", "null communicator"});
  expect_error<ValueError>([] { functions::allreduce(Variable(randn({2})), Communicator()); },
                           {"allreduce", "null communicator"});
  expect_error<ValueError>([] { functions::allreduce(Variable(), comm()); }, {"allreduce", "null"});
  expect_error<ValueError>([] { MultiNodeBatchNormalization(-1, comm()); }, {"BatchNormalization", "-1"});
}

}  // namespace
}  // namespace rensa::mn::test
