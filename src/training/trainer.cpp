#include "rensa/training/trainer.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "rensa/core/error.h"
#include "rensa/core/random.h"
#include "rensa/core/timeline.h"
#include "rensa/links/link.h"
#include "rensa/serializers/npz.h"

namespace rensa::training {
namespace {

std::string describe(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

}  // namespace

Trainer::Trainer(Updater& updater, Trigger stop_trigger, std::string out)
    : updater_(&updater), stop_trigger_(std::move(stop_trigger)), out_(std::move(out)) {
  RENSA_CHECK(!out_.empty(), ValueError, "Trainer: empty output directory name");
  updater_->connect_trainer(*this);
  for (const auto& [name, optimizer] : updater_->get_all_optimizers()) {
    if (optimizer == nullptr || optimizer->target() == nullptr) continue;
    // Sub-links first, so that the root keeps its own name even if it appears twice.
    reporter_.add_observers(name, optimizer->target()->namedlinks(true));
    reporter_.add_observer(name, optimizer->target());
  }
}

void Trainer::extend(std::shared_ptr<Extension> extension, std::string name, Trigger trigger,
                     std::optional<int> priority) {
  RENSA_CHECK(extension != nullptr, ValueError, "Trainer::extend: null extension");
  RENSA_CHECK(!running_, Error, "Trainer::extend: cannot add extension '",
              name.empty() ? extension->default_name() : name, "' while the trainer runs");
  if (name.empty()) name = extension->name();
  if (name.empty()) name = extension->default_name();
  RENSA_CHECK(!name.empty(), ValueError, "Trainer::extend: the extension has no name");
  std::string unique = name;
  for (int ordinal = 1;; ++ordinal) {
    const bool taken = std::any_of(extensions_.begin(), extensions_.end(),
                                   [&](const Entry& e) { return e.name == unique; });
    if (!taken) break;
    unique = name + "_" + std::to_string(ordinal);
  }
  if (!trigger) trigger = extension->default_trigger();
  const int prio = priority.value_or(extension->default_priority());
  extension->set_name(unique);
  extensions_.push_back(Entry{unique, std::move(extension), std::move(trigger), prio});
}

Extension& Trainer::get_extension(const std::string& name) const {
  for (const Entry& e : extensions_) {
    if (e.name == name) return *e.extension;
  }
  std::ostringstream os;
  for (std::size_t i = 0; i < extensions_.size(); ++i) os << (i ? ", " : "") << '"' << extensions_[i].name << '"';
  RENSA_THROW(ValueError, "Trainer::get_extension: no extension named '", name, "'; registered: [", os.str(), "]");
}

void Trainer::throw_wrong_type(const std::string& name) const {
  RENSA_THROW(ValueError, "Trainer::get_extension: extension '", name, "' is a ",
              get_extension(name).default_name(), ", not of the requested type");
}

std::vector<std::string> Trainer::extension_names() const {
  std::vector<std::string> names;
  for (const Entry& e : extensions_) names.push_back(e.name);
  return names;
}

double Trainer::elapsed_time() const {
  if (done_) return final_elapsed_;
  if (!running_) return snapshot_elapsed_;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() + snapshot_elapsed_;
}

void Trainer::run() {
  RENSA_CHECK(!done_ && !running_, Error, "Trainer::run: the training loop cannot run more than once");
  std::error_code ec;
  std::filesystem::create_directories(out_, ec);
  RENSA_CHECK(!ec && std::filesystem::is_directory(out_), IOError, "Trainer::run: cannot create output directory '",
              out_, "': ", ec ? ec.message() : "not a directory");

  // Highest priority first; registration order among equals (a stable sort, as Chainer's sorted()).
  std::vector<Entry*> order;
  for (Entry& e : extensions_) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(), [](const Entry* a, const Entry* b) { return a->priority > b->priority; });

  running_ = true;
  start_ = std::chrono::steady_clock::now();
  std::exception_ptr error;
  try {
    for (Entry* e : order) e->extension->restore(*this);
    for (Entry* e : order) {
      if (!e->trigger.finished()) e->extension->initialize(*this);
    }
    while (!stop_trigger_(*this)) {
      observation_.clear();
      observed_variables_.clear();
      Reporter::Scope scope(reporter_, observation_, &observed_variables_);
      {
        timeline::Span step("step", timeline::Category::step);
        updater_->update();
      }
      for (Entry* e : order) {
        if (!e->trigger(*this)) continue;
        timeline::Span span(e->name, timeline::Category::extension);
        (*e->extension)(*this);
      }
    }
  } catch (...) {
    error = std::current_exception();
  }
  if (error) {
    for (Entry* e : order) {
      try {
        e->extension->on_error(*this, error);
      } catch (...) {
        std::cerr << "Trainer::run: the error handler of extension '" << e->name
                  << "' threw: " << describe(std::current_exception()) << "\n";
      }
    }
  }
  // finalize always runs; an error in it must not hide the loop's error.
  std::exception_ptr finalize_error;
  for (Entry* e : order) {
    try {
      e->extension->finalize(*this);
    } catch (...) {
      if (!finalize_error) finalize_error = std::current_exception();
    }
  }
  try {
    updater_->finalize();
  } catch (...) {
    if (!finalize_error) finalize_error = std::current_exception();
  }
  final_elapsed_ = elapsed_time();
  running_ = false;
  done_ = true;
  if (error) std::rethrow_exception(error);
  if (finalize_error) std::rethrow_exception(finalize_error);
}

void Trainer::serialize(serializers::Serializer& s) {
  updater_->serialize(s.child("updater"));
  stop_trigger_.serialize(s.child("stop_trigger"));
  auto& exts = s.child("extensions");
  auto& triggers = s.child("extension_triggers");
  for (Entry& e : extensions_) {
    e.extension->serialize(exts.child(e.name));
    e.trigger.serialize(triggers.child(e.name));
  }
  if (s.is_loading()) {
    double elapsed = 0.0;
    s.scalar("_snapshot_elapsed_time", elapsed);
    snapshot_elapsed_ = elapsed;
    // Resuming inside a running loop keeps the clock going from the loaded time.
    if (running_) start_ = std::chrono::steady_clock::now();
  } else {
    double elapsed = elapsed_time();
    s.scalar("_snapshot_elapsed_time", elapsed);
  }
  // The thread's default generator drives dropout and other random functions; restoring it makes
  // a resumed run draw the same numbers.
  auto& rng = s.child("rng");
  Generator& gen = default_generator();
  if (!s.is_loading() || rng.contains("seed")) {
    uint64_t seed = gen.seed();
    uint64_t offset = gen.offset();
    rng.scalar("seed", seed);
    rng.scalar("offset", offset);
    if (s.is_loading()) {
      gen.reseed(seed);
      gen.set_offset(offset);
    }
  }
}

void Trainer::resume(const std::string& path) { serializers::load_npz(path, *this); }

}  // namespace rensa::training
