// The reporter: observations of the current iteration, collected per thread.
#include "rensa/core/reporter.h"

#include "rensa/core/config.h"
#include "rensa/core/error.h"

namespace rensa {
namespace {
// The reporter and observation that report() writes to on this thread (set by Reporter::Scope).
thread_local Reporter* tls_reporter = nullptr;
thread_local Observation* tls_observation = nullptr;
}  // namespace

void Reporter::add_observer(const std::string& name, const Link* observer) {
  RENSA_CHECK(observer != nullptr, ValueError, "Reporter::add_observer: null observer for '", name, "'");
  observer_names_[observer] = name;
}

void Reporter::add_observers(const std::string& prefix, const std::vector<std::pair<std::string, Link*>>& observers) {
  for (const auto& [name, observer] : observers) add_observer(prefix + name, observer);
}

Reporter& get_current_reporter() {
  RENSA_CHECK(tls_reporter != nullptr, ValueError,
              "get_current_reporter: no reporter is current on this thread (report inside a trainer's update or "
              "extension, an evaluator, or a Reporter::Scope)");
  return *tls_reporter;
}

std::string Reporter::prefix_of(const Link* observer) const {
  if (observer == nullptr) return "";
  auto it = observer_names_.find(observer);
  RENSA_CHECK(it != observer_names_.end(), ValueError,
              "report: the observer is not registered with the reporter (add_observer)");
  return it->second + "/";
}

void Reporter::report(const Observation& values, const Link* observer) {
  if (observation_ == nullptr) return;
  const std::string prefix = prefix_of(observer);
  for (const auto& [k, v] : values) (*observation_)[prefix + k] = v;
}

Reporter::Scope::Scope(Reporter& reporter, Observation& observation, ObservedVariables* variables)
    : prev_reporter_(tls_reporter), prev_observation_(reporter.observation_), prev_variables_(reporter.variables_) {
  tls_reporter = &reporter;
  reporter.observation_ = &observation;
  reporter.variables_ = variables;
  tls_observation = &observation;
}

Reporter::Scope::~Scope() {
  tls_reporter->observation_ = prev_observation_;
  tls_reporter->variables_ = prev_variables_;
  tls_reporter = prev_reporter_;
  tls_observation = prev_reporter_ ? prev_reporter_->observation_ : nullptr;
}

void report(const Observation& values, const Link* observer) {
  if (tls_reporter == nullptr) return;
  tls_reporter->report(values, observer);
}

void report(const std::string& key, const Variable& value, const Link* observer) {
  if (tls_reporter == nullptr) return;
  RENSA_CHECK(!value.is_null() && value.size() == 1, ShapeError, "report: '", key,
              "' must have one element, got shape ", value.is_null() ? Shape{} : value.shape());
  report(Observation{{key, value.array().item<double>()}}, observer);
  if (tls_reporter->variables_ != nullptr && tls_reporter->observation_ != nullptr && config().keep_graph_on_report) {
    (*tls_reporter->variables_)[tls_reporter->prefix_of(observer) + key] = value;
  }
}

}  // namespace rensa
