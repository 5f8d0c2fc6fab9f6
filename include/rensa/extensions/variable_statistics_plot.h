#pragma once
/// \file
/// VariableStatisticsPlot (Chainer's extensions.VariableStatisticsPlot): the mean, standard
/// deviation and percentiles of variables (a model's parameters and their gradients) over the
/// iterations, drawn into a PNG with gnuplot.

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "rensa/core/variable.h"
#include "rensa/training/extension.h"
#include "rensa/training/triggers.h"

namespace rensa {
class Link;
}

namespace rensa::extensions {

/// Options of VariableStatisticsPlot (Chainer's arguments).
struct VariableStatisticsPlotOptions {
  /// Iterations kept for the plot, a uniform sample when there are more (reservoir sampling).
  int64_t max_sample_size = 1000;
  /// Collect statistics of the targets' data.
  bool report_data = true;
  /// Collect statistics of the targets' gradients (where they have one).
  bool report_grad = true;
  /// Plot the mean (with the standard deviation as error bars when plot_std).
  bool plot_mean = true;
  /// Plot the standard deviation.
  bool plot_std = true;
  /// Percentiles drawn as bands between symmetric pairs (the default: the extremes and the normal
  /// distribution's mean and 1, 2, 3 sigma); empty draws none.
  std::vector<double> percentile_sigmas = {0, 0.13, 2.28, 15.87, 50, 84.13, 97.72, 99.87, 100};
  /// When the plot is drawn.
  training::Trigger trigger = {1, "epoch"};
  /// The PNG file, relative to the trainer's out directory (ValueError when empty).
  std::string filename = "statistics.png";
  /// Draw a grid.
  bool grid = true;
};

/// Every iteration, computes the statistics of all targets' elements together (their data and,
/// where they have one, their gradients) and keeps them in a reservoir sample; when `trigger`
/// fires, draws `<out>/<filename>` with gnuplot: a column for data and one for grad, the mean with
/// the standard deviation as error bars above, the percentile bands below. The PNG is replaced
/// atomically; without gnuplot one warning goes to std::cerr and nothing is drawn.
class VariableStatisticsPlot : public training::Extension {
 public:
  /// ValueError for no targets, a null one, a max_sample_size below 1, percentiles outside
  /// [0, 100], or nothing to report or plot.
  explicit VariableStatisticsPlot(std::vector<Variable> targets, VariableStatisticsPlotOptions options = {});
  /// The parameters of `link` and its descendants (taken now: add it after the link is built).
  explicit VariableStatisticsPlot(Link& link, VariableStatisticsPlotOptions options = {});

  void initialize(training::Trainer& trainer) override;
  void operator()(training::Trainer& trainer) override;
  std::string default_name() const override { return "VariableStatisticsPlot"; }

  /// One sampled iteration: per key ("data", then "grad"), its statistics in the order mean, std,
  /// percentiles (those plotted), NaN where the key had no values.
  struct Sample {
    /// The iteration sampled.
    int64_t iteration;
    /// Per key ("data", then "grad"): mean, std and the plotted percentiles.
    std::vector<std::vector<double>> stats;
  };
  /// The sample, by iteration.
  std::vector<Sample> samples() const;
  /// The gnuplot program: a name looked up on PATH, or a path (default "gnuplot").
  void set_gnuplot(std::string program) {
    gnuplot_ = std::move(program);
    available_.reset();
  }
  /// True when the gnuplot program is found (looked up once after each set_gnuplot).
  bool available();

 private:
  void plot(const std::string& path);
  std::vector<Variable> targets_;
  VariableStatisticsPlotOptions options_;
  std::vector<std::string> keys_;
  std::vector<Sample> reservoir_;
  int64_t seen_ = 0;
  std::mt19937_64 rng_{0};
  std::string gnuplot_ = "gnuplot";
  std::optional<bool> available_;
  bool warned_ = false;
};

}  // namespace rensa::extensions
