#pragma once
/// \file
/// Trainer: the training loop (Chainer's Trainer). Each iteration runs one update inside a
/// reporter scope, then every extension whose trigger fires, in decreasing priority order, until
/// the stop trigger fires. The whole state (updater, triggers, extensions, elapsed time) is
/// serializable, so a run resumed from a snapshot continues exactly as the uninterrupted one.

#include <chrono>
#include <concepts>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "rensa/serializers/serializer.h"
#include "rensa/training/extension.h"
#include "rensa/training/reporter.h"
#include "rensa/training/triggers.h"
#include "rensa/training/updater.h"

namespace rensa::training {

/// Runs the training loop. The updater is kept by reference and must outlive the trainer.
class Trainer {
 public:
  /// Registers every optimizer's target link (and its sub-links) with the reporter under the
  /// optimizer's name ("main", "main/predictor", ...), and connects the updater. `out` is the
  /// directory of logs, plots and snapshots, created by run(). A null stop trigger never fires.
  Trainer(Updater& updater, Trigger stop_trigger, std::string out = "result");
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  /// Adds an extension. An empty `name` takes the extension's own name, else its default_name();
  /// a name already used gets "_1", "_2", ... appended (the final name is set on the extension).
  /// A null `trigger` and an absent `priority` take the extension's defaults. Throws
  /// Error when called during run().
  void extend(std::shared_ptr<Extension> extension, std::string name = "", Trigger trigger = {},
              std::optional<int> priority = std::nullopt);
  /// Adds an extension with a trigger (and priority) but no explicit name.
  void extend(std::shared_ptr<Extension> extension, Trigger trigger, std::optional<int> priority = std::nullopt) {
    extend(std::move(extension), std::string(), std::move(trigger), priority);
  }
  /// Copies (or moves) an extension value into the trainer.
  template <class E>
    requires std::derived_from<std::decay_t<E>, Extension>
  void extend(E&& extension, std::string name = "", Trigger trigger = {}, std::optional<int> priority = std::nullopt) {
    extend(std::shared_ptr<Extension>(std::make_shared<std::decay_t<E>>(std::forward<E>(extension))), std::move(name),
           std::move(trigger), priority);
  }
  /// extend(extension, "", trigger, priority): the extension's default name.
  template <class E>
    requires std::derived_from<std::decay_t<E>, Extension>
  void extend(E&& extension, Trigger trigger, std::optional<int> priority = std::nullopt) {
    extend(std::forward<E>(extension), std::string(), std::move(trigger), priority);
  }

  /// Adds a function `void(Trainer&)` as a LambdaExtension (default trigger: every iteration).
  template <class F>
    requires(std::is_invocable_v<F&, Trainer&> && !std::derived_from<std::decay_t<F>, Extension>)
  void extend(F fn, std::string name = "", Trigger trigger = {}, std::optional<int> priority = std::nullopt) {
    extend(LambdaExtension(std::function<void(Trainer&)>(std::move(fn))), std::move(name), std::move(trigger),
           priority);
  }

  /// The extension registered as `name`; ValueError naming the registered ones.
  Extension& get_extension(const std::string& name) const;
  /// The extension `name` as a `T`; ValueError when absent or of another type.
  template <class T>
  T& get_extension(const std::string& name) const {
    auto* p = dynamic_cast<T*>(&get_extension(name));
    if (p == nullptr) throw_wrong_type(name);
    return *p;
  }
  /// Names of the registered extensions, in registration order.
  std::vector<std::string> extension_names() const;

  /// Runs the loop until the stop trigger fires: creates `out`, calls every extension's
  /// initialize(), then repeats {new observation; reporter scope; update; extensions}. An
  /// exception from an update or an extension calls each extension's on_error(), then finalize()
  /// (always called), and propagates. A trainer runs once (Error on a second call).
  void run();

  /// Saves/loads "updater/", "stop_trigger/", "extensions/<name>/", "extension_triggers/<name>/",
  /// the elapsed time, and the calling thread's default random generator ("rng/").
  void serialize(serializers::Serializer& s);
  /// Loads a snapshot written by extensions::snapshot (serializers::load_npz on this trainer).
  /// Extensions must be registered under the names they had when the snapshot was taken.
  void resume(const std::string& path);

  /// The observations of the current iteration (every report made during it).
  const Observation& observation() const { return observation_; }
  /// The observations of the current iteration, writable.
  Observation& observation() { return observation_; }
  /// The Variables of the current iteration reported while Config::keep_graph_on_report was on,
  /// with their graphs (DumpGraph, unchain_variables read them).
  const ObservedVariables& observed_variables() const { return observed_variables_; }
  /// The output directory.
  const std::string& out() const { return out_; }
  /// Seconds of training, including the time before the snapshot this run resumed from. Frozen
  /// when run() ends.
  double elapsed_time() const;
  /// The updater the trainer runs.
  Updater& updater() const { return *updater_; }
  /// The trigger that ends run().
  const Trigger& stop_trigger() const { return stop_trigger_; }
  /// The reporter the iteration's observations are made through.
  Reporter& reporter() { return reporter_; }
  /// True while run() executes.
  bool running() const { return running_; }

 private:
  struct Entry {
    std::string name;
    std::shared_ptr<Extension> extension;
    Trigger trigger;
    int priority;
  };
  [[noreturn]] void throw_wrong_type(const std::string& name) const;

  Updater* updater_;
  Trigger stop_trigger_;
  std::string out_;
  Reporter reporter_;
  Observation observation_;
  ObservedVariables observed_variables_;
  std::vector<Entry> extensions_;
  bool running_ = false;
  bool done_ = false;
  std::chrono::steady_clock::time_point start_;
  double snapshot_elapsed_ = 0.0;
  double final_elapsed_ = 0.0;
};

}  // namespace rensa::training
