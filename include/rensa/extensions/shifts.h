#pragma once
/// \file
/// Schedules of an optimizer hyperparameter ("lr", "alpha", "momentum", ...) over iterations
/// (Chainer's ExponentialShift, LinearShift, StepShift, MultistepShift, PolynomialShift,
/// InverseShift, WarmupShift, plus CosineShift). Each runs every iteration by default: it sets the
/// value for update t+1 after update t, and initialize() sets the value for the first update
/// (t = 0). The counter, the last value and the initial value are saved in snapshots, so a resumed
/// run uses exactly the same values.
///
/// One hyperparameter of one optimizer takes one shift: a second would overwrite the first's value
/// at every call, so initialize() refuses it (ValueError naming both extensions). To run schedules
/// one after another (a warm-up, then a decay), compose them in one ChainedShift
/// (rensa/extensions/chained_shift.h).

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rensa/optimizers/optimizer.h"
#include "rensa/serializers/serializer.h"
#include "rensa/training/extension.h"

namespace rensa::extensions {

/// Base of the schedules: owns the counter t (calls so far) and the last value set.
class HyperparameterShift : public training::Extension {
 public:
  /// Resolves the optimizer (the updater's "main" one unless given), reads the initial value from
  /// it when none was given, and sets the value for the next update (the last value when resumed).
  /// ValueError when the optimizer has no hyperparameter `attr`, or when another shift registered
  /// on the trainer drives the same hyperparameter of the same optimizer.
  void initialize(training::Trainer& trainer) override;
  /// Advances t and sets value(t).
  void operator()(training::Trainer& trainer) override;
  /// Saves/loads "_t", "_last_value" and "_init".
  void serialize(serializers::Serializer& s) override;

  /// Calls so far.
  int64_t t() const { return t_; }
  /// The hyperparameter's name.
  const std::string& attr() const { return attr_; }
  /// The schedule's value after `t` calls (`init` is the initial value in effect).
  virtual double value_at(int64_t t, double init) const = 0;

 protected:
  /// `optimizer` null: the updater's "main" optimizer, found at initialize().
  HyperparameterShift(std::string attr, std::optional<double> init, optimizers::Optimizer* optimizer);
  /// Extra per-call state (MultistepShift); called with the new t before value_at.
  virtual void advance(int64_t t) { (void)t; }
  // ChainedShift drives its segments' advance and checks their attr and optimizer.
  friend class ChainedShift;
  /// The optimizer driven (given, or the updater's "main"); ValueError when it has no hyperparameter attr.
  optimizers::Optimizer& resolve(training::Trainer& trainer);
  /// Sets the hyperparameter on `optimizer` and records it as the last value.
  void set_value(optimizers::Optimizer& optimizer, double value);

  /// The hyperparameter's name.
  std::string attr_;
  /// The initial value, unset until read from the optimizer at initialize() when not given.
  std::optional<double> init_;
  /// The optimizer given, or null for the updater's "main" one.
  optimizers::Optimizer* optimizer_;
  /// Calls so far.
  int64_t t_ = 0;
  /// The last value set (restored from snapshots).
  std::optional<double> last_value_;
};

/// value = init * rate^t, stopped at `target` when given (rate < 1: not below it; rate > 1: not
/// above). ValueError for a negative rate.
class ExponentialShift : public HyperparameterShift {
 public:
  /// `init` unset: the optimizer's value at initialize(); `optimizer` null: the updater's "main" one.
  ExponentialShift(std::string attr, double rate, std::optional<double> init = std::nullopt,
                   std::optional<double> target = std::nullopt, optimizers::Optimizer* optimizer = nullptr);
  double value_at(int64_t t, double init) const override;
  std::string default_name() const override { return "ExponentialShift"; }

 private:
  double rate_;
  std::optional<double> target_;
};

/// Linear interpolation: value_range.first until time_range.first, value_range.second from
/// time_range.second on, linear in between. ValueError when time_range.first > time_range.second.
class LinearShift : public HyperparameterShift {
 public:
  /// `optimizer` null: the updater's "main" one.
  LinearShift(std::string attr, std::pair<double, double> value_range, std::pair<int64_t, int64_t> time_range,
              optimizers::Optimizer* optimizer = nullptr);
  double value_at(int64_t t, double init) const override;
  std::string default_name() const override { return "LinearShift"; }

 private:
  std::pair<double, double> value_range_;
  std::pair<int64_t, int64_t> time_range_;
};

/// value = init * gamma^floor(t / step), stopped at `target` when given. ValueError for step < 1.
class StepShift : public HyperparameterShift {
 public:
  /// `init` unset: the optimizer's value at initialize(); `optimizer` null: the updater's "main" one.
  StepShift(std::string attr, double gamma, int64_t step, std::optional<double> init = std::nullopt,
            std::optional<double> target = std::nullopt, optimizers::Optimizer* optimizer = nullptr);
  double value_at(int64_t t, double init) const override;
  std::string default_name() const override { return "StepShift"; }

