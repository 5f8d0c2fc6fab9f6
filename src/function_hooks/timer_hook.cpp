#include "rensa/function_hooks/timer_hook.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "rensa/core/error.h"
#include "rensa/core/function_node.h"
#include "src/function_hooks/report_table.h"

namespace rensa::function_hooks {

namespace detail {

void ElapsedTable::end(std::string_view name, bool backward) {
  RENSA_CHECK(!starts_.empty(), ValueError, "TimerHook: a call ended that did not begin (", name, ")");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - starts_.back()).count();
  starts_.pop_back();
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const auto& e) { return e.first == name; });
  if (it == entries_.end()) it = entries_.insert(entries_.end(), {std::string(name), TimerEntry{}});
  TimerEntry& e = it->second;
  e.elapsed_time += s;
  e.occurrence += 1;
  (backward ? e.backward_time : e.forward_time) += s;
  (backward ? e.backward_occurrence : e.forward_occurrence) += 1;
  if (starts_.empty()) total_ += s;
}

void ElapsedTable::print_report(std::ostream& os, std::string_view unit, std::string_view first_column) const {
  std::vector<std::vector<std::string>> rows{{std::string(first_column), "ElapsedTime", "Occurrence"}};
  std::vector<double> seconds;
  for (const auto& [name, e] : entries_) seconds.push_back(e.elapsed_time);
  const auto cells = report::format_quantities(seconds, unit, report::kTimeUnits, "TimerHook::print_report");
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    rows.push_back({entries_[i].first, cells[i], std::to_string(entries_[i].second.occurrence)});
  }
  report::print_table(os, rows);
}

std::string ElapsedTable::summary_json() const {
  nlohmann::ordered_json entries = nlohmann::ordered_json::array();
  for (const auto& [name, e] : entries_) {
    entries.push_back({{"name", name},
                       {"elapsed_time", e.elapsed_time},
                       {"occurrence", e.occurrence},
                       {"mean_time", e.occurrence ? e.elapsed_time / static_cast<double>(e.occurrence) : 0.0},
                       {"forward_time", e.forward_time},
                       {"forward_occurrence", e.forward_occurrence},
                       {"backward_time", e.backward_time},
                       {"backward_occurrence", e.backward_occurrence}});
  }
  return nlohmann::ordered_json{{"total_time", total_}, {"entries", entries}}.dump();
}

void ElapsedTable::clear() {
  entries_.clear();
  total_ = 0;
}

}  // namespace detail

void TimerHook::forward_preprocess(const ForwardCall&) { table_.begin(); }
void TimerHook::forward_postprocess(const ForwardCall& call) { table_.end(call.label, false); }
void TimerHook::backward_preprocess(const BackwardCall&) { table_.begin(); }
void TimerHook::backward_postprocess(const BackwardCall& call) { table_.end(call.node.label(), true); }

void TimerHook::print_report(std::ostream& os, std::string_view unit) const {
  table_.print_report(os, unit, "FunctionName");
}
void TimerHook::print_report() const { print_report(std::cout); }

}  // namespace rensa::function_hooks
