#include "rensa/extensions/timeline.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "rensa/training/trainer.h"
#include "src/serializers/atomic_file.h"

namespace rensa::extensions {

Timeline::Timeline(TimelineOptions options) : options_(std::move(options)) {
  RENSA_CHECK(!options_.filename.empty(), ValueError, "Timeline: empty filename");
  RENSA_CHECK(options_.max_events >= 0, ValueError, "Timeline: max_events must not be negative, got ",
              options_.max_events);
}

Timeline::~Timeline() = default;

void Timeline::initialize(training::Trainer&) {
  recording_ = std::make_unique<timeline::Recording>(options_.max_events);
  timeline::set_thread_name("training");
  last_totals_ = recording_->totals();
}

void Timeline::operator()(training::Trainer& trainer) {
  if (!recording_) return;
  const timeline::Totals now = recording_->totals();
  auto delta = [&](timeline::Category c) {
    const int i = static_cast<int>(c);
    return static_cast<double>(now.ns[i] - last_totals_.ns[i]) * 1e-9;
  };
  TimelineSummary s;
  s.steps = now.count[static_cast<int>(timeline::Category::step)] -
            last_totals_.count[static_cast<int>(timeline::Category::step)];
  if (s.steps > 0) {
    using timeline::Category;
    const double n = static_cast<double>(s.steps);
    const double step = delta(Category::step), wait = delta(Category::wait);
    s.step = step / n;
    s.compute = (delta(Category::forward) + delta(Category::backward) + delta(Category::update) - wait) / n;
    s.communication = delta(Category::comm) / n;
    s.exposed = step > 0 ? wait / step : 0.0;
    s.data_wait = delta(Category::data) / n;
  }
  last_totals_ = now;
  last_summary_ = s;
  if (s.steps > 0) report(trainer, s);
}

void Timeline::report(training::Trainer& trainer, const TimelineSummary& s) {
  auto& obs = trainer.observation();
  obs["timeline/step"] = s.step;
  obs["timeline/compute"] = s.compute;
  obs["timeline/communication"] = s.communication;
  obs["timeline/exposed"] = s.exposed;
  obs["timeline/data_wait"] = s.data_wait;
}

void Timeline::finalize(training::Trainer& trainer) {
  if (!recording_) return;
  std::unique_ptr<timeline::Recording> recording = std::move(recording_);
  write(trainer, *recording);
  if (recording->dropped() > 0) {
    std::cerr << "Timeline: " << recording->dropped() << " events past max_events (" << options_.max_events
              << ") were not kept in " << options_.filename << "\n";
  }
}

void Timeline::write(training::Trainer& trainer, const timeline::Recording& recording) {
  const std::string text = trace_document({trace_events(recording, 0, "rensa", recording.begin_ns())});
  serializers::detail::write_file_atomically((std::filesystem::path(trainer.out()) / options_.filename).string(),
                                             text, "Timeline");
}

std::string trace_events(const timeline::Recording& recording, int pid, const std::string& process, int64_t zero_ns,
                         int64_t offset_ns) {
  std::string out;
  auto add = [&](const nlohmann::json& e) {
    if (!out.empty()) out += ",\n";
    out += e.dump();
  };
  add({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", process}}}});
  add({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", pid}, {"args", {{"sort_index", pid}}}});
  const auto names = recording.thread_names();
  for (std::size_t t = 0; t < names.size(); ++t) {
    const std::string name = names[t].empty() ? "thread " + std::to_string(t) : names[t];
    add({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", t}, {"args", {{"name", name}}}});
  }
  char buf[160];
  for (const timeline::Event& e : recording.events()) {
    // Microseconds with the nanoseconds as decimals.
    std::snprintf(buf, sizeof buf, ", \"cat\": \"%s\", \"pid\": %d, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f",
                  timeline::category_name(e.category), pid, e.thread,
                  static_cast<double>(e.begin_ns - offset_ns - zero_ns) * 1e-3,
                  static_cast<double>(e.end_ns - e.begin_ns) * 1e-3);
    if (!out.empty()) out += ",\n";
    out += "{\"ph\": \"X\", \"name\": " + nlohmann::json(e.name).dump() + buf;
    if (e.arg >= 0) out += ", \"args\": {\"n\": " + std::to_string(e.arg) + "}";
    out += "}";
  }
  return out;
}

std::string trace_document(const std::vector<std::string>& events) {
  std::string out = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  bool first = true;
  for (const std::string& e : events) {
    if (e.empty()) continue;
    if (!first) out += ",\n";
    out += e;
    first = false;
  }
  return out + "\n]}\n";
}

}  // namespace rensa::extensions
