#pragma once
/// \file
/// ProgressBar: shows training progress, speed and the estimated time left (Chainer's
/// ProgressBar).

#include <chrono>
#include <cstdint>
#include <deque>
#include <iostream>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>

#include "rensa/training/extension.h"
#include "rensa/training/triggers.h"

namespace rensa::extensions {

/// Every `update_interval` iterations, shows the total progress (against `training_length`, by
/// default the stop trigger's), the progress in the current epoch, the iteration and epoch, the
/// speed in iterations per second and the estimated time to finish. On a terminal it redraws the
/// same lines in place (ANSI cursor movement and line clearing); otherwise (a file, a pipe) it
/// writes one plain line per update.
class ProgressBar : public training::Extension {
 public:
  /// ValueError for update_interval < 1 or bar_length < 1.
  explicit ProgressBar(std::optional<training::TrainingLength> training_length = std::nullopt,
                       int64_t update_interval = 100, std::ostream& out = std::cout, int bar_length = 50);

  void operator()(training::Trainer& trainer) override;
  void finalize(training::Trainer& trainer) override;
  std::string default_name() const override { return "ProgressBar"; }

  /// Overrides the terminal detection. By default `out` is a terminal when it is std::cout or
  /// std::cerr and the environment variable RENSA_TERMINAL is 1; when that is unset, a process
  /// that mpirun started (Open MPI gives each rank a pseudo-terminal, whatever mpirun writes to)
  /// assumes not, and any other asks whether that file descriptor is a terminal. ValueError (at the
  /// first draw) for a RENSA_TERMINAL other than 0 or 1.
  void set_terminal(bool terminal) { terminal_ = terminal; }

 private:
  std::optional<training::TrainingLength> training_length_;
  int64_t update_interval_;
  std::ostream* out_;
  int bar_length_;
  std::optional<bool> terminal_;
  bool drawn_ = false;
  // (iteration, epoch_detail, time) of recent updates, for the speed.
  std::deque<std::tuple<int64_t, double, std::chrono::steady_clock::time_point>> recent_;
};

}  // namespace rensa::extensions
