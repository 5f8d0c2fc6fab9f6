#pragma once
/// \file
/// PlotReport: plots observed values against epoch or iteration into a PNG with gnuplot
/// (Chainer's PlotReport, which uses matplotlib).

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rensa/serializers/serializer.h"
#include "rensa/training/extension.h"
#include "rensa/training/summary.h"
#include "rensa/training/triggers.h"

namespace rensa::extensions {

/// Accumulates the `y_keys` every iteration; when `trigger` fires, appends the interval means at
/// x = `x_key` ("epoch" or "iteration", or any observed key) and redraws `<out>/<file_name>` with
/// the gnuplot program (pngcairo terminal, png when cairo is missing). The PNG is written
/// atomically: gnuplot writes a temporary name in the same directory, which is then synced and
/// renamed. Without gnuplot, or when gnuplot fails, it prints one warning to std::cerr and skips
/// plotting; training goes on. The plotted points are saved in snapshots.
class PlotReport : public training::Extension {
 public:
  /// ValueError for an empty y_keys or file_name.
  explicit PlotReport(std::vector<std::string> y_keys, std::string x_key = "epoch",
                      training::Trigger trigger = {1, "epoch"}, std::string file_name = "plot.png",
                      std::string marker = "x", bool grid = true);

  void operator()(training::Trainer& trainer) override;
  /// Removes the temporary files of this plot that a killed run left behind.
  void initialize(training::Trainer& trainer) override;
  std::string default_name() const override { return "PlotReport"; }
  /// Saves/loads "_trigger/", "_summary/" and "_plot_<file_name>" (the points as JSON).
  void serialize(serializers::Serializer& s) override;

  /// The gnuplot program: a name looked up on PATH, or a path (default "gnuplot").
  void set_gnuplot(std::string program) {
    gnuplot_ = std::move(program);
    available_.reset();
  }
  /// True when the gnuplot program can be found (checked once, then cached).
  bool available();
  /// The points plotted so far for each y key.
  const std::map<std::string, std::vector<std::pair<double, double>>>& data() const { return data_; }

 private:
  void plot(const std::string& path);
  void warn_once(const std::string& message);

  std::vector<std::string> y_keys_;
  std::string x_key_;
  training::Trigger trigger_;
  std::string file_name_;
  std::string marker_;
  bool grid_;
  training::DictSummary summary_;
  std::map<std::string, std::vector<std::pair<double, double>>> data_;
  std::string gnuplot_ = "gnuplot";
  std::optional<bool> available_;
  bool warned_ = false;
};

}  // namespace rensa::extensions
