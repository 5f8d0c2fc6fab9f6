#pragma once
/// \file
/// StopOnSignal: ends training cleanly on SIGINT or SIGTERM (Ctrl-C; what Slurm and Kubernetes send
/// a job before they kill it). Chainer has no counterpart: a Chainer run loses its current epoch.

#include <functional>
#include <string>

#include "rensa/core/error.h"
#include "rensa/training/extension.h"
#include "rensa/training/triggers.h"

namespace rensa::extensions {

/// Thrown out of Trainer::run by StopOnSignal after the snapshot is written. what() says which
/// signal, at which iteration and epoch, and where the snapshot is.
class Interrupted : public Error {
 public:
  /// `signal` stopped training; `message` is what(); `snapshot_path` is where the state was saved (empty: nowhere).
  Interrupted(int signal, const std::string& message, std::string snapshot_path)
      : Error(message), signal_(signal), snapshot_path_(std::move(snapshot_path)) {}
  /// The signal that stopped training (SIGINT, SIGTERM, SIGUSR1).
  int signal() const { return signal_; }
  /// 128 + the signal: the exit status a shell reports for a process that signal ended, and what
  /// a program should return for it (130 for Ctrl-C, 143 for SIGTERM).
  int exit_code() const { return 128 + signal_; }
  /// rethrow_with_context keeps the signal and the snapshot path.
  [[noreturn]] void throw_with_prefix(const std::string& prefix) const override {
    throw Interrupted(signal_, prefix + what(), snapshot_path_);
  }
  /// The snapshot written before stopping (empty when StopOnSignal saves none).
  const std::string& snapshot_path() const { return snapshot_path_; }

 private:
  int signal_;
  std::string snapshot_path_;
};

/// From initialize() to finalize(), SIGINT, SIGTERM and SIGUSR1 (which Open MPI's mpirun forwards
/// to every rank; scripts/mpirun sends it for its own SIGINT and SIGTERM) only raise a flag: the iteration under way
/// finishes with every extension of it, then this extension (priority -1000, after the snapshots)
/// calls `save`, and Trainer::run ends with Interrupted. A second signal before that ends the
/// process at once, as if no handler were installed. The previous handlers are restored at
/// finalize(). One StopOnSignal may run at a time in a process (Error otherwise).
class StopOnSignal : public training::Extension {
 public:
  /// `save` writes the trainer's state and returns the path it wrote (empty: nothing is saved).
  /// `any_rank`, given by rensa::mn::stop_on_signal, maps the signal this process received (0:
  /// none) to the largest any rank received (a collective, called once per iteration on every
  /// rank), so that all ranks stop after the same iteration.
  explicit StopOnSignal(std::function<std::string(training::Trainer&)> save = {},
                        std::function<int(int)> any_rank = {});
  /// Copies the callbacks only: the copy is not running (it owns no signal handlers until its own
  /// initialize()), so destroying it leaves a running original alone.
  StopOnSignal(const StopOnSignal& other);
  /// Not assignable (a running one would lose track of the handlers it installed).
  StopOnSignal& operator=(const StopOnSignal&) = delete;
  ~StopOnSignal() override;

  void initialize(training::Trainer& trainer) override;
  void operator()(training::Trainer& trainer) override;
  void finalize(training::Trainer& trainer) override;
  training::Trigger default_trigger() const override { return {1, "iteration"}; }
  int default_priority() const override { return -1000; }
  std::string default_name() const override { return "StopOnSignal"; }

  /// The signal received since the running StopOnSignal was initialized, or 0.
  static int received();

 private:
  void restore_handlers();

  std::function<std::string(training::Trainer&)> save_;
  std::function<int(int)> any_rank_;
  bool installed_ = false;
};

}  // namespace rensa::extensions
