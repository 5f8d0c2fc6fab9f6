#pragma once
/// \file
/// Triggers decide when the training loop stops and when an extension runs (Chainer's triggers).
/// A trigger is called once per iteration with the trainer, after the update, and answers whether
/// to fire. `Trigger` is a value-semantic handle to any trigger: a braced `{20, "epoch"}` builds an
/// IntervalTrigger, a class derived from TriggerBase is copied in, and a plain callable
/// `bool(Trainer&)` is wrapped.

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "rensa/serializers/serializer.h"
#include "rensa/training/summary.h"

namespace rensa::training {

class Trainer;

/// The length of training a trigger implies (what ProgressBar shows): a period and a unit.
struct TrainingLength {
  /// Length in units (1.5 epochs, 1000 iterations).
  double period = 0;
  /// "epoch" or "iteration".
  std::string unit;
};

/// Base of the trigger classes. Triggers keep state (the previous iteration they saw, running
/// summaries) and save it with serialize() so a resumed run fires exactly when the uninterrupted
/// one would have.
class TriggerBase {
 public:
  virtual ~TriggerBase() = default;
  /// True when the trigger fires at the trainer's current iteration. Called once per iteration.
  virtual bool operator()(Trainer& trainer) = 0;
  /// Saves/loads the trigger's state. Stateless triggers need not override it.
  virtual void serialize(serializers::Serializer& s) { (void)s; }
  /// The training length this trigger implies, if any (IntervalTrigger: its period and unit).
  virtual std::optional<TrainingLength> training_length() const { return std::nullopt; }
  /// True when the trigger will never fire again (ManualScheduleTrigger past its last point);
  /// the trainer then skips the extension's initialize().
  virtual bool finished() const { return false; }
};

/// A handle to a trigger with value semantics: copying a Trigger copies the trigger's state (a
/// trigger built from a shared_ptr is shared instead). A default-constructed Trigger is null: it
/// never fires, and Trainer::extend reads it as "the extension's default trigger".
class Trigger {
 public:
  Trigger() = default;
  /// An IntervalTrigger: `{20, "epoch"}`, `{100, "iteration"}`, `{0.5, "epoch"}`. ValueError for a
  /// unit other than "epoch" or "iteration" or a period that is not positive.
  template <class N>
    requires(std::is_arithmetic_v<N> && !std::is_same_v<N, bool>)
  Trigger(N period, std::string_view unit)  // NOLINT(google-explicit-constructor)
      : Trigger(make_interval(static_cast<double>(period), unit)) {}
  /// Copies a trigger object (IntervalTrigger, MinValueTrigger, a user's class, ...). T is never a
  /// Trigger (not a TriggerBase), so this does not hide the copy and move constructors.
  template <class T>
    requires(std::derived_from<std::decay_t<T>, TriggerBase>)
  Trigger(T&& trigger)  // NOLINT(google-explicit-constructor,bugprone-forwarding-reference-overload)
      : impl_(std::make_shared<std::decay_t<T>>(std::forward<T>(trigger))), clone_(&clone_as<std::decay_t<T>>) {}
  /// Shares a trigger object (copies of this handle call the same object).
  Trigger(std::shared_ptr<TriggerBase> trigger)  // NOLINT(google-explicit-constructor)
      : impl_(std::move(trigger)) {}
  /// Wraps a stateless callable `bool(Trainer&)`.
  template <class F>
    requires(std::is_invocable_r_v<bool, F&, Trainer&> && !std::derived_from<std::decay_t<F>, TriggerBase> &&
             !std::is_same_v<std::decay_t<F>, Trigger> && !std::is_same_v<std::decay_t<F>, std::nullptr_t>)
  Trigger(F fn)  // NOLINT(google-explicit-constructor)
      : Trigger(make_function(std::function<bool(Trainer&)>(std::move(fn)))) {}

  /// Copies the trigger's state (a trigger held through a shared_ptr stays shared).
  Trigger(const Trigger& other);
  /// Copies the trigger's state (a trigger held through a shared_ptr stays shared).
  Trigger& operator=(const Trigger& other);
  /// Takes the other's trigger; the other becomes null.
  Trigger(Trigger&&) noexcept = default;
  /// Takes the other's trigger; the other becomes null.
  Trigger& operator=(Trigger&&) noexcept = default;

  /// False for a null trigger.
  explicit operator bool() const { return impl_ != nullptr; }
  /// Calls the trigger; a null trigger never fires.
  bool operator()(Trainer& trainer) const { return impl_ != nullptr && (*impl_)(trainer); }
  /// Saves/loads the trigger's state (nothing for a null trigger).
  void serialize(serializers::Serializer& s) const {
    if (impl_ != nullptr) impl_->serialize(s);
  }
  /// The training length the trigger implies (nullopt for a null trigger or one that implies none).
  std::optional<TrainingLength> training_length() const {
    return impl_ != nullptr ? impl_->training_length() : std::nullopt;
  }
  /// True when the trigger will never fire again (false for a null trigger).
  bool finished() const { return impl_ != nullptr && impl_->finished(); }
  /// The trigger object as a `T`, or nullptr when it is another kind.
  template <class T>
  T* get() const {
    return dynamic_cast<T*>(impl_.get());
  }

 private:
  using CloneFn = std::shared_ptr<TriggerBase> (*)(const TriggerBase&);
  template <class T>
  static std::shared_ptr<TriggerBase> clone_as(const TriggerBase& t) {
    return std::make_shared<T>(static_cast<const T&>(t));
  }
  static Trigger make_interval(double period, std::string_view unit);
  static Trigger make_function(std::function<bool(Trainer&)> fn);

