#pragma once
// What every training example does alike about the life of a run: --resume (a snapshot file, or a
// directory whose newest snapshot is taken; in one process and under mpirun alike; "auto": the
// output directory's newest, if any, which is also what a job restarted by scripts/mpirun
// --max-restarts does), --keep-snapshots,
// --profile (time per function and per link, printed at the end), and Ctrl-C or SIGTERM (the step under way finishes, a
// snapshot is written, a line says how to go on, and the exit status is 128 + the signal).
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "rensa/training.h"
#ifdef RENSA_WITH_MN
#include "rensa/mn.h"
#endif

namespace run_flags {

struct Flags {
  std::string resume;
  int keep_snapshots = 3;
  bool profile = false;
  std::string timeline;  // --timeline FILE: extensions::Timeline's file in the output directory
  /// The log's interval: the timeline's summary goes into every log entry.
  rensa::training::Trigger log_trigger = {1, "epoch"};
};

/// Throws CLI::ValidationError for a value that would silently change a flag's meaning: NaN or an
/// infinity, an integer beyond 64 bits (which would saturate), and a positive --timeout that
/// rounds to 0 ms (which means "never").
inline void check_numbers(const CLI::App& app) {
  for (const CLI::Option* opt : app.get_options()) {
    for (const std::string& v : opt->results()) {
      const char* text = v.c_str();
      char* end = nullptr;
      const double d = std::strtod(text, &end);
      if (end == text || *end != '\0') continue;  // not a number: the option's own parser judges it
      if (!std::isfinite(d)) throw CLI::ValidationError(opt->get_name(), "must be a finite number, got '" + v + "'");
      const bool integer = v.find_first_not_of("+-0123456789") == std::string::npos;
      if (integer) {
        errno = 0;
        if (v[0] == '-') {
          (void)std::strtoll(text, nullptr, 10);
        } else {
          (void)std::strtoull(text, nullptr, 10);
        }
        if (errno == ERANGE) throw CLI::ValidationError(opt->get_name(), v + " is out of the 64-bit integers' range");
      }
      if (opt->get_name() == "--timeout" && d > 0 && d < 0.0005) {
        throw CLI::ValidationError(opt->get_name(), v + " s rounds to 0 ms, which means never; give 0 for that, or at least 0.0005");
      }
    }
  }
}

/// Makes app's parse end with check_numbers (every example calls it before parsing).
inline void guard_numbers(CLI::App& app) {
  app.parse_complete_callback([&app] { check_numbers(app); });
}

/// Adds --seed: a whole number from 0 to 2^64 - 1 (a negative one would wrap around silently).
inline CLI::Option* add_seed(CLI::App& app, uint64_t& seed, const std::string& help) {
  return app.add_option("--seed", seed, help)
      ->check(CLI::Validator(
          [](const std::string& v) {
            return v.find_first_not_of("0123456789") == std::string::npos && !v.empty()
                       ? std::string()
                       : std::string("must be a whole number from 0 to 2^64 - 1");
          },
          "UINT64"));
}

/// Adds --resume, --keep-snapshots, --profile and --timeline, and guard_numbers.
inline void add_flags(CLI::App& app, Flags& f) {
  guard_numbers(app);
  app.add_flag("--profile", f.profile,
               "Time every function (forward and backward) and every link, and print the tables at the end (rank 0)");
  app.add_option("--timeline", f.timeline,
                 "Record a timeline of every step (data wait, forward, backward, update, allreduce) and write it "
                 "to this file in the output directory, in the Chrome trace format (under mpirun: one file per "
                 "rank and this one merged, on rank 0); its summary goes into the log");
  app.add_option("-r,--resume", f.resume,
                 "Resume from this snapshot file, or from the newest snapshot in this directory (under mpirun: "
                 "the newest iteration every rank has); 'auto': from the output directory's newest snapshot if "
                 "there is one, else from the start (for a scheduler that reruns the same command)")
      ->check(CLI::Validator(
          [](const std::string& v) {
            std::string path = v;
            return v == "auto" ? std::string() : CLI::ExistingPath(path);
          },
          "PATH or auto"));
  app.add_option("--keep-snapshots", f.keep_snapshots,
                 "Snapshots kept, the newest ones (one per epoch; per rank under mpirun); -1 keeps all")
      ->check(CLI::Validator(
          [](const std::string& v) {
            try {
              const long long n = std::stoll(v);
              return n == -1 || n > 0 ? std::string() : std::string("must be -1 or positive");
            } catch (const std::exception&) {
              return std::string("must be an integer");
            }
          },
          "N"));
}

#ifdef RENSA_WITH_MN
/// Adds --communicator NAME, one of rensa::mn::communicator_names() (create_communicator checks it, so
/// that every rank reports a bad name on a line of its own).
inline CLI::Option* add_communicator(CLI::App& app, std::string& name) {
  std::string names;
  for (const auto& n : rensa::mn::communicator_names()) names += (names.empty() ? "" : ", ") + n;
  return app.add_option(
      "--communicator", name,
      "Train data-parallel with this communicator (" + names + ") under mpirun; default: one process");
}
#endif

/// The attempt scripts/mpirun --max-restarts is at: RENSA_RESTART (0, or unset, for the first).
/// rensa::ValueError naming the variable for anything but a whole number.
inline int restart_count() {
  const char* v = std::getenv("RENSA_RESTART");
  if (v == nullptr || *v == '\0') return 0;
  const std::string s(v);
  if (s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) {
    throw rensa::ValueError("RENSA_RESTART must be a whole number (the restart count), got '" + s + "'");
  }
  return std::stoi(s);
}

/// The snapshots of a run and what it does on SIGINT, SIGTERM and mpirun's SIGUSR1. Build it after
/// the trainer's other extensions are registered and before calling resume.
class Run {
 public:
  /// One process: one snapshot file per epoch.
  Run(std::string program, rensa::training::Trainer& trainer, const Flags& flags)
      : program_(std::move(program)), trainer_(trainer), flags_(flags) {
    add_snapshot();
    if (!flags.timeline.empty()) {
      trainer.extend(std::make_shared<rensa::extensions::Timeline>(timeline_options()));
    }
  }
#ifdef RENSA_WITH_MN
  /// With a valid `comm`, every rank writes its own file per epoch and all ranks stop after the same
  /// iteration; otherwise as in one process.
  Run(std::string program, rensa::training::Trainer& trainer, const Flags& flags, rensa::mn::Communicator comm)
      : program_(std::move(program)), trainer_(trainer), flags_(flags), comm_(std::move(comm)) {
    if (!comm_.valid()) {
      add_snapshot();
      if (!flags.timeline.empty()) {
        trainer.extend(std::make_shared<rensa::extensions::Timeline>(timeline_options()));
      }
      return;
    }
    if (!flags.timeline.empty()) trainer.extend(rensa::mn::timeline(comm_, timeline_options()));
    mn_snapshot_ = rensa::mn::multi_node_snapshot(comm_, {.n_retains = flags.keep_snapshots});
    trainer.extend(mn_snapshot_);
    trainer.extend(rensa::mn::stop_on_signal(comm_, mn_snapshot_));
  }
#endif

