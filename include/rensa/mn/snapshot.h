#pragma once
/// \file
/// Checkpoints of distributed training (ChainerMN's multi-node checkpointer): every rank writes its
/// own snapshot of the trainer, and a restarted job resumes from the newest iteration that every
/// rank has complete.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rensa/extensions/stop_on_signal.h"
#include "rensa/mn/communicator.h"
#include "rensa/training/extension.h"
#include "rensa/training/triggers.h"

namespace rensa::mn {

/// Options of multi_node_snapshot.
struct MultiNodeSnapshotOptions {
  /// Start of the file names: rank R of N writes "<name>_iter_<iteration>_rank_<R>_of_<N>.npz".
  /// Must not be empty or contain '/'.
  std::string name = "snapshot_mn";
  /// Directory of the files; empty: the trainer's out directory.
  std::string directory = "";
  /// When to write (default: every epoch).
  training::Trigger trigger{1, "epoch"};
  /// Keep only this rank's newest n files (older ones are deleted); -1 keeps all.
  int n_retains = -1;
  /// At the start of Trainer::run, maybe_load from where this extension writes (before any
  /// extension initializes): a job restarted with the same command resumes by itself.
  bool autoload = false;
  /// Groups of ranks whose trainers hold the same state (ChainerMN's replica_sets): only the
  /// lowest rank of each set writes, under its own rank's name, and on loading sends its file's
  /// content to the others of its set. Each set lists ranks; the ranks no set names form one more
  /// set. Empty: every rank its own set (each rank's iterator walks its own shard, so ranks usually
  /// differ; ChainerMN's empty list means one set of all ranks: give {{0, 1, ..., N-1}} for that).
  std::vector<std::vector<int>> replica_sets = {};
};

/// Writes this rank's whole trainer state (model, optimizer, iterator with its per-rank order,
/// extensions, random state) atomically when triggered; no communication. Priority -100, as
/// extensions::snapshot. Files are complete once they exist under their final name (temporary
/// file, fsync, rename), so a job killed while writing leaves only complete snapshots behind.
class MultiNodeSnapshot : public training::Extension {
 public:
  /// ValueError for an empty name or one with '/', n_retains not -1 or positive, or replica sets
  /// naming a rank outside the communicator or one rank twice.
  MultiNodeSnapshot(Communicator comm, MultiNodeSnapshotOptions options = {});

  void operator()(training::Trainer& trainer) override;
  /// autoload: maybe_load (collective: every rank's Trainer::run calls it).
  void restore(training::Trainer& trainer) override;
  /// Removes the temporary files of this rank's snapshots that a killed run left behind
  /// (serializers::remove_stale_temporaries); other files are untouched.
  void initialize(training::Trainer& trainer) override;
  training::Trigger default_trigger() const override { return options_.trigger; }
  int default_priority() const override { return -100; }
  std::string default_name() const override { return "multi_node_snapshot"; }

  /// Finds the newest iteration for which every rank has its file (ranks list their own files and
  /// exchange the lists; files written for another number of ranks are ignored; a file some rank
  /// cannot read moves every rank on to the next older iteration) and loads this rank's file of it
  /// into `trainer`. Looks in `directory`, or where this extension writes when empty. Returns that
  /// iteration, or std::nullopt (trainer untouched) when there is none. Collective: call it on every
  /// rank after registering the extensions and before Trainer::run.
  std::optional<int64_t> maybe_load(training::Trainer& trainer, const std::string& directory = "");
  /// maybe_load restricted to `iteration`.
  std::optional<int64_t> maybe_load(training::Trainer& trainer, const std::string& directory, int64_t iteration);

  /// Resumes from `path`, which is either a directory (the newest iteration every rank has there,
  /// as maybe_load) or any rank's snapshot file (its iteration, every rank loading its own file of
  /// that iteration from the same directory). Returns the iteration loaded. IOError naming the path
  /// when no iteration fits (on every rank alike); ValueError for a file name that is not one of
  /// these snapshots for this number of ranks. Collective.
  int64_t resume(training::Trainer& trainer, const std::string& path);

  /// Iterations this rank has files for in `directory` (default: where this extension writes),
  /// ascending.
  std::vector<int64_t> local_iterations(const training::Trainer& trainer, const std::string& directory = "") const;
  /// The path of this rank's file for `iteration` in `directory` (default: where this extension
  /// writes).
  std::string path_for(const training::Trainer& trainer, int64_t iteration, const std::string& directory = "") const;
  /// The iteration of a file name of this rank's snapshots, or std::nullopt for any other name.
  std::optional<int64_t> iteration_of(std::string_view file) const;
  /// The iteration of a file name of any rank's snapshots of this number of ranks, or std::nullopt.
  std::optional<int64_t> iteration_of_any_rank(std::string_view file) const;

 private:
  std::string directory_of(const training::Trainer& trainer, const std::string& directory) const;
  bool writes() const { return master_ == comm_.rank(); }

  Communicator comm_;
  MultiNodeSnapshotOptions options_;
  int master_ = 0;           // the rank whose files this rank's state is in
  std::vector<int> members_;  // the other ranks of this rank's set, when it is their master
};

/// extensions::StopOnSignal for every rank of `comm`: each iteration the ranks agree (a one-element
/// allreduce) whether any received SIGINT or SIGTERM, so all stop after the same iteration, each
/// writing its file of that iteration through `snapshot` (null: none is written).
std::shared_ptr<extensions::StopOnSignal> stop_on_signal(Communicator comm,
                                                         std::shared_ptr<MultiNodeSnapshot> snapshot);

/// Makes the checkpointing extension. Keep the pointer to call maybe_load:
///   auto snap = mn::multi_node_snapshot(comm);
///   trainer.extend(snap);
///   snap->maybe_load(trainer);
///   trainer.run();
std::shared_ptr<MultiNodeSnapshot> multi_node_snapshot(Communicator comm, MultiNodeSnapshotOptions options = {});

}  // namespace rensa::mn
