// MicroAverage and ParameterStatistics: their observations against values worked by hand (and
// NumPy's for the percentiles), their intervals, state across snapshots and bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "rensa/rensa.h"
#include "rensa/serializers/npz.h"
#include "rensa/training.h"
#include "tests/unit/test_util.h"
#include "tests/unit/training/training_test_util.h"

namespace rensa {
namespace {

using testing_training::FakeUpdater;
using testing_training::TempDir;
using training::Trainer;
namespace E = extensions;

TEST(MicroAverage, RatioOfSumsOverTheInterval) {
  FakeUpdater u(2);  // 2 iterations per epoch
  TempDir dir("micro_average");
  Trainer trainer(u, {4, "iteration"}, dir.path());
  const std::vector<std::pair<double, double>> batches = {{3, 4}, {1, 10}, {5, 5}, {0, 2}};
  std::vector<double> results;
  trainer.extend(
      [&](Trainer& t) {
        const auto& [n, d] = batches[static_cast<std::size_t>(u.iteration() - 1)];
        t.observation()["main/correct"] = n;
        t.observation()["main/total"] = d;
      },
      "counts", {1, "iteration"}, training::kPriorityWriter);
  trainer.extend(E::MicroAverage("main/correct", "main/total", "main/accuracy"));
  trainer.extend(
      [&](Trainer& t) {
        if (auto it = t.observation().find("main/accuracy"); it != t.observation().end()) results.push_back(it->second);
      },
      "read", {1, "iteration"}, training::kPriorityReader);
  trainer.run();
  // Epoch 1: (3 + 1) / (4 + 10); epoch 2: (5 + 0) / (5 + 2) (a mean of ratios would give 0.425, 0.5).
  ASSERT_EQ(results.size(), 2u);
  EXPECT_DOUBLE_EQ(results[0], 4.0 / 14.0);
  EXPECT_DOUBLE_EQ(results[1], 5.0 / 7.0);
  EXPECT_THROW(E::MicroAverage("", "t", "r"), ValueError);
}

TEST(MicroAverage, SumsSurviveASnapshot) {
  E::MicroAverage a("n", "d", "r");
  FakeUpdater u(4);
  Trainer trainer(u, {1, "iteration"});
  u.update();
  trainer.observation()["n"] = 2;
  trainer.observation()["d"] = 8;
  a(trainer);
  serializers::DictionarySerializer saver;
  a.serialize(saver);
  E::MicroAverage b("n", "d", "r");
  serializers::DictionaryDeserializer loader(saver.target(), "ext");
  b.serialize(loader);
  u.update();
  u.update();
  u.update();
  trainer.observation() = {{"n", 1}, {"d", 2}};
  b(trainer);  // iteration 4 closes the epoch: (2 + 1) / (8 + 2)
  EXPECT_DOUBLE_EQ(trainer.observation().at("r"), 0.3);
}

TEST(ParameterStatistics, DefaultStatisticsMatchNumPy) {
  const auto stats = E::ParameterStatistics::default_statistics();
  const std::vector<double> x = {4, 0, 1, 3, 0, 2};
  EXPECT_DOUBLE_EQ(stats.at("mean")(x)[0], 10.0 / 6.0);
  EXPECT_NEAR(stats.at("std")(x)[0], 1.4907119849998598, 1e-15);  // numpy.std
  EXPECT_EQ(stats.at("min")(x)[0], 0);
  EXPECT_EQ(stats.at("max")(x)[0], 4);
  EXPECT_EQ(stats.at("zeros")(x)[0], 2);
  // numpy.percentile(x, (0.13, 2.28, 15.87, 50, 84.13, 97.72, 99.87))
  const std::vector<double> expected = {0.0, 0.0, 0.0, 1.5, 3.2065, 3.886, 3.9935};
  const auto p = stats.at("percentile")(x);
  ASSERT_EQ(p.size(), expected.size());
  for (std::size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(p[i], expected[i], 1e-12) << i;
}

TEST(ParameterStatistics, ObservesIntervalMeansUnderChainersKeys) {
  auto dtype = using_config("dtype", Dtype::float64);
  links::Linear l(2, 1);
  l.W().array().assign(Array::from_vector<double>({1, 3}, {1, 2}));
  l.set_name("main");
  FakeUpdater u(2);
  TempDir dir("parameter_statistics");
  Trainer trainer(u, {2, "iteration"}, dir.path());
  E::ParameterStatisticsOptions options;
  options.prefix = "stats";
  E::ParameterStatistics ext(l, options);
  ext.register_statistics("l1", [](const std::vector<double>& x) {
    double s = 0;
    for (double v : x) s += std::abs(v);
    return std::vector<double>{s};
  });
  trainer.extend(ext);
  trainer.extend(
      [&](Trainer&) {
        // Iteration 1 sees W = (1, 3); then W doubles, so the mean over the epoch is 1.5 times.
        l.W().array().assign(Array::from_vector<double>({2, 6}, {1, 2}));
        l.W().set_grad(Variable(Array::from_vector<double>({0, 1}, {1, 2})));
      },
      "change", {1, "iteration"}, training::kPriorityReader);
  Observation seen;
  trainer.extend([&](Trainer& t) { seen = t.observation(); }, "read", {2, "iteration"}, training::kPriorityReader - 1);
  trainer.run();
  EXPECT_DOUBLE_EQ(seen.at("stats/main/W/data/mean"), (2.0 + 4.0) / 2);
  EXPECT_DOUBLE_EQ(seen.at("stats/main/W/data/l1"), (4.0 + 8.0) / 2);
  EXPECT_DOUBLE_EQ(seen.at("stats/main/W/data/percentile/3"), (2.0 + 4.0) / 2);
  EXPECT_DOUBLE_EQ(seen.at("stats/main/W/grad/zeros"), 1.0);  // the gradient exists in iteration 2 only
  EXPECT_DOUBLE_EQ(seen.at("stats/main/b/data/mean"), 0.0);
  EXPECT_EQ(seen.count("stats/main/b/grad/mean"), 0u);
}

TEST(ParameterStatistics, NaNParametersCanBeSkipped) {
  auto dtype = using_config("dtype", Dtype::float64);
  links::Linear l(2, 1, {.nobias = true});
  l.W().array().assign(Array::from_vector<double>({NAN, 1}, {1, 2}));
  FakeUpdater u;
  Trainer trainer(u, {1, "iteration"});
  E::ParameterStatisticsOptions options;
  options.report_grads = false;
  options.trigger = {1, "iteration"};
  options.skip_nan_params = true;
  E::ParameterStatistics ext(l, options);
  u.update();
  ext(trainer);
  EXPECT_TRUE(std::isnan(trainer.observation().at("None/W/data/percentile")));
  EXPECT_THROW(E::ParameterStatistics(std::vector<Link*>{}), ValueError);
  EXPECT_THROW(E::ParameterStatistics(std::vector<Link*>{nullptr}), ValueError);
  EXPECT_THROW(ext.register_statistics("", nullptr), ValueError);
}

}  // namespace
}  // namespace rensa