 private:
  double gamma_;
  int64_t step_;
  std::optional<double> target_;
};

/// value = init * gamma^k where k counts the steps reached: at each call, if t >= steps[k], k
/// advances by one (Chainer's MultistepShift). `steps` must be increasing (ValueError).
class MultistepShift : public HyperparameterShift {
 public:
  /// `init` unset: the optimizer's value at initialize(); `optimizer` null: the updater's "main" one.
  MultistepShift(std::string attr, double gamma, std::vector<int64_t> steps, std::optional<double> init = std::nullopt,
                 optimizers::Optimizer* optimizer = nullptr);
  double value_at(int64_t t, double init) const override;
  std::string default_name() const override { return "MultistepShift"; }
  /// Also saves/loads "_current_step".
  void serialize(serializers::Serializer& s) override;

 protected:
  void advance(int64_t t) override;

 private:
  double gamma_;
  std::vector<int64_t> steps_;
  int64_t current_step_ = 0;
};

/// value = init * max(1 - t / max_count, 0)^rate, stopped at `target` when given.
/// ValueError for max_count < 1.
class PolynomialShift : public HyperparameterShift {
 public:
  /// `init` unset: the optimizer's value at initialize(); `optimizer` null: the updater's "main" one.
  PolynomialShift(std::string attr, double rate, int64_t max_count, std::optional<double> init = std::nullopt,
                  std::optional<double> target = std::nullopt, optimizers::Optimizer* optimizer = nullptr);
  double value_at(int64_t t, double init) const override;
  std::string default_name() const override { return "PolynomialShift"; }

 private:
  double rate_;
  int64_t max_count_;
  std::optional<double> target_;
};

/// value = init * (1 + gamma * t)^(-power), stopped at `target` when given. ValueError for a
/// negative gamma.
class InverseShift : public HyperparameterShift {
 public:
  /// `init` unset: the optimizer's value at initialize(); `optimizer` null: the updater's "main" one.
  InverseShift(std::string attr, double gamma, double power, std::optional<double> init = std::nullopt,
               std::optional<double> target = std::nullopt, optimizers::Optimizer* optimizer = nullptr);
  double value_at(int64_t t, double init) const override;
  std::string default_name() const override { return "InverseShift"; }

 private:
  double gamma_, power_;
  std::optional<double> target_;
};

/// Linear warm-up (Goyal et al., "Accurate, Large Minibatch SGD"): from warmup_start at t = 0 to
/// init at t = warmup_iter, then init. `init` unset: the optimizer's value at initialize().
/// ValueError for warmup_iter < 1.
class WarmupShift : public HyperparameterShift {
 public:
  /// From `warmup_start` to init; `optimizer` null: the updater's "main" one.
  WarmupShift(std::string attr, double warmup_start, int64_t warmup_iter, std::optional<double> init = std::nullopt,
              optimizers::Optimizer* optimizer = nullptr);
  /// The warm-up from `start_fraction` * init (Goyal et al. start at lr / k for a batch k times the
  /// base one), so the start follows the target when it is only known at initialize(). ValueError
  /// for a start_fraction outside [0, 1] or warmup_iter < 1.
  static WarmupShift from_fraction(std::string attr, double start_fraction, int64_t warmup_iter,
                                   std::optional<double> init = std::nullopt,
                                   optimizers::Optimizer* optimizer = nullptr);
  double value_at(int64_t t, double init) const override;
  std::string default_name() const override { return "WarmupShift"; }
  /// Number of calls the warm-up lasts.
  int64_t warmup_iter() const { return warmup_iter_; }

 private:
  double warmup_start_;
  int64_t warmup_iter_;
  bool start_is_fraction_ = false;
};

/// Cosine annealing (Loshchilov and Hutter, SGDR; PyTorch's CosineAnnealingLR up to max_count,
/// which this one holds at eta_min after): value = eta_min + (init - eta_min) *
/// (1 + cos(pi * t' / max_count)) / 2 with t' = min(t, max_count), or with `restart`,
/// t' = t mod max_count (warm restarts every max_count calls). ValueError for max_count < 1.
class CosineShift : public HyperparameterShift {
 public:
  /// `init` unset: the optimizer's value at initialize(); `optimizer` null: the updater's "main" one.
  CosineShift(std::string attr, int64_t max_count, double eta_min = 0.0, std::optional<double> init = std::nullopt,
              bool restart = false, optimizers::Optimizer* optimizer = nullptr);
  double value_at(int64_t t, double init) const override;
  std::string default_name() const override { return "CosineShift"; }

 private:
  int64_t max_count_;
  double eta_min_;
  bool restart_;
};

}  // namespace rensa::extensions
