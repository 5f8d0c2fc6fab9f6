#include "rensa/function_hooks/memory_hook.h"

#include <algorithm>
#include <iostream>

#include "rensa/core/error.h"
#include "rensa/core/function_node.h"
#include "src/function_hooks/report_table.h"

namespace rensa::function_hooks {

void MemoryProfileHook::added() {
  tracking_.emplace();
  ArrayMemoryTracking::reset_peak();
  base_ = ArrayMemoryTracking::live_bytes();
  final_peak_.reset();
}

void MemoryProfileHook::deleted() {
  final_peak_ = peak_bytes();
  tracking_.reset();
}

uint64_t MemoryProfileHook::peak_bytes() const {
  if (final_peak_) return *final_peak_;
  const uint64_t peak = ArrayMemoryTracking::peak_bytes();
  return peak > base_ ? peak - base_ : 0;
}

void MemoryProfileHook::forward_preprocess(const ForwardCall&) { starts_.push_back(thread_allocated_bytes()); }
void MemoryProfileHook::backward_preprocess(const BackwardCall&) { starts_.push_back(thread_allocated_bytes()); }
void MemoryProfileHook::forward_postprocess(const ForwardCall& call) { end(call.label); }
void MemoryProfileHook::backward_postprocess(const BackwardCall& call) { end(call.node.label()); }

void MemoryProfileHook::end(std::string_view name) {
  RENSA_CHECK(!starts_.empty(), ValueError, "MemoryProfileHook: a call ended that did not begin (", name, ")");
  const uint64_t bytes = thread_allocated_bytes() - starts_.back();
  starts_.pop_back();
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const auto& e) { return e.first == name; });
  if (it == entries_.end()) it = entries_.insert(entries_.end(), {std::string(name), MemoryEntry{}});
  it->second.allocated_bytes += bytes;
  it->second.occurrence += 1;
  if (starts_.empty()) total_ += bytes;
}

void MemoryProfileHook::print_report(std::ostream& os, std::string_view unit) const {
  std::vector<double> bytes;
  for (const auto& [name, e] : entries_) bytes.push_back(static_cast<double>(e.allocated_bytes));
  const auto cells = report::format_quantities(bytes, unit, report::kByteUnits, "MemoryProfileHook::print_report");
  std::vector<std::vector<std::string>> rows{{"FunctionName", "AllocatedBytes", "Occurrence"}};
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    rows.push_back({entries_[i].first, cells[i], std::to_string(entries_[i].second.occurrence)});
  }
  report::print_table(os, rows);
}

void MemoryProfileHook::print_report() const { print_report(std::cout); }

}  // namespace rensa::function_hooks
