#include "rensa/training/triggers.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>

#include "rensa/core/error.h"
#include "rensa/training/trainer.h"
#include "src/training/serialize_util.h"

namespace rensa::training {
namespace {

void check_unit(const char* op, const std::string& unit) {
  RENSA_CHECK(unit == "epoch" || unit == "iteration", ValueError, op, ": unit must be \"epoch\" or \"iteration\", got \"",
              unit, "\"");
}

// A callable wrapped as a trigger.
class FunctionTrigger final : public TriggerBase {
 public:
  explicit FunctionTrigger(std::function<bool(Trainer&)> fn) : fn_(std::move(fn)) {}
  bool operator()(Trainer& trainer) override { return fn_(trainer); }

 private:
  std::function<bool(Trainer&)> fn_;
};

}  // namespace

// --- Trigger -----------------------------------------------------------------------------------

Trigger::Trigger(const Trigger& other)
    : impl_(other.impl_ != nullptr && other.clone_ != nullptr ? other.clone_(*other.impl_) : other.impl_),
      clone_(other.clone_) {}

Trigger& Trigger::operator=(const Trigger& other) {
  if (this != &other) {
    Trigger copy(other);
    *this = std::move(copy);
  }
  return *this;
}

Trigger Trigger::make_interval(double period, std::string_view unit) {
  return Trigger(IntervalTrigger(period, std::string(unit)));
}

Trigger Trigger::make_function(std::function<bool(Trainer&)> fn) {
  RENSA_CHECK(fn != nullptr, ValueError, "Trigger: null function");
  return Trigger(FunctionTrigger(std::move(fn)));
}

// --- IntervalTrigger ---------------------------------------------------------------------------

IntervalTrigger::IntervalTrigger(double period, std::string unit) : period_(period), unit_(std::move(unit)) {
  check_unit("IntervalTrigger", unit_);
  RENSA_CHECK(period_ > 0 && std::isfinite(period_), ValueError, "IntervalTrigger: period must be positive, got ",
              period_, " ", unit_);
  RENSA_CHECK(unit_ == "epoch" || period_ == std::floor(period_), ValueError,
              "IntervalTrigger: a period in iterations must be a whole number, got ", period_);
}

bool IntervalTrigger::operator()(Trainer& trainer) {
  const Updater& updater = trainer.updater();
  bool fire;
  if (unit_ == "epoch") {
    const double epoch_detail = updater.epoch_detail();
    fire = std::floor(previous_epoch_detail_ / period_) != std::floor(epoch_detail / period_);
  } else {
    const auto period = static_cast<int64_t>(period_);
    // Floor division: the iteration count never goes negative, so integer division is floor.
    fire = previous_iteration_ / period != updater.iteration() / period;
  }
  previous_iteration_ = updater.iteration();
  previous_epoch_detail_ = updater.epoch_detail();
  return fire;
}

void IntervalTrigger::serialize(serializers::Serializer& s) {
  s.scalar("_previous_iteration", previous_iteration_);
  s.scalar("_previous_epoch_detail", previous_epoch_detail_);
}

// --- ManualScheduleTrigger ---------------------------------------------------------------------

ManualScheduleTrigger::ManualScheduleTrigger(std::vector<double> points, std::string unit)
    : points_(std::move(points)), unit_(std::move(unit)) {
  check_unit("ManualScheduleTrigger", unit_);
  RENSA_CHECK(!points_.empty(), ValueError, "ManualScheduleTrigger: the list of points is empty");
}

bool ManualScheduleTrigger::operator()(Trainer& trainer) {
  const Updater& updater = trainer.updater();
  const double max_point = *std::max_element(points_.begin(), points_.end());
  bool fire = false;
  if (unit_ == "epoch") {
    const double now = updater.epoch_detail();
    for (double p : points_) fire = fire || (previous_epoch_detail_ < p && p <= now);
    finished_ = max_point <= now;
  } else {
    const auto now = static_cast<double>(updater.iteration());
    const auto prev = static_cast<double>(previous_iteration_);
    for (double p : points_) fire = fire || (prev < p && p <= now);
    finished_ = max_point <= now;
  }
  previous_iteration_ = updater.iteration();
  previous_epoch_detail_ = updater.epoch_detail();
  return fire;
}

void ManualScheduleTrigger::serialize(serializers::Serializer& s) {
  s.scalar("_previous_iteration", previous_iteration_);
  s.scalar("_previous_epoch_detail", previous_epoch_detail_);
  s.scalar("finished", finished_);
}

// --- OnceTrigger, TimeTrigger -----------------------------------------------------------------

bool OnceTrigger::operator()(Trainer&) {
  const bool fire = !finished();
  first_ = false;
  resumed_ = false;
  return fire;
}

void OnceTrigger::serialize(serializers::Serializer& s) {
  if (s.is_loading() && !s.contains("_flag_first")) {
    first_ = false;
    return;
  }
  s.scalar("_flag_first", first_);
}

TimeTrigger::TimeTrigger(double period) : period_(period), next_time_(period) {
  RENSA_CHECK(period > 0, ValueError, "TimeTrigger: period must be positive seconds, got ", period);
}

bool TimeTrigger::operator()(Trainer& trainer) {
  if (next_time_ < trainer.elapsed_time()) {
    next_time_ += period_;
    return true;
  }
  return false;
}

void TimeTrigger::serialize(serializers::Serializer& s) { s.scalar("next_time", next_time_); }

// --- BestValueTrigger --------------------------------------------------------------------------

BestValueTrigger::BestValueTrigger(std::string key, std::function<bool(double, double)> better, Trigger check_trigger)
    : key_(std::move(key)), better_(std::move(better)), check_trigger_(std::move(check_trigger)) {
  RENSA_CHECK(better_ != nullptr, ValueError, "BestValueTrigger: null comparison for '", key_, "'");
  RENSA_CHECK(static_cast<bool>(check_trigger_), ValueError, "BestValueTrigger: null check trigger for '", key_, "'");
}

bool BestValueTrigger::operator()(Trainer& trainer) {
  const Observation& obs = trainer.observation();
  if (auto it = obs.find(key_); it != obs.end()) summary_.add(key_, it->second);
  if (!check_trigger_(trainer)) return false;
  const Observation stats = summary_.mean();
  const auto it = stats.find(key_);
  if (it == stats.end()) return false;
  const double value = it->second;
  summary_.reset();
  if (!best_.has_value() || better_(*best_, value)) {
    best_ = value;
    return true;
  }
  return false;
}

void BestValueTrigger::serialize(serializers::Serializer& s) {
  check_trigger_.serialize(s.child("interval_trigger"));
  summary_.serialize(s.child("summary"));
  detail::serialize_optional(s, "best_value", best_);
}

MaxValueTrigger::MaxValueTrigger(std::string key, Trigger check_trigger)
    : BestValueTrigger(std::move(key), [](double best, double value) { return value > best; },
                       std::move(check_trigger)) {}

MinValueTrigger::MinValueTrigger(std::string key, Trigger check_trigger)
    : BestValueTrigger(std::move(key), [](double best, double value) { return value < best; },
                       std::move(check_trigger)) {}

// --- EarlyStoppingTrigger ----------------------------------------------------------------------

EarlyStoppingTrigger::EarlyStoppingTrigger(Trigger check_trigger, std::string monitor, int64_t patience,
                                           const std::string& mode, Trigger max_trigger)
    : check_trigger_(std::move(check_trigger)),
      max_trigger_(std::move(max_trigger)),
      monitor_(std::move(monitor)),
      patience_(patience) {
  RENSA_CHECK(mode == "min" || mode == "max" || mode == "auto", ValueError,
              "EarlyStoppingTrigger: mode must be \"min\", \"max\" or \"auto\", got \"", mode, "\"");
  RENSA_CHECK(patience_ >= 0, ValueError, "EarlyStoppingTrigger: patience must be >= 0, got ", patience_);
  RENSA_CHECK(static_cast<bool>(check_trigger_), ValueError, "EarlyStoppingTrigger: null check trigger");
  maximize_ = mode == "max" || (mode == "auto" && monitor_.find("accuracy") != std::string::npos);
  best_ = maximize_ ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
}

bool EarlyStoppingTrigger::operator()(Trainer& trainer) {
  const Observation& obs = trainer.observation();
  const auto it = obs.find(monitor_);
  if (it != obs.end()) summary_.add(monitor_, it->second);
  if (max_trigger_(trainer)) return true;
  if (!check_trigger_(trainer)) return false;
  const Observation stats = summary_.mean();
  const auto st = stats.find(monitor_);
  // Nothing observed in this interval (the key is missing): no decision, as Chainer.
  if (it == obs.end() || st == stats.end()) return false;
  summary_.reset();
  const double value = st->second;
  if (maximize_ ? value > best_ : value < best_) {
    best_ = value;
    count_ = 0;
  } else {
    ++count_;
  }
  return count_ >= patience_;
}

void EarlyStoppingTrigger::serialize(serializers::Serializer& s) {
  check_trigger_.serialize(s.child("interval_trigger"));
  max_trigger_.serialize(s.child("max_trigger"));
  summary_.serialize(s.child("summary"));
  s.scalar("best", best_);
  s.scalar("count", count_);
}

}  // namespace rensa::training
