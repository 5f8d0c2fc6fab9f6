#pragma once
/// \file
/// snapshot and snapshot_object: save the trainer (or any serializable object) to an .npz file
/// (Chainer's snapshot extensions). Resume with Trainer::resume(path) or serializers::load_npz.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rensa/extensions/snapshot_writers.h"
#include "rensa/extensions/stop_on_signal.h"
#include "rensa/serializers/npz.h"
#include "rensa/serializers/serializer.h"
#include "rensa/training/extension.h"
#include "rensa/training/triggers.h"

namespace rensa::extensions {

/// The options of a snapshot, Chainer's arguments in Chainer's order.
struct SnapshotOptions {
  /// Asked at each trigger; the snapshot is taken only when it returns true (null: always).
  std::function<bool()> condition{};
  /// How the file is written (null: SimpleWriter, before training goes on). ThreadWriter and
  /// ThreadQueueWriter write in the background; the trainer's end waits for them.
  std::shared_ptr<SnapshotWriter> writer{};
  /// Also take a snapshot when the training loop throws (of the state at that moment). Not when
  /// the run fails while restoring (autoload) or before this extension initialized: the state may
  /// be half loaded then, and the newest file must stay as it is.
  bool snapshot_on_error = false;
  /// > 0: keep only the newest n files of the pattern in the directory, as Chainer does (older
  /// ones, those of an earlier run included, are deleted after each write); -1 keeps all.
  int n_retains = -1;
  /// At the start of Trainer::run, load the newest file of this snapshot's pattern in the trainer's
  /// out directory, if there is one (before any extension initializes); a file that cannot be
  /// loaded is an error. What a job restarted with the same command needs.
  bool autoload = false;
};

/// Saves a target to `<out>/<filename>` (atomically) when triggered. `filename` may contain
/// "{.updater.iteration}", "{.updater.epoch}" and "{.updater.epoch_detail}", replaced by the
/// trainer's values (Chainer's str.format on the trainer). Priority -100: it runs after every
/// writer and reader of the same iteration, so the snapshot holds their state.
class Snapshot : public training::Extension {
 public:
  /// `target` null: the trainer itself. ValueError for an empty file name or n_retains not -1 or
  /// positive.
  Snapshot(std::function<void(serializers::Serializer&)> target, std::string filename, training::Trigger trigger,
           SnapshotOptions options, std::string default_name = "snapshot");
  /// The snapshot with only n_retains set.
  Snapshot(std::function<void(serializers::Serializer&)> target, std::string filename, training::Trigger trigger,
           int n_retains = -1, std::string default_name = "snapshot");

  /// Takes the snapshot (unless the condition says no).
  void operator()(training::Trainer& trainer) override;
  /// Takes the snapshot now, whatever the condition (what a stop on a signal writes).
  void save(training::Trainer& trainer);
  /// autoload: loads the newest file of the pattern, if any.
  void restore(training::Trainer& trainer) override;
  /// Waits for the writer's pending writes.
  void finalize(training::Trainer& trainer) override;
  /// snapshot_on_error: writes the state at the error (synchronously).
  void on_error(training::Trainer& trainer, const std::exception_ptr& error) override;
  /// Removes the temporary files of this extension's file names that a killed run left behind
  /// (serializers::remove_stale_temporaries); other files are untouched.
  void initialize(training::Trainer& trainer) override;
  training::Trigger default_trigger() const override { return trigger_; }
  int default_priority() const override { return -100; }
  std::string default_name() const override { return default_name_; }

  /// The path the next call would write (for the trainer's current state).
  std::string path_for(const training::Trainer& trainer) const;
  /// Loads `path` into `trainer`: a snapshot file, or a directory whose newest file of this
  /// extension's pattern is taken (find_latest_snapshot). Returns the file loaded. IOError naming
  /// the directory and the pattern when it holds none (and as serializers::load_npz for a file).
  std::string resume(training::Trainer& trainer, const std::string& path) const;
  /// The file name pattern, relative to the trainer's out directory.
  const std::string& filename() const { return filename_; }
  /// The options given at construction.
  const SnapshotOptions& options() const { return options_; }

 private:
  void take(training::Trainer& trainer, SnapshotWriter& writer);  // through `writer`
  void load(training::Trainer& trainer, const std::string& file) const;

  std::function<void(serializers::Serializer&)> target_;
  std::string filename_;
  training::Trigger trigger_;
  SnapshotOptions options_;
  std::string default_name_;
  bool armed_ = false;  // initialized: an error is the training's, and snapshot_on_error may write
};

/// Snapshots the whole trainer (updater with model, optimizer and iterator; triggers; extensions;
/// elapsed time) every `trigger` (default: every epoch).
Snapshot snapshot(std::string filename = "snapshot_iter_{.updater.iteration}", training::Trigger trigger = {1, "epoch"},
                  int n_retains = -1);
/// The same with Chainer's other options: `snapshot("snapshot_iter_{.updater.iteration}", {1, "epoch"},
/// {.writer = std::make_shared<ThreadQueueWriter>(), .autoload = true})`.
Snapshot snapshot(std::string filename, training::Trigger trigger, SnapshotOptions options);

/// Snapshots `target` (a link, an optimizer, ...; kept by reference) every `trigger`.
template <serializers::Serializable T>
Snapshot snapshot_object(T& target, std::string filename, training::Trigger trigger = {1, "epoch"},
                         SnapshotOptions options = {}) {
  return Snapshot([&target](serializers::Serializer& s) { target.serialize(s); }, std::move(filename),
                  std::move(trigger), std::move(options), "snapshot_object");
}

/// StopOnSignal that saves through `snapshot` (which the trainer runs too): what
/// mn::stop_on_signal is for every rank of a job, for one process.
std::shared_ptr<StopOnSignal> stop_on_signal(std::shared_ptr<Snapshot> snapshot);

/// Replaces "{.updater.iteration}", "{.updater.epoch}", "{.updater.epoch_detail}", "{iteration}",
/// "{epoch}" in `pattern` with the trainer's values; ValueError naming an unknown field.
std::string format_filename(const std::string& pattern, const training::Trainer& trainer);
/// True when `name` is a file name format_filename could make from `pattern` (each field stands
/// for one or more characters other than '/').
bool filename_matches(std::string_view pattern, std::string_view name);

/// The files in `directory` that `pattern` could have made (filename_matches; a directory part of
/// the pattern is taken literally), oldest first by modification time, then by path. Empty when
/// there are none or the directory does not exist. ValueError for fields in the pattern's
/// directory part.
std::vector<std::string> find_snapshots(const std::string& pattern, const std::string& directory);
/// The newest of find_snapshots (Chainer's choice for resuming: the latest written), or
/// std::nullopt.
std::optional<std::string> find_latest_snapshot(const std::string& pattern, const std::string& directory);

}  // namespace rensa::extensions