  /// Loads --resume when given (or "auto" in a restarted job) and says from where. False (having
  /// said why) when the run it resumes has already trained its `epochs`.
  bool resume(double epochs) {
    std::string path = flags_.resume;
    const int restart = restart_count();
    if (path.empty() && restart > 0) path = "auto";
    if (path.empty()) return true;
    std::string from = path;
    if (path == "auto") {
      from = trainer_.out();
      bool found = false;
#ifdef RENSA_WITH_MN
      if (mn_snapshot_) found = mn_snapshot_->maybe_load(trainer_, trainer_.out()).has_value();  // collective
#endif
      if (snapshot_) {
        const auto latest = rensa::extensions::find_latest_snapshot(snapshot_->filename(), trainer_.out());
        if (latest) from = snapshot_->resume(trainer_, *latest);
        found = latest.has_value();
      }
      if (!found) {
        say((restart > 0 ? "restart " + std::to_string(restart) + ": " : std::string()) + "no snapshot in " +
            trainer_.out() + " yet: training from the start");
        return true;
      }
    } else {
#ifdef RENSA_WITH_MN
      if (mn_snapshot_) mn_snapshot_->resume(trainer_, path);
#endif
      if (snapshot_) from = snapshot_->resume(trainer_, path);
    }
    const auto& updater = trainer_.updater();
    say("resumed from iteration " + std::to_string(updater.iteration()) + " (epoch " + std::to_string(updater.epoch()) +
        ") of " + from);
    if (updater.epoch_detail() < epochs) return true;
    say("that run has finished its " + std::to_string(updater.epoch()) +
        " epochs: nothing left to train (give a larger --epoch to train on)");
    return false;
  }

