// ChainerMN's remaining extensions: AllreducePersistent averages floating persistents (and refuses
// models that differ between ranks), MultiNodeEarlyStoppingTrigger stops every rank at the
// iteration the averaged value decides, and GenericMultiNodeEvaluator aggregates every batch of
// every rank once on the root, also with uneven and empty shards.
#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <vector>

#include "rensa/mn/allreduce_persistent.h"
#include "rensa/mn/early_stopping.h"
#include "rensa/mn/generic_evaluator.h"
#include "rensa/mn/scatter.h"
#include "tests/mn/train_test_util.h"
#include "tests/unit/test_util.h"
#include "tests/unit/training/training_test_util.h"

namespace rensa::mn::test {
namespace {

using rensa::test::expect_error;
using rensa::testing_training::FakeUpdater;
using rensa::testing_training::TempDir;

TEST(AllreducePersistent, AveragesFloatingPersistentsOnly) {
  Communicator c = comm();
  const double n = c.size();
  L::BatchNormalization bn(3);
  bn.avg_mean().assign(Array::full({3}, 10.0 * c.rank()));
  bn.persistent("avg_var").assign(Array::from_vector<float>({1.0f * static_cast<float>(c.rank()), 2, 3}));
  bn.persistent("N").assign(Array::full({}, static_cast<double>(c.rank() + 5), Dtype::int64));
  AllreducePersistent ext(bn, c);
  ext();
  for (double v : bn.avg_mean().to_vector<double>()) EXPECT_NEAR(v, 10.0 * (n - 1) / 2, 1e-5);
  const auto var = bn.persistent("avg_var").to_vector<double>();
  EXPECT_NEAR(var[0], (n - 1) / 2, 1e-6);
  EXPECT_NEAR(var[1], 2.0, 1e-6);
  EXPECT_EQ(bn.persistent("N").item<int64_t>(), c.rank() + 5);  // integers are left alone
  EXPECT_EQ(ext.default_priority(), training::kPriorityWriter + 1);
}

TEST(AllreducePersistent, DifferentModelsFailOnEveryRank) {
  Communicator c = comm();
  L::BatchNormalization bn(c.rank() == c.size() - 1 ? 4 : 3);
  AllreducePersistent ext(bn, c);
  expect_error<ValueError>([&] { ext(); }, {"AllreducePersistent", "/avg_mean (3,) float32", "(4,)", "rank 0",
                                            "on rank " + std::to_string(c.size() - 1)});
  expect_error<ValueError>([&] { AllreducePersistent(bn, Communicator()); }, {"AllreducePersistent", "null"});
}

// Rank r observes loss = base(it) + (r - mean rank) * wobble(it): the ranks' own values disagree
// on when to stop, their average is base(it).
double observed_loss(int rank, double mean_rank, int64_t iteration) {
  const double base = iteration <= 4 ? 10.0 - static_cast<double>(iteration) : 6.0 + 0.1 * static_cast<double>(iteration);
  const double wobble = (iteration % 2 == 0 ? 3.0 : -3.0);
  return base + (rank - mean_rank) * wobble;
}

TEST(MultiNodeEarlyStoppingTrigger, EveryRankStopsWhereTheAverageSays) {
  Communicator c = comm();
  const double mean_rank = (c.size() - 1) / 2.0;
  FakeUpdater updater(1);  // an epoch per iteration
  TempDir dir("mn_early_stopping");
  MultiNodeEarlyStoppingTrigger stop(c, {.check_trigger = {1, "epoch"}, .monitor = "main/loss", .patience = 2,
                                         .max_trigger = {50, "epoch"}});
  training::Trainer trainer(updater, stop, dir.path());
  trainer.extend(
      [&](training::Trainer& t) {
        t.observation()["main/loss"] = observed_loss(c.rank(), mean_rank, t.updater().iteration());
      },
      "writer", training::Trigger(1, "iteration"), training::kPriorityWriter);
  trainer.run();
  // The average falls until iteration 4 (6.0), then rises: two checks without improvement later.
  EXPECT_EQ(updater.iteration(), 6);
  const auto all = allgather_values({static_cast<double>(updater.iteration())});
  for (const auto& v : all) EXPECT_EQ(v[0], 6.0);
  expect_error<ValueError>([&] { MultiNodeEarlyStoppingTrigger{Communicator{}}; },
                           {"MultiNodeEarlyStoppingTrigger", "null"});
  expect_error<ValueError>([&] { MultiNodeEarlyStoppingTrigger(c, {.mode = "sideways"}); },
                           {"EarlyStoppingTrigger", "sideways"});
}

// Gathers each batch's first-column values; the root reports their count and median.
class MedianEvaluator : public GenericMultiNodeEvaluator<std::vector<double>> {
 public:
  using GenericMultiNodeEvaluator::GenericMultiNodeEvaluator;
  std::vector<double> calc_local(const std::vector<Variable>& inputs) override {
    EXPECT_FALSE(config().train);
    return inputs.at(0).array().to_vector<double>();
  }
  training::Observation aggregate(std::vector<std::vector<double>> results) override {
    std::vector<double> all;
    for (const auto& r : results) all.insert(all.end(), r.begin(), r.end());
    std::sort(all.begin(), all.end());
    ++aggregations;
    return {{"count", static_cast<double>(all.size())}, {"median", all.empty() ? 0.0 : all[all.size() / 2]}};
  }
  int aggregations = 0;
};

TEST(GenericMultiNodeEvaluator, AggregatesEveryBatchOnceOnTheRoot) {
  Communicator c = comm();
  // 101 examples (uneven shards, more than 8 batches on a rank), then 3 (some ranks have none).
  for (int64_t n : {int64_t{101}, int64_t{3}}) {
    std::vector<float> x(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>((i * 37) % n);
    auto data = std::make_shared<datasets::TupleDataset>(std::vector<Array>{Array::from_vector(x, {n})});
    const auto shard = scatter_dataset(data, c, {.force_equal_length = false});
    iterators::SerialIterator it(shard, 2, {.repeat = false, .shuffle = false});
    for (int root : {0, c.size() - 1}) {
      MedianEvaluator ev(c, it, {.root = root});
      for (int pass = 0; pass < 2; ++pass) {  // the iterator is reset every time
        const auto result = ev.evaluate();
        ASSERT_EQ(result.has_value(), c.rank() == root);
        if (result.has_value()) {
          EXPECT_EQ(result->at("count"), static_cast<double>(n));
          EXPECT_EQ(result->at("median"), static_cast<double>(n / 2));
        }
      }
      EXPECT_EQ(ev.aggregations, c.rank() == root ? 2 : 0);
    }
  }
  iterators::SerialIterator empty_it(std::make_shared<datasets::TupleDataset>(std::vector<Array>{Array::zeros({1})}), 1,
                                     {.repeat = false});
  expect_error<ValueError>([&] { MedianEvaluator(c, empty_it, {.root = c.size()}); },
                           {"GenericMultiNodeEvaluator", "root " + std::to_string(c.size())});
}

TEST(GenericMultiNodeEvaluator, ReportsUnderItsNameOnTheRoot) {
  Communicator c = comm();
  auto data = std::make_shared<datasets::TupleDataset>(std::vector<Array>{Array::arange(0.0, 9.0)});
  const auto shard = scatter_dataset(data, c, {.force_equal_length = false});
  iterators::SerialIterator it(shard, 4, {.repeat = false, .shuffle = false});
  FakeUpdater updater(1);
  TempDir dir("mn_generic_evaluator");
  training::Trainer trainer(updater, {1, "iteration"}, dir.path());
  trainer.extend(std::make_shared<MedianEvaluator>(c, it));
  std::optional<training::Observation> seen;
  trainer.extend([&](training::Trainer& t) { seen = t.observation(); }, "reader", training::Trigger(1, "iteration"),
                 training::kPriorityReader);
  trainer.run();
  ASSERT_TRUE(seen.has_value());
  if (c.rank() == 0) {
    EXPECT_EQ(seen->at("validation/count"), 9.0);
    EXPECT_EQ(seen->at("validation/median"), 4.0);
  } else {
    EXPECT_EQ(seen->count("validation/median"), 0u);
  }
}

}  // namespace
}  // namespace rensa::mn::test
