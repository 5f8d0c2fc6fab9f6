#include "rensa/extensions/shifts.h"

#include <cmath>
#include <numbers>

#include "rensa/core/error.h"
#include "rensa/training/trainer.h"
#include "src/training/serialize_util.h"

namespace rensa::extensions {
namespace {

// Stops a decaying (growth < 1) or growing value at `target`. The ratio form also works for
// negative targets, as Chainer's.
double clamp_to_target(double value, std::optional<double> target, bool decreasing) {
  if (!target.has_value()) return value;
  if (decreasing ? value / *target < 1.0 : value / *target > 1.0) return *target;
  return value;
}

}  // namespace

// --- HyperparameterShift -----------------------------------------------------------------------

HyperparameterShift::HyperparameterShift(std::string attr, std::optional<double> init, optimizers::Optimizer* optimizer)
    : attr_(std::move(attr)), init_(init), optimizer_(optimizer) {
  RENSA_CHECK(!attr_.empty(), ValueError, "HyperparameterShift: empty hyperparameter name");
}

optimizers::Optimizer& HyperparameterShift::resolve(training::Trainer& trainer) {
  optimizers::Optimizer& opt = optimizer_ != nullptr ? *optimizer_ : trainer.updater().get_optimizer("main");
  RENSA_CHECK(opt.has_hyperparam(attr_), ValueError, default_name(), ": the optimizer has no hyperparameter '", attr_,
              "'");
  return opt;
}

void HyperparameterShift::set_value(optimizers::Optimizer& optimizer, double value) {
  optimizer.set_hyperparam(attr_, value);
  last_value_ = value;
}

void HyperparameterShift::initialize(training::Trainer& trainer) {
  optimizers::Optimizer& opt = resolve(trainer);
  for (const std::string& other_name : trainer.extension_names()) {
    auto* other = dynamic_cast<HyperparameterShift*>(&trainer.get_extension(other_name));
    if (other == nullptr || other == this || other->attr_ != attr_) continue;
    if (&other->resolve(trainer) != &opt) continue;
    RENSA_THROW(ValueError, default_name(), " '", name(), "': hyperparameter '", attr_,
                "' of the same optimizer is also driven by ", other->default_name(), " '", other_name,
                "'; two shifts on one hyperparameter overwrite each other: run them one after another "
                "in one ChainedShift");
  }
  if (!init_.has_value()) init_ = opt.hyperparam(attr_);
  // Resumed: the value of the last call; fresh: the value for the first update.
  set_value(opt, last_value_.has_value() ? *last_value_ : value_at(t_, *init_));
}

void HyperparameterShift::operator()(training::Trainer& trainer) {
  optimizers::Optimizer& opt = resolve(trainer);
  if (!init_.has_value()) init_ = opt.hyperparam(attr_);
  ++t_;
  advance(t_);
  set_value(opt, value_at(t_, *init_));
}

void HyperparameterShift::serialize(serializers::Serializer& s) {
  s.scalar("_t", t_);
  training::detail::serialize_optional(s, "_last_value", last_value_);
  training::detail::serialize_optional(s, "_init", init_);
}

// --- ExponentialShift --------------------------------------------------------------------------

ExponentialShift::ExponentialShift(std::string attr, double rate, std::optional<double> init,
                                   std::optional<double> target, optimizers::Optimizer* optimizer)
    : HyperparameterShift(std::move(attr), init, optimizer), rate_(rate), target_(target) {
  RENSA_CHECK(rate_ >= 0, ValueError, "ExponentialShift: rate must not be negative, got ", rate_);
}

double ExponentialShift::value_at(int64_t t, double init) const {
  return clamp_to_target(init * std::pow(rate_, static_cast<double>(t)), target_, rate_ <= 1.0);
}

// --- LinearShift -------------------------------------------------------------------------------

LinearShift::LinearShift(std::string attr, std::pair<double, double> value_range,
                         std::pair<int64_t, int64_t> time_range, optimizers::Optimizer* optimizer)
    : HyperparameterShift(std::move(attr), value_range.first, optimizer),
      value_range_(value_range),
      time_range_(time_range) {
  RENSA_CHECK(time_range_.first <= time_range_.second, ValueError, "LinearShift: time_range (", time_range_.first,
              ", ", time_range_.second, ") must not decrease");
}

double LinearShift::value_at(int64_t t, double init) const {
  (void)init;
  const auto [t1, t2] = time_range_;
  const auto [v1, v2] = value_range_;
  if (t <= t1) return v1;
  if (t >= t2) return v2;
  const double rate = static_cast<double>(t - t1) / static_cast<double>(t2 - t1);
  return v1 + rate * (v2 - v1);
}

// --- StepShift ---------------------------------------------------------------------------------

StepShift::StepShift(std::string attr, double gamma, int64_t step, std::optional<double> init,
                     std::optional<double> target, optimizers::Optimizer* optimizer)
    : HyperparameterShift(std::move(attr), init, optimizer), gamma_(gamma), step_(step), target_(target) {
  RENSA_CHECK(step_ >= 1, ValueError, "StepShift: step must be >= 1, got ", step_);
}

double StepShift::value_at(int64_t t, double init) const {
  const int64_t steps_done = t / step_;  // whole steps: the truncation is Chainer's floor(t / step)
  return clamp_to_target(init * std::pow(gamma_, static_cast<double>(steps_done)), target_, gamma_ <= 1.0);
}

// --- MultistepShift ----------------------------------------------------------------------------

MultistepShift::MultistepShift(std::string attr, double gamma, std::vector<int64_t> steps, std::optional<double> init,
                               optimizers::Optimizer* optimizer)
    : HyperparameterShift(std::move(attr), init, optimizer), gamma_(gamma), steps_(std::move(steps)) {
  for (std::size_t i = 1; i < steps_.size(); ++i) {
    RENSA_CHECK(steps_[i - 1] < steps_[i], ValueError, "MultistepShift: steps must increase, got ", steps_[i - 1],
                " then ", steps_[i]);
  }
}

void MultistepShift::advance(int64_t t) {
  if (current_step_ < static_cast<int64_t>(steps_.size()) && t >= steps_[static_cast<std::size_t>(current_step_)]) {
    ++current_step_;
  }
}

double MultistepShift::value_at(int64_t t, double init) const {
  (void)t;
  return init * std::pow(gamma_, static_cast<double>(current_step_));
}

void MultistepShift::serialize(serializers::Serializer& s) {
  HyperparameterShift::serialize(s);
  s.scalar("_current_step", current_step_);
}

// --- PolynomialShift ---------------------------------------------------------------------------

PolynomialShift::PolynomialShift(std::string attr, double rate, int64_t max_count, std::optional<double> init,
                                 std::optional<double> target, optimizers::Optimizer* optimizer)
    : HyperparameterShift(std::move(attr), init, optimizer), rate_(rate), max_count_(max_count), target_(target) {
  RENSA_CHECK(max_count_ >= 1, ValueError, "PolynomialShift: max_count must be >= 1, got ", max_count_);
}

double PolynomialShift::value_at(int64_t t, double init) const {
  const double decay = std::max(1.0 - static_cast<double>(t) / static_cast<double>(max_count_), 0.0);
  return clamp_to_target(init * std::pow(decay, rate_), target_, rate_ > 0);
}

// --- InverseShift ------------------------------------------------------------------------------

InverseShift::InverseShift(std::string attr, double gamma, double power, std::optional<double> init,
                           std::optional<double> target, optimizers::Optimizer* optimizer)
    : HyperparameterShift(std::move(attr), init, optimizer), gamma_(gamma), power_(power), target_(target) {
  RENSA_CHECK(gamma_ >= 0, ValueError, "InverseShift: gamma must not be negative, got ", gamma_);
}

double InverseShift::value_at(int64_t t, double init) const {
  return clamp_to_target(init * std::pow(1.0 + gamma_ * static_cast<double>(t), -power_), target_, power_ >= 0);
}

// --- WarmupShift -------------------------------------------------------------------------------

WarmupShift::WarmupShift(std::string attr, double warmup_start, int64_t warmup_iter, std::optional<double> init,
                         optimizers::Optimizer* optimizer)
    : HyperparameterShift(std::move(attr), init, optimizer), warmup_start_(warmup_start), warmup_iter_(warmup_iter) {
  RENSA_CHECK(warmup_iter_ >= 1, ValueError, "WarmupShift: warmup_iter must be >= 1, got ", warmup_iter_);
}

WarmupShift WarmupShift::from_fraction(std::string attr, double start_fraction, int64_t warmup_iter,
                                       std::optional<double> init, optimizers::Optimizer* optimizer) {
  RENSA_CHECK(start_fraction >= 0.0 && start_fraction <= 1.0, ValueError,
              "WarmupShift::from_fraction: start_fraction must be in [0, 1], got ", start_fraction);
  WarmupShift shift(std::move(attr), start_fraction, warmup_iter, init, optimizer);
  shift.start_is_fraction_ = true;
  return shift;
}

double WarmupShift::value_at(int64_t t, double init) const {
  if (t >= warmup_iter_) return init;
  const double start = start_is_fraction_ ? warmup_start_ * init : warmup_start_;
  return start + (init - start) * static_cast<double>(t) / static_cast<double>(warmup_iter_);
}

// --- CosineShift -------------------------------------------------------------------------------

CosineShift::CosineShift(std::string attr, int64_t max_count, double eta_min, std::optional<double> init, bool restart,
                         optimizers::Optimizer* optimizer)
    : HyperparameterShift(std::move(attr), init, optimizer), max_count_(max_count), eta_min_(eta_min), restart_(restart) {
  RENSA_CHECK(max_count_ >= 1, ValueError, "CosineShift: max_count must be >= 1, got ", max_count_);
}

double CosineShift::value_at(int64_t t, double init) const {
  const int64_t tc = restart_ ? t % max_count_ : std::min(t, max_count_);
  const double phase = std::numbers::pi * static_cast<double>(tc) / static_cast<double>(max_count_);
  return eta_min_ + (init - eta_min_) * (1.0 + std::cos(phase)) / 2.0;
}

}  // namespace rensa::extensions
