#include "rensa/extensions/variable_statistics_plot.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "rensa/core/error.h"
#include "rensa/links/link.h"
#include "rensa/training/trainer.h"
#include "src/extensions/gnuplot.h"
#include "src/extensions/statistics.h"

namespace rensa::extensions {

VariableStatisticsPlot::VariableStatisticsPlot(std::vector<Variable> targets, VariableStatisticsPlotOptions options)
    : targets_(std::move(targets)), options_(std::move(options)) {
  constexpr const char* op = "VariableStatisticsPlot";
  RENSA_CHECK(!targets_.empty(), ValueError, op, ": need at least one variable for which to collect statistics");
  for (std::size_t i = 0; i < targets_.size(); ++i) {
    RENSA_CHECK(!targets_[i].is_null(), ValueError, op, ": target ", i, " is a null Variable");
  }
  RENSA_CHECK(options_.max_sample_size >= 1, ValueError, op, ": max_sample_size must be at least 1, got ",
              options_.max_sample_size);
  for (double q : options_.percentile_sigmas) {
    RENSA_CHECK(q >= 0 && q <= 100, ValueError, op, ": percentiles must be in [0, 100], got ", q);
  }
  RENSA_CHECK(options_.plot_mean || options_.plot_std || !options_.percentile_sigmas.empty(), ValueError, op,
              ": nothing to plot (plot_mean, plot_std and percentile_sigmas are all off)");
  if (options_.report_data) keys_.push_back("data");
  if (options_.report_grad) keys_.push_back("grad");
  RENSA_CHECK(!keys_.empty(), ValueError, op, ": nothing to report (report_data and report_grad are both off)");
  RENSA_CHECK(!options_.filename.empty(), ValueError, op, ": empty file name");
}

VariableStatisticsPlot::VariableStatisticsPlot(Link& link, VariableStatisticsPlotOptions options)
    : VariableStatisticsPlot(link.params(), std::move(options)) {}

bool VariableStatisticsPlot::available() {
  if (!available_.has_value()) available_ = detail::gnuplot_found(gnuplot_);
  return *available_;
}

void VariableStatisticsPlot::initialize(training::Trainer& trainer) {
  detail::remove_plot_temporaries(std::filesystem::path(trainer.out()) / options_.filename, "VariableStatisticsPlot");
}

void VariableStatisticsPlot::operator()(training::Trainer& trainer) {
  Sample sample{trainer.updater().iteration(), {}};
  const std::size_t n_stats = (options_.plot_mean ? 1 : 0) + (options_.plot_std ? 1 : 0) +
                              options_.percentile_sigmas.size();
  for (const std::string& key : keys_) {
    std::vector<double> x;
    for (const Variable& v : targets_) {
      const bool grad = key == "grad";
      if (grad ? v.grad().is_null() : v.array().is_null()) continue;
      const std::vector<double> values = (grad ? v.grad().array() : v.array()).to_vector<double>();
      x.insert(x.end(), values.begin(), values.end());
    }
    std::vector<double> stats;
    if (x.empty()) {
      stats.assign(n_stats, std::nan(""));
    } else {
      if (options_.plot_mean) stats.push_back(detail::mean_of(x));
      if (options_.plot_std) stats.push_back(detail::std_of(x));
      if (!options_.percentile_sigmas.empty()) {
        const auto p = detail::percentiles(std::move(x), options_.percentile_sigmas);
        stats.insert(stats.end(), p.begin(), p.end());
      }
    }
    sample.stats.push_back(std::move(stats));
  }
  // Reservoir sampling (Chainer's Reservoir): every iteration seen is kept with equal probability.
  const auto size = static_cast<std::size_t>(options_.max_sample_size);
  if (reservoir_.size() < size) {
    reservoir_.push_back(std::move(sample));
  } else if (std::uniform_real_distribution<double>(0, 1)(rng_) < static_cast<double>(size) / (seen_ + 1)) {
    reservoir_[std::uniform_int_distribution<std::size_t>(0, size - 1)(rng_)] = std::move(sample);
  }
  ++seen_;
  if (!options_.trigger(trainer)) return;
  if (!available()) {
    if (!warned_) std::cerr << "VariableStatisticsPlot: the gnuplot program ('" << gnuplot_
                            << "') was not found; no plots will be drawn\n";
    warned_ = true;
    return;
  }
  plot((std::filesystem::path(trainer.out()) / options_.filename).string());
}

std::vector<VariableStatisticsPlot::Sample> VariableStatisticsPlot::samples() const {
  std::vector<Sample> out = reservoir_;
  std::sort(out.begin(), out.end(), [](const Sample& a, const Sample& b) { return a.iteration < b.iteration; });
  return out;
}

void VariableStatisticsPlot::plot(const std::string& path) {
  // One data block per key: iteration, then the statistics (gnuplot skips NaN points).
  std::ostringstream data;
  data.precision(17);
  const auto sorted = samples();
  for (std::size_t k = 0; k < keys_.size(); ++k) {
    for (const Sample& s : sorted) {
      data << s.iteration;
      for (double v : s.stats[k]) {
        data << ' ';
        if (std::isfinite(v)) data << v; else data << "NaN";
      }
      data << '\n';
    }
    data << "\n\n";
  }
  const bool moments = options_.plot_mean || options_.plot_std;
  const std::size_t n_pct = options_.percentile_sigmas.size();
  const int rows = (moments ? 1 : 0) + (n_pct > 0 ? 1 : 0);
  const int mean_col = 2, std_col = options_.plot_mean ? 3 : 2;
  const int pct_col = 2 + (options_.plot_mean ? 1 : 0) + (options_.plot_std ? 1 : 0);
  const auto error = detail::draw_png(gnuplot_, path, "VariableStatisticsPlot", data.str(), [&](const std::string& d,
                                                                                                const std::string& png) {
    const std::string file = detail::gp_quote(d);
    std::ostringstream gp;
    gp << "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) { set terminal pngcairo size " << 500 * keys_.size() << ","
       << 350 * rows << " } else { set terminal png size " << 500 * keys_.size() << "," << 350 * rows << " }\n"
       << "set termoption noenhanced\nset output " << detail::gp_quote(png) << "\nset key below\n"
       << "set xlabel 'iteration'\n" << (options_.grid ? "set grid\n" : "")
       << "set multiplot layout " << rows << "," << keys_.size() << " rowsfirst\n";
    auto panel = [&](std::size_t k) { gp << "set title " << detail::gp_quote(keys_[k]) << "\n"; };
    if (moments) {
      for (std::size_t k = 0; k < keys_.size(); ++k) {
        panel(k);
        gp << "plot " << file << " index " << k;
        if (options_.plot_mean && options_.plot_std) {
          gp << " using 1:" << mean_col << ":" << std_col << " with yerrorlines title 'mean, std'\n";
        } else {
          gp << " using 1:" << (options_.plot_mean ? mean_col : std_col) << " with lines title '"
             << (options_.plot_mean ? "mean" : "std") << "'\n";
        }
      }
    }
    if (n_pct > 0) {
      // Symmetric pairs of percentiles as bands, darker inward; an odd middle one as a line.
      for (std::size_t k = 0; k < keys_.size(); ++k) {
        panel(k);
        gp << "plot ";
        const std::size_t pairs = n_pct / 2;
        for (std::size_t i = 0; i < pairs; ++i) {
          const int lo = pct_col + static_cast<int>(i), hi = pct_col + static_cast<int>(n_pct - 1 - i);
          const double alpha = 0.15 + 0.45 * static_cast<double>(i) / static_cast<double>(std::max<std::size_t>(pairs, 2) - 1);
          gp << (i ? ", " : "") << file << " index " << k << " using 1:" << lo << ":" << hi
             << " with filledcurves fc rgb '#1f77b4' fs transparent solid " << alpha << " noborder "
             << (i == 0 ? "title 'percentile'" : "notitle");
        }
        if (n_pct % 2 == 1) {
          gp << (pairs ? ", " : "") << file << " index " << k << " using 1:" << pct_col + static_cast<int>(pairs)
             << " with lines lc rgb '#1f3f7f' title 'median'";
        }
        gp << "\n";
      }
    }
    gp << "unset multiplot\nset output\n";
    return gp.str();
  });
  if (error && !warned_) {
    std::cerr << "VariableStatisticsPlot: " << *error << "\n";
    warned_ = true;
  }
}

}  // namespace rensa::extensions
