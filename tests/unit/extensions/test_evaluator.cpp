// Evaluator: exact means over examples, test mode, observer prefixes, and use in a trainer.

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "rensa/core/config.h"
#include "rensa/datasets/concat_examples.h"
#include "rensa/datasets/tuple_dataset.h"
#include "rensa/extensions/evaluator.h"
#include "rensa/extensions/log_report.h"
#include "rensa/functions/evaluation.h"
#include "rensa/functions/loss.h"
#include "rensa/functions/reduction.h"
#include "rensa/iterators/serial_iterator.h"
#include "rensa/links/classifier.h"
#include "rensa/links/linear.h"
#include "rensa/training/trainer.h"
#include "tests/unit/test_util.h"
#include "tests/unit/training/training_test_util.h"

namespace {

namespace E = rensa::extensions;
using rensa::testing_training::FakeUpdater;
using rensa::testing_training::TempDir;
using rensa::training::Trainer;

// x = 0, 1, ..., n-1 (float64), t = x mod 2.
std::shared_ptr<rensa::datasets::TupleDataset> counting(int64_t n) {
  std::vector<double> x;
  std::vector<int32_t> t;
  for (int64_t i = 0; i < n; ++i) {
    x.push_back(static_cast<double>(i));
    t.push_back(static_cast<int32_t>(i % 2));
  }
  return std::make_shared<rensa::datasets::TupleDataset>(
      std::vector<rensa::Array>{rensa::Array::from_vector(x, {n}), rensa::Array::from_vector(t, {n})});
}

// A link that reports the mean of its input batch and checks the evaluation mode.
struct MeanReporter : rensa::Link {
  int calls = 0;
  std::vector<int64_t> batch_sizes;
  rensa::Variable forward(const std::vector<rensa::Variable>& in) override {
    ++calls;
    EXPECT_FALSE(rensa::config().train);
    EXPECT_FALSE(rensa::config().enable_backprop);
    batch_sizes.push_back(in[0].shape()[0]);
    const rensa::Variable m = rensa::functions::mean(in[0]);
    rensa::training::report("x", m, this);
    return m;
  }
  using rensa::Link::forward;
};

TEST(Evaluator, BatchWeightedMeanWithShortLastBatch) {
  auto data = counting(10);
  rensa::iterators::SerialIterator it(data, 4, {.repeat = false, .shuffle = false, .seed = 0});
  MeanReporter link;
  E::Evaluator evaluator(it, link);
  // Not extended: no name, so keys carry only the target's name.
  const auto result = evaluator.evaluate();
  ASSERT_EQ(result.count("main/x"), 1u);
  // Batch means 1.5, 5.5, 8.5 with sizes 4, 4, 2: the mean over examples is 4.5, not 5.1667.
  EXPECT_DOUBLE_EQ(result.at("main/x"), 4.5);
  EXPECT_EQ(link.batch_sizes, (std::vector<int64_t>{4, 4, 2}));
  const auto sums = evaluator.evaluate_summary();  // resets the iterator: same result again
  EXPECT_DOUBLE_EQ(sums.entries().at("main/x").weight, 10.0);
  EXPECT_DOUBLE_EQ(sums.entries().at("main/x").x, 45.0);
  EXPECT_EQ(link.calls, 6);
  EXPECT_TRUE(rensa::config().train);  // restored
}

TEST(Evaluator, RepeatingIteratorStopsAfterOneEpoch) {
  auto data = counting(10);
  rensa::iterators::SerialIterator it(data, 4, {.repeat = true, .shuffle = false, .seed = 0});
  MeanReporter link;
  E::Evaluator evaluator(it, link);
  evaluator.evaluate();
  EXPECT_EQ(link.calls, 3);
}

TEST(Evaluator, ClassifierInTrainerReportsValidationKeys) {
  TempDir dir("evaluator");
  // Two features, 10 examples of 2 classes; a fixed linear model.
  std::vector<float> x;
  std::vector<int32_t> t;
  for (int i = 0; i < 10; ++i) {
    x.push_back(static_cast<float>(i) / 10.0f - 0.45f);
    x.push_back(static_cast<float>(i % 3));
    t.push_back(i % 2);
  }
  auto data = std::make_shared<rensa::datasets::TupleDataset>(
      std::vector<rensa::Array>{rensa::Array::from_vector(x, {10, 2}), rensa::Array::from_vector(t, {10})});
  auto linear = std::make_shared<rensa::links::Linear>(2, 2, rensa::links::LinearOptions{.seed = 1});
  rensa::links::Classifier model(linear);
  rensa::iterators::SerialIterator it(data, 3, {.repeat = false, .shuffle = false, .seed = 0});

  FakeUpdater updater(2);
  Trainer trainer(updater, {2, "epoch"}, dir.path());
  trainer.extend(E::Evaluator(it, model));
  trainer.extend(E::LogReport());
  trainer.run();
  const auto& log = trainer.get_extension<E::LogReport>("LogReport").log();
  ASSERT_EQ(log.size(), 2u);
  ASSERT_EQ(log[0].count("validation/main/loss"), 1u);
  ASSERT_EQ(log[0].count("validation/main/accuracy"), 1u);

  // The same numbers computed on the whole set at once.
  rensa::Variable y;
  {
    auto guard = rensa::no_backprop_mode();
    y = model.predictor()(rensa::Variable(data->columns()[0]));
  }
  const double loss = rensa::functions::softmax_cross_entropy(y, data->columns()[1]).array().item<double>();
  const double acc = rensa::functions::accuracy(y, data->columns()[1]).array().item<double>();
  EXPECT_NEAR(log[0].at("validation/main/loss"), loss, 1e-6);
  EXPECT_NEAR(log[0].at("validation/main/accuracy"), acc, 1e-6);
  EXPECT_EQ(trainer.get_extension("validation").default_name(), "validation");
}

// Chainer's eval_hook: called once per evaluation, in test mode, before the first batch (a
// recurrent model resets its state there).
TEST(Evaluator, EvalHookRunsBeforeEachEvaluation) {
  auto data = counting(10);
  rensa::iterators::SerialIterator it(data, 4, {.repeat = false, .shuffle = false, .seed = 0});
  MeanReporter link;
  std::vector<int> calls_seen;
  E::Evaluator* hooked = nullptr;
  E::Evaluator evaluator(it, link, {.eval_hook = [&](E::Evaluator& e) {
                           EXPECT_FALSE(rensa::config().train);
                           hooked = &e;
                           calls_seen.push_back(link.calls);
                         }});
  evaluator.evaluate();
  evaluator.evaluate();
  EXPECT_EQ(hooked, &evaluator);
  EXPECT_EQ(calls_seen, (std::vector<int>{0, 3}));
}

TEST(Evaluator, CustomEvalFunctionNameAndTargets) {
  TempDir dir("evaluator");
  auto data = counting(6);
  rensa::iterators::SerialIterator it(data, 4, {.repeat = false, .shuffle = false, .seed = 0});
  MeanReporter a, b;
  E::Evaluator evaluator(it, std::map<std::string, rensa::Link*>{{"main", &a}, {"aux", &b}},
                         {.converter = nullptr,
                          .device = rensa::Device::cpu(),
                          .eval_func = [&](const std::vector<rensa::Variable>& in) {
                            a.forward(in);
                            return b.forward(std::vector<rensa::Variable>{rensa::Variable(in[1].array().astype(
                                rensa::Dtype::float64))});
                          }});
  FakeUpdater updater(1);
  Trainer trainer(updater, {1, "iteration"}, dir.path());
  trainer.extend(evaluator, "test");
  rensa::training::Observation seen;
  trainer.extend([&](Trainer& t) { seen = t.observation(); }, "probe");
  trainer.run();
  EXPECT_DOUBLE_EQ(seen.at("test/main/x"), 2.5);
  EXPECT_DOUBLE_EQ(seen.at("test/aux/x"), 0.5);
  rensa::test::expect_error<rensa::ValueError>(
      [&] { E::Evaluator(it, std::map<std::string, rensa::Link*>{{"aux", &b}}); }, {"Evaluator", "\"main\""});
}

}  // namespace
