// Batch normalization for large batches across ranks: mn::recompute_batch_norm_statistics over K
// shards equals training::recompute_batch_norm_statistics over the whole data (per-rank and
// multi-node layers), and its errors; ghost batch normalization in one process with batch B equals
// K ranks with B / K each and plain per-rank batch normalization (outputs, averaged gradients,
// running statistics, and training with the multi-node optimizer).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rensa/mn/batch_norm_statistics.h"
#include "rensa/mn/batch_normalization.h"
#include "rensa/mn/multi_node_optimizer.h"
#include "tests/mn/train_test_util.h"
#include "tests/unit/test_util.h"

namespace rensa::mn::test {
namespace {

namespace O = ::rensa::optimizers;
using rensa::test::expect_error;
using rensa::test::randn;

// l1 -> bn1 -> relu -> l2 -> bn2: bn2's statistics depend on how bn1 normalized each batch.
struct BnNet : Chain {
  std::shared_ptr<L::Linear> l1, l2;
  std::shared_ptr<L::BatchNormalization> bn1, bn2;
  BnNet(int64_t in, int64_t hidden, int64_t out, L::BatchNormalizationOptions o = {}) {
    l1 = std::make_shared<L::Linear>(in, hidden, L::LinearOptions{.seed = 3});
    bn1 = std::make_shared<L::BatchNormalization>(hidden, o);
    l2 = std::make_shared<L::Linear>(hidden, out, L::LinearOptions{.seed = 4});
    bn2 = std::make_shared<L::BatchNormalization>(out, o);
    add_link("l1", l1);
    add_link("bn1", bn1);
    add_link("l2", l2);
    add_link("bn2", bn2);
  }
  Variable forward(const Variable& x) override { return (*bn2)((*l2)(F::relu((*bn1)((*l1)(x))))); }
  using Link::forward;
};

std::vector<L::BatchNormalization*> bns(BnNet& n) {
  return {n.bn1.get(), n.bn2.get()};
}

void expect_close(const Array& got, const Array& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_TRUE(allclose(got.astype(Dtype::float64), want.astype(Dtype::float64), tol, tol))
      << what << " on rank " << comm().rank() << "\ngot: " << got << "\nwant: " << want;
}

iterators::SerialIterator once(const Array& data, int64_t batch) {
  const Array labels = Array::zeros({data.shape()[0]}, Dtype::int32);
  auto ds = std::make_shared<datasets::TupleDataset>(std::vector<Array>{data, labels});
  return iterators::SerialIterator(ds, batch, {.repeat = false, .shuffle = false});
}

constexpr int64_t kIn = 5, kHidden = 4, kOut = 3, kBatch = 4;

// Rank r holds kBatch * (r + 1) rows (unequal batch counts), contiguous in the global data.
void check_recompute(Dtype dtype, double tol) {
  auto dtype_guard = using_config("dtype", dtype);
  const int k = comm().size(), rank = comm().rank();
  const int64_t lo = kBatch * rank * (rank + 1) / 2, hi = lo + kBatch * (rank + 1);
  const Array all = randn({kBatch * k * (k + 1) / 2, kIn}, dtype, 31);
  BnNet multi(kIn, kHidden, kOut), single(kIn, kHidden, kOut);
  multi(Variable(randn({6, kIn}, dtype, 40 + static_cast<uint64_t>(rank))));  // different averages per rank
  auto it = once(all.slice(0, lo, hi).copy(), kBatch);
  const int64_t used = recompute_batch_norm_statistics(multi, it, comm());
  auto whole = once(all, kBatch);
  const int64_t want = training::recompute_batch_norm_statistics(single, whole);
  EXPECT_EQ(used, want);
  const std::string what = std::string(dtype_name(dtype)) + ", " + std::to_string(k) + " ranks";
  for (std::size_t i = 0; i < 2; ++i) {
    L::BatchNormalization* m = bns(multi)[i];
    L::BatchNormalization* s = bns(single)[i];
    expect_close(m->avg_mean(), s->avg_mean(), tol, std::string("avg_mean of bn").append(std::to_string(i + 1)));
    expect_close(m->avg_var(), s->avg_var(), tol, std::string("avg_var of bn").append(std::to_string(i + 1)));
    EXPECT_EQ(m->n_batches(), s->n_batches()) << what;
    EXPECT_FALSE(m->finetune());
  }
  // Every rank holds the same bits.
  std::vector<double> mine;
  for (auto* bn : bns(multi)) {
    for (const Array* a : {&bn->avg_mean(), &bn->avg_var()}) {
      for (double v : a->astype(Dtype::float64).to_vector<double>()) mine.push_back(v);
    }
  }
  const auto everyone = allgather_values(mine);
  for (std::size_t r = 1; r < everyone.size(); ++r) EXPECT_EQ(everyone[r], everyone[0]) << "rank " << r;
}

TEST(MultiNodeRecomputeBatchNormStatistics, ShardsEqualOneProcessOverTheWholeData) {
  check_recompute(Dtype::float64, 1e-12);
  check_recompute(Dtype::float32, 1e-5);
}

TEST(MultiNodeRecomputeBatchNormStatistics, MultiNodeLayersEqualOneProcessOverGlobalBatches) {
  // Global batch i is rank 0's batch i, then rank 1's, ...: one process with batch K * kBatch.
  auto dtype_guard = using_config("dtype", Dtype::float64);
  const int k = comm().size(), rank = comm().rank();
  const int64_t steps = 3;
  const Array all = randn({steps * k * kBatch, kIn}, Dtype::float64, 50);
  std::vector<Variable> mine;
  for (int64_t i = 0; i < steps; ++i) {
    const int64_t lo = (i * k + rank) * kBatch;
    mine.emplace_back(all.slice(0, lo, lo + kBatch));
  }
  BnNet multi(kIn, kHidden, kOut), single(kIn, kHidden, kOut);
  EXPECT_EQ(convert_batch_normalization(multi, comm()), 2);
  auto it = once(F::concat(mine, 0).array(), kBatch);
  EXPECT_EQ(recompute_batch_norm_statistics(multi, it, comm()), steps * k);
  auto whole = once(all, k * kBatch);
  EXPECT_EQ(training::recompute_batch_norm_statistics(single, whole), steps);
  for (std::size_t i = 0; i < 2; ++i) {
    expect_close(bns(multi)[i]->avg_mean(), bns(single)[i]->avg_mean(), 1e-12, "avg_mean");
    expect_close(bns(multi)[i]->avg_var(), bns(single)[i]->avg_var(), 1e-12, "avg_var");
    EXPECT_EQ(bns(multi)[i]->n_batches(), steps);
  }
}

TEST(MultiNodeRecomputeBatchNormStatistics, MultiNodeLayersNeedEqualBatchCounts) {
  auto dtype_guard = using_config("dtype", Dtype::float64);
  BnNet net(kIn, kHidden, kOut);
  convert_batch_normalization(net, comm());
  // Rank 0 has one batch more than the others.
  auto it = once(randn({kBatch * (comm().rank() == 0 ? 3 : 2), kIn}, Dtype::float64, 60), kBatch);
  expect_error<ValueError>([&] { recompute_batch_norm_statistics(net, it, comm()); },
                           {"mn::recompute_batch_norm_statistics", "batch 2 exists on 1 of", "same number of batches"});
  EXPECT_FALSE(net.bn1->finetune());
  EXPECT_TRUE(all_ranks(true));  // still in step
}

TEST(MultiNodeRecomputeBatchNormStatistics, DifferentLayersFailOnEveryRank) {
  auto dtype_guard = using_config("dtype", Dtype::float64);
  // The last rank's bn2 has one channel more.
  const bool last = comm().rank() == comm().size() - 1;
  BnNet net(kIn, kHidden, last ? kOut + 1 : kOut);
  auto it = once(randn({kBatch, kIn}, Dtype::float64, 70), kBatch);
  const std::string who = std::string("rank ").append(std::to_string(comm().size() - 1));
  expect_error<ValueError>([&] { recompute_batch_norm_statistics(net, it, comm()); },
                           {"mn::recompute_batch_norm_statistics", who, "/bn2 (3,) float64", "/bn2 (4,) float64"});
  EXPECT_TRUE(all_ranks(true));
  // A layer present on rank 0 only.
  L::Linear plain(kIn, kOut);
  L::BatchNormalization bn(kIn);
  Link& model = comm().rank() == 0 ? static_cast<Link&>(bn) : static_cast<Link&>(plain);
  auto it2 = once(randn({kBatch, kIn}, Dtype::float64, 71), kBatch);
  expect_error<ValueError>([&] { recompute_batch_norm_statistics(model, it2, comm()); },
                           {"mn::recompute_batch_norm_statistics", "differ", "(none)"});
  EXPECT_TRUE(all_ranks(true));
  expect_error<ValueError>([&] { recompute_batch_norm_statistics(net, it, Communicator()); },
                           {"mn::recompute_batch_norm_statistics", "null communicator"});
}

// ---- ghost batch normalization against K ranks -----------------------------------------------------

constexpr int64_t kGhost = 3;

TEST(GhostBatchNormalizationAgainstRanks, OneProcessEqualsKRanks) {
  auto dtype_guard = using_config("dtype", Dtype::float64);
  const int k = comm().size(), rank = comm().rank();
  const int64_t global = k * kGhost, lo = rank * kGhost, hi = lo + kGhost;
  BnNet ghost(kIn, kHidden, kOut, {.ghost_batch_size = kGhost}), plain(kIn, kHidden, kOut);
  for (int step = 0; step < 2; ++step) {
    const Array x = randn({global, kIn}, Dtype::float64, 80 + static_cast<uint64_t>(step));
    const Array t = randn({global, kOut}, Dtype::float64, 90 + static_cast<uint64_t>(step));
    Variable yg = ghost(Variable(x));
    F::mean_squared_error(yg, Variable(t)).backward();
    Variable yp = plain(Variable(x.slice(0, lo, hi).copy()));
    F::mean_squared_error(yp, Variable(t.slice(0, lo, hi).copy())).backward();
    const std::string what = std::string("step ").append(std::to_string(step));
    expect_close(yp.array(), yg.array().slice(0, lo, hi), 1e-12, "y, " + what);
    // The multi-node optimizer's mean of the ranks' gradients is the ghost model's gradient.
    const auto gp = plain.namedparams(), gg = ghost.namedparams();
    ASSERT_EQ(gp.size(), gg.size());
    for (std::size_t i = 0; i < gp.size(); ++i) {
      const Array mean = comm().allreduce(gp[i].second.grad().array(), ReduceOp::sum);
      expect_close(F::mul(Variable(mean), 1.0 / k).array(), gg[i].second.grad().array(), 1e-12,
                   gp[i].first + " grad, " + what);
    }
    // The ghost running averages are the mean over ranks of theirs.
    for (std::size_t i = 0; i < 2; ++i) {
      for (auto [p, g] : {std::pair{&bns(plain)[i]->avg_mean(), &bns(ghost)[i]->avg_mean()},
                          std::pair{&bns(plain)[i]->avg_var(), &bns(ghost)[i]->avg_var()}}) {
        const Array mean = comm().allreduce(*p, ReduceOp::sum);
        expect_close(F::mul(Variable(mean), 1.0 / k).array(), *g, 1e-12, "running average, " + what);
      }
    }
    plain.cleargrads();
    ghost.cleargrads();
  }
}

// Parameters and mean running averages after `steps` updates of momentum SGD: one process with ghost
// batches (multi false) or this rank's rows with the multi-node optimizer.
std::vector<std::vector<double>> train(bool multi, Dtype dtype) {
  auto dtype_guard = using_config("dtype", dtype);
  const int k = comm().size();
  const int64_t global = k * kGhost, lo = multi ? comm().rank() * kGhost : 0, hi = multi ? lo + kGhost : global;
  L::BatchNormalizationOptions o;
  if (!multi) o.ghost_batch_size = kGhost;
  BnNet net(kIn, kHidden, kOut, o);
  std::unique_ptr<O::Optimizer> opt = std::make_unique<O::MomentumSGD>(0.1, 0.9);
  if (multi) opt = create_multi_node_optimizer(std::move(opt), comm());
  opt->setup(net);
  for (int step = 0; step < 4; ++step) {
    const Array x = randn({global, kIn}, dtype, 100 + static_cast<uint64_t>(step)).slice(0, lo, hi).copy();
    const Array t = randn({global, kOut}, dtype, 110 + static_cast<uint64_t>(step)).slice(0, lo, hi).copy();
    opt->update([&] { return F::mean_squared_error(net(Variable(x)), Variable(t)); });
  }
  auto values = param_values(net);
  for (auto* bn : bns(net)) {
    for (const Array* a : {&bn->avg_mean(), &bn->avg_var()}) {
      const Array mean = multi ? comm().allreduce(a->astype(Dtype::float64), ReduceOp::sum) : a->astype(Dtype::float64);
      values.push_back(F::mul(Variable(mean), multi ? 1.0 / k : 1.0).array().to_vector<double>());
    }
  }
  return values;
}

TEST(GhostBatchNormalizationAgainstRanks, TrainingEqualsKRanks) {
  EXPECT_LT(max_rel_diff(train(true, Dtype::float64), train(false, Dtype::float64)), 1e-12);
  EXPECT_LT(max_rel_diff(train(true, Dtype::float32), train(false, Dtype::float32)), 1e-5);
}

}  // namespace
}  // namespace rensa::mn::test