  /// Runs the trainer. Returns 0, or 128 + the signal when a signal stopped it, having said where
  /// the snapshot is and how to go on from it.
  int run() {
    rensa::function_hooks::TimerHook function_timer;
    rensa::link_hooks::TimerHook link_timer;
    std::optional<rensa::FunctionHookScope> function_scope;
    std::optional<rensa::LinkHookScope> link_scope;
    if (flags_.profile) {
      function_scope.emplace(function_timer);
      link_scope.emplace(link_timer);
    }
    struct Report {  // printed however the run ends
      const Run& run;
      const rensa::function_hooks::TimerHook& functions;
      const rensa::link_hooks::TimerHook& links;
      ~Report() {
        if (!run.flags_.profile || !run.speaks()) return;
        std::cout << "\n" << run.program_ << ": time per function (forward and backward, nested calls included)\n";
        functions.print_report(std::cout);
        std::cout << "\n" << run.program_ << ": time per link (forward)\n";
        links.print_report(std::cout);
      }
    } report{*this, function_timer, link_timer};
    try {
      trainer_.run();
      return 0;
    } catch (const rensa::extensions::Interrupted& e) {
      say(e.what());
      if (!e.snapshot_path().empty()) say("continue with --resume " + trainer_.out());
#ifdef RENSA_WITH_MN
      // SIGUSR1 is scripts/mpirun's stop request: mpirun reports the status of its own signal, and a
      // rank's non-zero status would only add Open MPI's banner about a failed process.
      if (comm_.valid() && e.signal() == SIGUSR1) return 0;
#endif
      return e.exit_code();
    }
  }

 private:
  rensa::extensions::TimelineOptions timeline_options() const {
    return {.filename = flags_.timeline, .trigger = flags_.log_trigger};
  }
  void add_snapshot() {
    snapshot_ = std::make_shared<rensa::extensions::Snapshot>(
        rensa::extensions::snapshot("snapshot_iter_{.updater.iteration}", {1, "epoch"}, flags_.keep_snapshots));
    trainer_.extend(snapshot_);
    trainer_.extend(rensa::extensions::stop_on_signal(snapshot_));
  }

  bool speaks() const {
#ifdef RENSA_WITH_MN
    if (comm_.valid() && comm_.rank() != 0) return false;
#endif
    return true;
  }

  void say(const std::string& line) const {
    if (speaks()) std::cout << program_ << ": " << line << std::endl;
  }

  std::string program_;
  rensa::training::Trainer& trainer_;
  Flags flags_;
  std::shared_ptr<rensa::extensions::Snapshot> snapshot_;
#ifdef RENSA_WITH_MN
  rensa::mn::Communicator comm_;
  std::shared_ptr<rensa::mn::MultiNodeSnapshot> mn_snapshot_;
#endif
};

}  // namespace run_flags
