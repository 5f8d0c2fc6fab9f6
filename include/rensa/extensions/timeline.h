#pragma once
/// \file
/// Timeline: records where each training step's time goes (data wait, forward, backward, update,
/// the gradient buckets' allreduce and the waits for it, extensions) and writes it in the Chrome
/// trace format (open it in https://ui.perfetto.dev or chrome://tracing); reports a summary per
/// interval that LogReport logs. rensa::mn::timeline adds a file per rank, a merged file with a track
/// per rank on rank 0's clock, and the slowest rank. docs/profiling.md shows how to read it.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rensa/core/timeline.h"
#include "rensa/training/extension.h"

namespace rensa::extensions {

/// Options of Timeline.
struct TimelineOptions {
  /// Written in the trainer's out directory at the end of training, atomically.
  std::string filename = "timeline.json";
  /// When the summary is reported (use LogReport's trigger so that every log entry has one).
  training::Trigger trigger = {1, "epoch"};
  /// Events kept at most (about 100 bytes each in memory and in the file); later ones are counted in
  /// the summary but not drawn.
  int64_t max_events = int64_t{1} << 20;
};

/// Per step, over one interval (seconds; `exposed` a share of the step).
struct TimelineSummary {
  /// Steps (updates) in the interval.
  int64_t steps = 0;
  double step = 0;           ///< the whole iteration (the updater's update)
  double compute = 0;        ///< forward, backward and update, without the waits inside them
  double communication = 0;  ///< gradient averaging, wherever it ran (overlapped or not)
  double exposed = 0;        ///< share of the step the training thread waited for communication
  double data_wait = 0;      ///< waiting for the next batch
};

/// Reports, at each trigger, `timeline/step`, `timeline/compute`, `timeline/communication`,
/// `timeline/data_wait` (seconds per step) and `timeline/exposed` (share of the step) into the
/// trainer's observation. Recording starts in initialize and stops in finalize, which writes the
/// file. One Timeline per process at a time (ValueError otherwise).
class Timeline : public training::Extension {
 public:
  /// ValueError for an empty filename or a negative max_events.
  explicit Timeline(TimelineOptions options = {});
  ~Timeline() override;
  void initialize(training::Trainer& trainer) override;
  void operator()(training::Trainer& trainer) override;
  void finalize(training::Trainer& trainer) override;
  training::Trigger default_trigger() const override { return options_.trigger; }
  int default_priority() const override { return training::kPriorityWriter; }
  std::string default_name() const override { return "Timeline"; }

  /// The summary of the last interval.
  const TimelineSummary& last_summary() const { return last_summary_; }

 protected:
  /// Writes the observation's entries; rensa::mn's adds the slowest rank.
  virtual void report(training::Trainer& trainer, const TimelineSummary& summary);
  /// Writes the file(s); rensa::mn's writes one per rank and the merged one.
  virtual void write(training::Trainer& trainer, const timeline::Recording& recording);
  /// The options given to the constructor.
  const TimelineOptions& options() const { return options_; }
  /// The steady clock when recording began (0 before initialize).
  int64_t recording_begin_ns() const { return recording_ ? recording_->begin_ns() : 0; }

 private:
  TimelineOptions options_;
  std::unique_ptr<timeline::Recording> recording_;
  timeline::Totals last_totals_;
  TimelineSummary last_summary_;
};

/// The Chrome trace events of `recording` (JSON objects separated by commas, no brackets) as process
/// `pid` named `process`, with times in microseconds from `zero_ns` on the steady clock, shifted by
/// `offset_ns` (another process's clock: rensa::mn aligns ranks with it).
std::string trace_events(const timeline::Recording& recording, int pid, const std::string& process, int64_t zero_ns,
                         int64_t offset_ns = 0);
/// A whole trace file of comma-separated `events` lists.
std::string trace_document(const std::vector<std::string>& events);

}  // namespace rensa::extensions
