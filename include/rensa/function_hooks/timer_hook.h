#pragma once
/// \file
/// TimerHook (Chainer's function_hooks.TimerHook): the wall time of every function's forward and
/// backward on the thread it is installed on, per function label, with Chainer's report table.

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rensa/core/function_hook.h"

namespace rensa::function_hooks {

/// Seconds and calls of one name in a timer's summary. A call's time includes the calls nested in
/// it (a function's backward includes the functions it applies), as Chainer's.
struct TimerEntry {
  /// Seconds of forward and backward calls together.
  double elapsed_time = 0;
  /// Forward and backward calls together.
  int64_t occurrence = 0;
  /// Seconds of forward calls.
  double forward_time = 0;
  /// Forward calls.
  int64_t forward_occurrence = 0;
  /// Seconds of backward calls.
  double backward_time = 0;
  /// Backward calls.
  int64_t backward_occurrence = 0;
};

namespace detail {

/// The accumulation shared by the function and link timers: a stack of open calls, per-name
/// totals in first-seen order, and the time of outermost calls.
class ElapsedTable {
 public:
  void begin() { starts_.push_back(std::chrono::steady_clock::now()); }
  /// Ends the innermost call, adding it to `name`'s forward (or backward) time.
  void end(std::string_view name, bool backward);
  double total_time() const { return total_; }
  const std::vector<std::pair<std::string, TimerEntry>>& summary() const { return entries_; }
  /// Chainer's print_report table with `first_column` ("FunctionName", "LinkName") as the first
  /// header. `unit`: sec, ms, us, ns, auto (the largest entry's unit for all) or auto_foreach.
  /// ValueError for another unit.
  void print_report(std::ostream& os, std::string_view unit, std::string_view first_column) const;
  /// {"total_time": s, "entries": [{"name", "elapsed_time", "occurrence", "mean_time",
  /// "forward_time", ...}]}.
  std::string summary_json() const;
  void clear();

 private:
  std::vector<std::chrono::steady_clock::time_point> starts_;
  std::vector<std::pair<std::string, TimerEntry>> entries_;
  double total_ = 0;
};

}  // namespace detail

/// Measures the wall time of functions: install it with a FunctionHookScope around the code to
/// profile (a training run, a step), then print_report(). Only the installing thread's calls are
/// timed. Unlike Chainer it keeps per-name totals, not a list of every call (a long run would grow
/// it without bound), and splits forward from backward.
///
///     rensa::function_hooks::TimerHook timer;
///     { rensa::FunctionHookScope scope(timer); trainer.run(); }
///     timer.print_report();
class TimerHook : public FunctionHook {
 public:
  std::string name() const override { return "TimerHook"; }
  void forward_preprocess(const ForwardCall& call) override;
  void forward_postprocess(const ForwardCall& call) override;
  void backward_preprocess(const BackwardCall& call) override;
  void backward_postprocess(const BackwardCall& call) override;

  /// Seconds spent in outermost function calls (nested calls are not counted twice).
  double total_time() const { return table_.total_time(); }
  /// Per function label, in the order first seen.
  const std::vector<std::pair<std::string, TimerEntry>>& summary() const { return table_.summary(); }
  /// Chainer's table: FunctionName, ElapsedTime, Occurrence. `unit`: "sec", "ms", "us", "ns",
  /// "auto" (default) or "auto_foreach"; ValueError otherwise.
  void print_report(std::ostream& os, std::string_view unit = "auto") const;
  /// print_report to standard output.
  void print_report() const;
  /// The summary as JSON, with forward and backward split: {"total_time": ..., "entries": [{"name":
  /// "linear", "elapsed_time": ..., "occurrence": ..., "mean_time": ..., "forward_time": ...,
  /// "forward_occurrence": ..., "backward_time": ..., "backward_occurrence": ...}, ...]}.
  std::string summary_json() const { return table_.summary_json(); }
  /// Forgets what was measured.
  void clear() { table_.clear(); }

 private:
  detail::ElapsedTable table_;
};

}  // namespace rensa::function_hooks
