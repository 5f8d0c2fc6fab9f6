#include "rensa/extensions/log_report.h"

#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "rensa/core/error.h"
#include "rensa/extensions/snapshot.h"
#include "rensa/training/trainer.h"
#include "src/serializers/atomic_file.h"

namespace rensa::extensions {
namespace {

bool is_counter(const std::string& key) { return key == "epoch" || key == "iteration"; }

}  // namespace

LogReport::LogReport(std::vector<std::string> keys, training::Trigger trigger, std::string log_name)
    : keys_(std::move(keys)), trigger_(std::move(trigger)), log_name_(std::move(log_name)) {
  RENSA_CHECK(static_cast<bool>(trigger_), ValueError, "LogReport: null trigger");
}

void LogReport::operator()(training::Trainer& trainer) {
  const training::Observation& obs = trainer.observation();
  if (keys_.empty()) {
    summary_.add(obs);
  } else {
    for (const std::string& k : keys_) {
      if (auto it = obs.find(k); it != obs.end()) summary_.add(k, it->second);
    }
  }
  if (!trigger_(trainer)) return;

  training::Observation entry = summary_.mean();
  const training::Updater& updater = trainer.updater();
  entry["epoch"] = static_cast<double>(updater.epoch());
  entry["iteration"] = static_cast<double>(updater.iteration());
  entry["elapsed_time"] = trainer.elapsed_time();
  if (postprocess_) postprocess_(entry);
  log_.push_back(std::move(entry));

  if (!log_name_.empty()) {
    const std::string name = format_filename(log_name_, trainer);
    const std::string path = (std::filesystem::path(trainer.out()) / name).string();
    serializers::detail::write_file_atomically(path, to_json(log_), "LogReport");
  }
  summary_.reset();
}

std::string LogReport::to_json(const std::vector<training::Observation>& log) {
  // Keys in a fixed order: the observed keys (sorted), then epoch, iteration, elapsed_time, as
  // Chainer writes them.
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const training::Observation& entry : log) {
    nlohmann::ordered_json e = nlohmann::ordered_json::object();
    for (const auto& [k, v] : entry) {
      if (is_counter(k) || k == "elapsed_time") continue;
      e[k] = std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
    }
    for (const char* k : {"epoch", "iteration"}) {
      if (auto it = entry.find(k); it != entry.end()) e[k] = static_cast<int64_t>(it->second);
    }
    if (auto it = entry.find("elapsed_time"); it != entry.end()) e["elapsed_time"] = it->second;
    list.push_back(std::move(e));
  }
  return list.dump(4);
}

std::vector<training::Observation> LogReport::from_json(const std::string& text, const std::string& what) {
  nlohmann::json list;
  try {
    list = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    RENSA_THROW(IOError, what, ": the log is not valid JSON: ", e.what());
  }
  RENSA_CHECK(list.is_array(), IOError, what, ": the log is not a JSON list");
  std::vector<training::Observation> log;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto& e = list[i];
    RENSA_CHECK(e.is_object(), IOError, what, ": log entry ", i, " is not a JSON object");
    training::Observation entry;
    for (const auto& [k, v] : e.items()) {
      if (v.is_null()) {
        entry[k] = std::numeric_limits<double>::quiet_NaN();
      } else {
        RENSA_CHECK(v.is_number(), IOError, what, ": value '", k, "' of log entry ", i, " is not a number");
        entry[k] = v.get<double>();
      }
    }
    log.push_back(std::move(entry));
  }
  return log;
}

void LogReport::serialize(serializers::Serializer& s) {
  trigger_.serialize(s.child("_trigger"));
  summary_.serialize(s.child("_summary"));
  if (s.is_loading()) {
    std::string text;
    s.string("_log", text);
    log_ = from_json(text, "LogReport: '" + s.path() + "_log'");
  } else {
    std::string text = to_json(log_);
    s.string("_log", text);
  }
}

}  // namespace rensa::extensions
