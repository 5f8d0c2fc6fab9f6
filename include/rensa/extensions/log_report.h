#pragma once
/// \file
/// LogReport: accumulates observations and appends their means to a JSON log at each interval
/// (Chainer's LogReport).

#include <functional>
#include <string>
#include <vector>

#include "rensa/serializers/serializer.h"
#include "rensa/training/extension.h"
#include "rensa/training/reporter.h"
#include "rensa/training/summary.h"
#include "rensa/training/triggers.h"

namespace rensa::extensions {

/// Every iteration, adds the observed values (all of them, or only `keys`) to a summary; when
/// `trigger` fires, appends an entry {"<key>": mean, ..., "epoch", "iteration", "elapsed_time"} to
/// the log and rewrites `<out>/<log_name>` as a JSON list (indented by 4, atomically). The log and
/// the running summary are saved in snapshots.
class LogReport : public training::Extension {
 public:
  /// `keys` empty: every observed key. `log_name` may use "{epoch}" and "{iteration}" (one file
  /// per entry); empty: keep the log in memory only.
  explicit LogReport(std::vector<std::string> keys = {}, training::Trigger trigger = {1, "epoch"},
                     std::string log_name = "log");

  void operator()(training::Trainer& trainer) override;
  std::string default_name() const override { return "LogReport"; }
  /// Saves/loads "_trigger/", "_summary/" and "_log" (the log as JSON text).
  void serialize(serializers::Serializer& s) override;

  /// The entries so far, oldest first.
  const std::vector<training::Observation>& log() const { return log_; }
  /// A function that edits each entry before it is stored (adds keys, ...).
  void set_postprocess(std::function<void(training::Observation&)> fn) { postprocess_ = std::move(fn); }

  /// The JSON text of a log (what the file contains): "epoch" and "iteration" as integers, other
  /// values as numbers, non-finite values as null.
  static std::string to_json(const std::vector<training::Observation>& log);
  /// Parses the JSON text of a log; IOError naming `what` on malformed input.
  static std::vector<training::Observation> from_json(const std::string& text, const std::string& what);

 private:
  std::vector<std::string> keys_;
  training::Trigger trigger_;
  std::string log_name_;
  training::DictSummary summary_;
  std::vector<training::Observation> log_;
  std::function<void(training::Observation&)> postprocess_;
};

}  // namespace rensa::extensions
