// VariableStatisticsPlot: the statistics it samples (against NumPy's), its reservoir, the PNG it
// draws with gnuplot, and what bad options get.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "rensa/rensa.h"
#include "rensa/training.h"
#include "tests/unit/test_util.h"
#include "tests/unit/training/training_test_util.h"

namespace rensa {
namespace {

namespace E = extensions;
using testing_training::FakeUpdater;
using testing_training::TempDir;
using training::Trainer;

TEST(VariableStatisticsPlot, SamplesStatisticsAndDrawsAPng) {
  Variable a(Array::from_vector<double>({1, 2, 3}, {3}), true);
  Variable b(Array::from_vector<double>({4, 10}, {2}), true);
  b.set_grad(Variable(Array::from_vector<double>({0.5, -0.5}, {2})));
  FakeUpdater u(2);
  TempDir dir("variable_statistics_plot");
  Trainer trainer(u, {4, "iteration"}, dir.path());
  E::VariableStatisticsPlot plot({a, b});
  trainer.extend(plot);
  trainer.run();
  auto& ext = trainer.get_extension<E::VariableStatisticsPlot>("VariableStatisticsPlot");
  const auto samples = ext.samples();
  ASSERT_EQ(samples.size(), 4u);
  EXPECT_EQ(samples[0].iteration, 1);
  EXPECT_EQ(samples[3].iteration, 4);
  // data: all five elements together; numpy.mean, numpy.std, numpy.percentile of [1, 2, 3, 4, 10].
  const std::vector<double> expected = {4.0, 3.1622776601683795, 1.0,    1.0052, 1.0912, 1.6348,
                                        3.0, 6.1912,             9.4528, 9.9688, 10.0};
  const auto& data = samples[0].stats[0];
  ASSERT_EQ(data.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(data[i], expected[i], 1e-9) << i;
  // grad: only b has one.
  EXPECT_DOUBLE_EQ(samples[0].stats[1][0], 0.0);
  EXPECT_DOUBLE_EQ(samples[0].stats[1][1], 0.5);
  if (ext.available()) {
    std::ifstream png(dir / "statistics.png", std::ios::binary);
    char magic[8] = {};
    png.read(magic, 8);
    EXPECT_EQ(std::string(magic + 1, 3), "PNG");
  }
}

TEST(VariableStatisticsPlot, KeepsAUniformSampleOfIterations) {
  Variable a(Array::ones({2}), true);
  FakeUpdater u;
  Trainer trainer(u, {1, "iteration"});
  E::VariableStatisticsPlot plot({a}, {.max_sample_size = 3, .report_grad = false, .trigger = {1000, "iteration"}});
  for (int i = 0; i < 50; ++i) {
    u.update();
    plot(trainer);
  }
  const auto samples = plot.samples();
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_LT(samples[0].iteration, samples[1].iteration);
  EXPECT_LT(samples[1].iteration, samples[2].iteration);
  EXPECT_EQ(samples[0].stats.size(), 1u);  // data only
}

TEST(VariableStatisticsPlot, BadOptionsAreNamed) {
  Variable a(Array::ones({2}), true);
  using test::expect_error;
  expect_error<ValueError>([] { E::VariableStatisticsPlot(std::vector<Variable>{}); }, {"VariableStatisticsPlot", "at least one"});
  expect_error<ValueError>([&] { E::VariableStatisticsPlot({a}, {.max_sample_size = 0}); }, {"max_sample_size"});
  expect_error<ValueError>([&] { E::VariableStatisticsPlot({a}, {.report_data = false, .report_grad = false}); },
                           {"nothing to report"});
  expect_error<ValueError>([&] { E::VariableStatisticsPlot({a}, {.plot_mean = false, .plot_std = false, .percentile_sigmas = {}}); },
                           {"nothing to plot"});
  expect_error<ValueError>([&] { E::VariableStatisticsPlot({a}, {.percentile_sigmas = {50, 101}}); }, {"[0, 100]", "101"});
}

}  // namespace
}  // namespace rensa