  std::shared_ptr<TriggerBase> impl_;
  CloneFn clone_ = nullptr;
};

/// Fires every `period` epochs or iterations (Chainer's IntervalTrigger). For epochs it compares
/// the updater's epoch_detail with the one it saw at its previous call, so fractional periods
/// (0.5 epoch) work and a resumed run fires at the same iterations.
class IntervalTrigger : public TriggerBase {
 public:
  /// ValueError for a unit other than "epoch" or "iteration", a period <= 0, or a fractional
  /// period in iterations.
  IntervalTrigger(double period, std::string unit);
  bool operator()(Trainer& trainer) override;
  void serialize(serializers::Serializer& s) override;
  std::optional<TrainingLength> training_length() const override { return TrainingLength{period_, unit_}; }
  /// The period, in `unit`s.
  double period() const { return period_; }
  /// "epoch" or "iteration".
  const std::string& unit() const { return unit_; }

 private:
  double period_;
  std::string unit_;
  int64_t previous_iteration_ = 0;
  double previous_epoch_detail_ = 0.0;
};

/// Fires once at each of the given points (epochs or iterations): when the updater passes p, i.e.
/// previous < p <= current (Chainer's ManualScheduleTrigger).
class ManualScheduleTrigger : public TriggerBase {
 public:
  /// ValueError for a bad unit or an empty list of points.
  ManualScheduleTrigger(std::vector<double> points, std::string unit);
  bool operator()(Trainer& trainer) override;
  void serialize(serializers::Serializer& s) override;
  bool finished() const override { return finished_; }

 private:
  std::vector<double> points_;
  std::string unit_;
  int64_t previous_iteration_ = 0;
  double previous_epoch_detail_ = 0.0;
  bool finished_ = false;
};

/// Fires once: at the first iteration (Chainer's OnceTrigger). With `call_on_resume` it fires
/// again at the first iteration after the trainer resumes from a snapshot.
class OnceTrigger : public TriggerBase {
 public:
  /// `call_on_resume`: fire again at the first iteration after a resume.
  explicit OnceTrigger(bool call_on_resume = false) : resumed_(call_on_resume) {}
  bool operator()(Trainer& trainer) override;
  /// Saves whether it has fired; a snapshot without the flag (the trigger was added later) loads as
  /// "has fired", as Chainer's (which warns).
  void serialize(serializers::Serializer& s) override;
  bool finished() const override { return !(first_ || resumed_); }

 private:
  bool first_ = true;
  bool resumed_;
};

/// Fires at the first iteration after every `period` seconds of the trainer's elapsed time
/// (Chainer's TimeTrigger): when elapsed_time passes the next multiple of the period.
class TimeTrigger : public TriggerBase {
 public:
  /// ValueError unless period > 0.
  explicit TimeTrigger(double period);
  bool operator()(Trainer& trainer) override;
  void serialize(serializers::Serializer& s) override;

 private:
  double period_;
  double next_time_;
};

/// Fires when the mean of observation `key` over each interval of `check_trigger` is the best so
/// far (Chainer's BestValueTrigger): the base of MinValueTrigger and MaxValueTrigger.
class BestValueTrigger : public TriggerBase {
 public:
  /// `better(best, value)` says whether `value` beats `best`.
  BestValueTrigger(std::string key, std::function<bool(double best, double value)> better,
                   Trigger check_trigger = {1, "epoch"});
  bool operator()(Trainer& trainer) override;
  void serialize(serializers::Serializer& s) override;
  /// The best mean seen, if any.
  std::optional<double> best_value() const { return best_; }

 private:
  std::string key_;
  std::function<bool(double, double)> better_;
  Trigger check_trigger_;
  DictSummary summary_;
  std::optional<double> best_;
};

/// Fires when the interval mean of `key` is the largest so far.
class MaxValueTrigger : public BestValueTrigger {
 public:
  /// `check_trigger`: when to compare (the mean is over the iterations since the last check).
  explicit MaxValueTrigger(std::string key, Trigger check_trigger = {1, "epoch"});
};

/// Fires when the interval mean of `key` is the smallest so far.
class MinValueTrigger : public BestValueTrigger {
 public:
  /// `check_trigger`: when to compare (the mean is over the iterations since the last check).
  explicit MinValueTrigger(std::string key, Trigger check_trigger = {1, "epoch"});
};

/// A stop trigger for early stopping (Chainer's EarlyStoppingTrigger): at each `check_trigger`
/// interval it compares the interval mean of `monitor` with the best so far, and fires after
/// `patience` checks without improvement, or when `max_trigger` fires.
class EarlyStoppingTrigger : public TriggerBase {
 public:
  /// `mode`: "min", "max", or "auto" (max when `monitor` contains "accuracy", min otherwise).
  /// ValueError for another mode or a negative patience.
  explicit EarlyStoppingTrigger(Trigger check_trigger = {1, "epoch"}, std::string monitor = "main/loss",
                                int64_t patience = 3, const std::string& mode = "auto", Trigger max_trigger = {100, "epoch"});
  bool operator()(Trainer& trainer) override;
  void serialize(serializers::Serializer& s) override;
  std::optional<TrainingLength> training_length() const override { return max_trigger_.training_length(); }
  /// Checks in a row without improvement.
  int64_t count() const { return count_; }
  /// The best value of `monitor` so far.
  double best() const { return best_; }

 private:
  Trigger check_trigger_, max_trigger_;
  std::string monitor_;
  int64_t patience_;
  bool maximize_;
  DictSummary summary_;
  double best_;
  int64_t count_ = 0;
};

}  // namespace rensa::training
