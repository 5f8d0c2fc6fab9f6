// The multi-node evaluator is exact on uneven shards (short last batches, empty shards), reports under
// the trainer's name on every rank; observations are averaged over ranks; and a whole training run
// on a dataset that does not divide by the rank count (equal-length shards) finishes on every rank
// with the evaluation of the single-process model.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "rensa/mn/evaluator.h"
#include "rensa/mn/multi_node_optimizer.h"
#include "rensa/mn/scatter.h"
#include "tests/mn/train_test_util.h"
#include "tests/unit/test_util.h"
#include "tests/unit/training/training_test_util.h"

namespace rensa::mn::test {
namespace {

using rensa::test::expect_error;
using rensa::testing_training::FakeUpdater;
using rensa::testing_training::TempDir;

// Example i is ({i, i * i} float32, i % 3 int32).
datasets::DatasetPtr numbered(int64_t n) {
  std::vector<float> x;
  std::vector<int32_t> t;
  for (int64_t i = 0; i < n; ++i) {
    x.push_back(static_cast<float>(i));
    x.push_back(static_cast<float>(i * i));
    t.push_back(static_cast<int32_t>(i % 3));
  }
  return std::make_shared<datasets::TupleDataset>(
      std::vector<Array>{Array::from_vector(x, {n, 2}), Array::from_vector(t, {n})});
}

// Reports the batch means of both input columns.
struct Probe : Link {
  Variable forward(const std::vector<Variable>& inputs) override {
    const std::vector<double> x = inputs.at(0).array().to_vector<double>();
    double a = 0, b = 0;
    for (std::size_t i = 0; i < x.size(); i += 2) {
      a += x[i];
      b += x[i + 1];
    }
    const double n = static_cast<double>(x.size() / 2);
    training::report({{"a", a / n}, {"b", b / n}}, this);
    return Variable();
  }
  using Link::forward;
};

TEST(MultiNodeEvaluator, ExactOnUnevenShards) {
  Communicator c = comm();
  // 37 examples: shards of 9 and 10 with batches of 4; 3 examples: some ranks have none.
  for (int64_t n : {int64_t{37}, int64_t{3}}) {
    const auto shard = scatter_dataset(numbered(n), c, {.force_equal_length = false});
    iterators::SerialIterator it(shard, 4, {.repeat = false, .shuffle = false});
    Probe probe;
    auto ev = create_multi_node_evaluator(extensions::Evaluator(it, probe), c);
    const training::Observation got = ev.evaluate();
    double a = 0, b = 0;
    for (int64_t i = 0; i < n; ++i) {
      a += static_cast<double>(i);
      b += static_cast<double>(i * i);
    }
    ASSERT_EQ(got.count("main/a"), 1u) << "n " << n;
    EXPECT_NEAR(got.at("main/a"), a / static_cast<double>(n), 1e-12);
    EXPECT_NEAR(got.at("main/b"), b / static_cast<double>(n), 1e-9);
    // The sums and counts themselves.
    const training::DictSummary sum = ev.evaluate_summary();
    EXPECT_DOUBLE_EQ(sum.entries().at("main/a").weight, static_cast<double>(n));
    // The same bits on every rank.
    const auto all = allgather_values({got.at("main/a"), got.at("main/b")});
    for (const auto& v : all) EXPECT_EQ(v, all[0]);
  }
}

TEST(MultiNodeEvaluator, ReportsUnderTheTrainersName) {
  Communicator c = comm();
  const auto shard = scatter_dataset(numbered(10), c, {.force_equal_length = false});
  iterators::SerialIterator it(shard, 3, {.repeat = false, .shuffle = false});
  Probe probe;
  FakeUpdater updater(2);
  TempDir dir("mn_evaluator");
  training::Trainer trainer(updater, {2, "iteration"}, dir.path());
  trainer.extend(create_multi_node_evaluator(extensions::Evaluator(it, probe), c), training::Trigger(1, "iteration"));
  training::Observation seen;
  trainer.extend([&](training::Trainer& t) { seen = t.observation(); }, "grab", training::Trigger(1, "iteration"),
                 training::kPriorityReader);
  trainer.run();
  EXPECT_EQ(trainer.extension_names().front(), "validation");
  ASSERT_EQ(seen.count("validation/main/a"), 1u);
  EXPECT_NEAR(seen.at("validation/main/a"), 4.5, 1e-12);
}

TEST(MultiNodeEvaluator, SummaryKeysMayDifferBetweenRanks) {
  Communicator c = comm();
  training::DictSummary s;
  s.add("common", static_cast<double>(c.rank()), 2.0);
  if (c.rank() == 0) s.add("only_root", 5.0, 1.0);
  const training::DictSummary all = allreduce_summary(s, c);
  const double n = c.size();
  EXPECT_NEAR(all.mean().at("common"), (n - 1) / 2, 1e-12);
  EXPECT_DOUBLE_EQ(all.entries().at("common").weight, 2.0 * n);
  EXPECT_DOUBLE_EQ(all.mean().at("only_root"), 5.0);
}

TEST(ObservationAggregator, AveragesOverRanks) {
  Communicator c = comm();
  const double n = c.size();
  for (bool every : {true, false}) {
    FakeUpdater updater(100);
    TempDir dir("mn_aggregator");
    training::Trainer trainer(updater, {4, "iteration"}, dir.path());
    // Each rank observes rank + iteration; only rank 0 observes "root_only".
    trainer.extend(
        [&](training::Trainer& t) {
          t.observation()["v"] = c.rank() + static_cast<double>(t.updater().iteration());
          if (c.rank() == 0) t.observation()["root_only"] = 7.0;
        },
        "writer", training::Trigger(1, "iteration"), training::kPriorityWriter);
    ObservationAggregatorOptions o;
    if (!every) {
      o.comm_trigger = training::Trigger(2, "iteration");
      o.suffix = "_all";
    }
    trainer.extend(ObservationAggregator(c, {"v", "root_only", "absent"}, o));
    std::vector<training::Observation> seen;
    trainer.extend([&](training::Trainer& t) { seen.push_back(t.observation()); }, "reader",
                   training::Trigger(1, "iteration"), training::kPriorityReader);
    trainer.run();
    ASSERT_EQ(seen.size(), 4u);
    for (std::size_t i = 0; i < seen.size(); ++i) {
      const double it = static_cast<double>(i + 1);
      if (every) {
        EXPECT_NEAR(seen[i].at("v"), (n - 1) / 2 + it, 1e-12);
        EXPECT_DOUBLE_EQ(seen[i].at("root_only"), 7.0);
        EXPECT_EQ(seen[i].count("absent"), 0u);
      } else {
        EXPECT_DOUBLE_EQ(seen[i].at("v"), c.rank() + it);  // the rank's own value stays
        if (i % 2 == 1) {
          // Iterations it - 1 and it averaged over time, then over ranks.
          EXPECT_NEAR(seen[i].at("v_all"), (n - 1) / 2 + it - 0.5, 1e-12);
        } else {
          EXPECT_EQ(seen[i].count("v_all"), 0u);
        }
      }
    }
  }
  expect_error<ValueError>([&] { ObservationAggregator(c, {}); }, {"ObservationAggregator", "no keys"});
}


TEST(ObservationAggregator, SerializesValuesBetweenCommunications) {
  Communicator c = comm();
  ObservationAggregatorOptions o;
  o.comm_trigger = training::Trigger(2, "iteration");
  ObservationAggregator a(c, {"v"}, o);
  FakeUpdater updater(100);
  TempDir dir("mn_aggregator_serialize");
  training::Trainer trainer(updater, {1, "iteration"}, dir.path());
  // One value seen, no communication yet: the value and the trigger's state are saved.
  updater.set_iteration(1);
  trainer.observation()["v"] = 10.0 * c.rank();
  a(trainer);
  serializers::DictionarySerializer saver;
  a.serialize(saver);
  ObservationAggregator b(c, {"v"}, o);
  serializers::DictionaryDeserializer loader(saver.target(), "memory");
  b.serialize(loader);
  updater.set_iteration(2);
  trainer.observation()["v"] = 10.0 * c.rank() + 2.0;
  b(trainer);
  // Mean over the two iterations (10 r + 1), then over ranks.
  EXPECT_NEAR(trainer.observation().at("v"), 10.0 * (c.size() - 1) / 2 + 1.0, 1e-12);
}

TEST(MultiNodeTraining, UnevenDatasetFinishesEverywhere) {
  Communicator c = comm();
  // 37 training examples: equal-length shards (ceil(37 / size) each) give every rank the same
  // number of iterations per epoch; the test set is a strict partition, evaluated exactly.
  const auto train = scatter_dataset(numbered(37), c, {.shuffle = true, .seed = 1});
  const auto test_all = numbered(23);
  const auto test = scatter_dataset(test_all, c, {.force_equal_length = false});
  L::Classifier model(std::make_shared<Net>(2, 8, 3, 11));
  auto opt = create_multi_node_optimizer(std::make_unique<optimizers::Adam>(0.01), c);
  opt->setup(model);
  iterators::SerialIterator train_iter(train, 4, {.seed = 9 + static_cast<uint64_t>(c.rank())});
  iterators::SerialIterator test_iter(test, 5, {.repeat = false, .shuffle = false});
  training::StandardUpdater updater(train_iter, *opt);
  TempDir dir("mn_uneven");
  training::Trainer trainer(updater, {2, "epoch"}, dir.path());
  trainer.extend(create_multi_node_evaluator(extensions::Evaluator(test_iter, model), c));
  trainer.extend(ObservationAggregator(c, {"main/loss", "main/accuracy"}));
  trainer.run();

  const int64_t per_rank = (37 + c.size() - 1) / c.size();
  EXPECT_EQ(updater.iteration(), (2 * per_rank + 3) / 4);
  const auto iters = allgather_values({static_cast<double>(updater.iteration())});
  for (const auto& v : iters) EXPECT_EQ(v, iters[0]);
  const auto params = allgather_values(flatten(param_values(model)));
  for (const auto& v : params) EXPECT_EQ(v, params[0]);

  // The exact evaluation equals one process evaluating the whole test set with the same model.
  auto& ev = trainer.get_extension<MultiNodeEvaluator>("validation");
  const training::Observation got = ev.evaluate();
  iterators::SerialIterator all_iter(test_all, 5, {.repeat = false, .shuffle = false});
  extensions::Evaluator single(all_iter, model);
  single.set_name("validation");
  const training::Observation want = single.evaluate();
  for (const char* key : {"validation/main/loss", "validation/main/accuracy"}) {
    ASSERT_EQ(got.count(key), 1u) << key;
    EXPECT_NEAR(got.at(key), want.at(key), 1e-5) << key;
  }
}

}  // namespace
}  // namespace rensa::mn::test
