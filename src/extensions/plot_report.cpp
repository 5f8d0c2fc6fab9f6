#include "rensa/extensions/plot_report.h"

#include <cmath>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "rensa/core/error.h"
#include "rensa/serializers/npz.h"
#include "rensa/training/trainer.h"
#include "src/extensions/gnuplot.h"

namespace rensa::extensions {
namespace {

int point_type(const std::string& marker) {
  if (marker == "+") return 1;
  if (marker == "x") return 2;
  if (marker == "*") return 3;
  if (marker == "s") return 4;
  if (marker == "o") return 6;
  if (marker == "^") return 8;
  return 2;
}

}  // namespace

PlotReport::PlotReport(std::vector<std::string> y_keys, std::string x_key, training::Trigger trigger,
                       std::string file_name, std::string marker, bool grid)
    : y_keys_(std::move(y_keys)),
      x_key_(std::move(x_key)),
      trigger_(std::move(trigger)),
      file_name_(std::move(file_name)),
      marker_(std::move(marker)),
      grid_(grid) {
  RENSA_CHECK(!y_keys_.empty(), ValueError, "PlotReport: no y keys to plot");
  RENSA_CHECK(!file_name_.empty(), ValueError, "PlotReport: empty file name");
  RENSA_CHECK(!x_key_.empty(), ValueError, "PlotReport: empty x key");
  RENSA_CHECK(static_cast<bool>(trigger_), ValueError, "PlotReport: null trigger");
  for (const std::string& k : y_keys_) data_[k];
}

bool PlotReport::available() {
  if (!available_.has_value()) available_ = detail::gnuplot_found(gnuplot_);
  return *available_;
}

void PlotReport::warn_once(const std::string& message) {
  if (warned_) return;
  warned_ = true;
  std::cerr << "PlotReport: " << message << "\n";
}

void PlotReport::initialize(training::Trainer& trainer) {
  detail::remove_plot_temporaries(std::filesystem::path(trainer.out()) / file_name_, "PlotReport");
}

void PlotReport::operator()(training::Trainer& trainer) {
  const training::Observation& obs = trainer.observation();
  for (const std::string& k : y_keys_) {
    if (auto it = obs.find(k); it != obs.end()) summary_.add(k, it->second);
  }
  if (!trigger_(trainer)) return;
  training::Observation stats = summary_.mean();
  summary_.reset();
  stats["epoch"] = static_cast<double>(trainer.updater().epoch());
  stats["iteration"] = static_cast<double>(trainer.updater().iteration());
  const auto xit = stats.find(x_key_);
  if (xit == stats.end()) return;
  bool added = false;
  for (const std::string& k : y_keys_) {
    if (auto it = stats.find(k); it != stats.end()) {
      data_[k].emplace_back(xit->second, it->second);
      added = true;
    }
  }
  if (!added) return;
  if (!available()) {
    warn_once("the gnuplot program ('" + gnuplot_ + "') was not found; no plots will be drawn");
    return;
  }
  plot((std::filesystem::path(trainer.out()) / file_name_).string());
}

void PlotReport::plot(const std::string& path) {
  std::ostringstream data;
  data.precision(17);
  std::vector<std::pair<int, std::string>> series;  // (data index, title)
  for (const std::string& k : y_keys_) {
    int points = 0;
    for (const auto& [x, y] : data_.at(k)) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      data << x << ' ' << y << '\n';
      ++points;
    }
    if (points == 0) continue;
    data << "\n\n";
    series.emplace_back(static_cast<int>(series.size()), k);
  }
  if (series.empty()) return;
  const auto error = detail::draw_png(gnuplot_, path, "PlotReport", data.str(), [&](const std::string& data_path,
                                                                                    const std::string& png_path) {
    std::ostringstream script;
    script << "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) { set terminal pngcairo size 800,600 } "
              "else { set terminal png size 800,600 }\n"
           << "set termoption noenhanced\n"
           << "set output " << detail::gp_quote(png_path) << "\n"
           << "set xlabel " << detail::gp_quote(x_key_) << "\n"
           << "set key below\n";
    if (grid_) script << "set grid\n";
    script << "plot ";
    for (const auto& [index, title] : series) {
      script << (index ? ", " : "") << detail::gp_quote(data_path) << " index " << index
             << " using 1:2 with linespoints pointtype " << point_type(marker_) << " title " << detail::gp_quote(title);
    }
    script << "\nset output\n";
    return script.str();
  });
  if (error) warn_once(*error);
}

void PlotReport::serialize(serializers::Serializer& s) {
  trigger_.serialize(s.child("_trigger"));
  summary_.serialize(s.child("_summary"));
  const std::string key = "_plot_" + file_name_;
  if (s.is_loading()) {
    std::string text;
    s.string(key, text);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      RENSA_THROW(IOError, "PlotReport: '", s.path(), key, "' is not valid JSON: ", e.what());
    }
    RENSA_CHECK(j.is_object(), IOError, "PlotReport: '", s.path(), key, "' is not a JSON object");
    data_.clear();
    for (const std::string& k : y_keys_) data_[k];
    for (const auto& [k, points] : j.items()) {
      RENSA_CHECK(points.is_array(), IOError, "PlotReport: '", s.path(), key, "': '", k, "' is not a list");
      auto& dst = data_[k];
      for (const auto& p : points) {
        RENSA_CHECK(p.is_array() && p.size() == 2, IOError, "PlotReport: '", s.path(), key, "': a point of '", k,
                    "' is not an [x, y] pair");
        const auto num = [](const nlohmann::json& v) {
          return v.is_null() ? std::nan("") : v.get<double>();
        };
        dst.emplace_back(num(p[0]), num(p[1]));
      }
    }
  } else {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [k, points] : data_) {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& [x, y] : points) {
        list.push_back({std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr),
                        std::isfinite(y) ? nlohmann::json(y) : nlohmann::json(nullptr)});
      }
      j[k] = std::move(list);
    }
    std::string text = j.dump();
    s.string(key, text);
  }
}

}  // namespace rensa::extensions
