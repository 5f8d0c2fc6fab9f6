#pragma once
/// \file
/// MemoryProfileHook (the CPU counterpart of Chainer's CupyMemoryProfileHook): the bytes of arrays
/// each function allocates, and the peak of array memory while it is installed.

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rensa/core/function_hook.h"
#include "rensa/core/memory_stats.h"

namespace rensa::function_hooks {

/// Bytes and calls of one function label in MemoryProfileHook's summary.
struct MemoryEntry {
  /// Bytes allocated during the label's calls (forward and backward; nested calls included).
  uint64_t allocated_bytes = 0;
  /// Calls of the label (forward and backward).
  int64_t occurrence = 0;
};

/// Counts, per function label, the bytes of array storage its forward and backward allocate on the
/// installing thread (a call's bytes include those of the calls nested in it, as Chainer's). While
/// it is installed it also tracks live array memory: peak_bytes() is the most memory of arrays
/// allocated under it that was alive at once (arrays that existed before, such as parameters, do
/// not count). Chainer's hook reports the memory pool's "used" and "acquired" bytes; a CPU has no
/// pool to ask, so this one reports allocations.
class MemoryProfileHook : public FunctionHook {
 public:
  std::string name() const override { return "MemoryProfileHook"; }
  void added() override;
  void deleted() override;
  void forward_preprocess(const ForwardCall& call) override;
  void forward_postprocess(const ForwardCall& call) override;
  void backward_preprocess(const BackwardCall& call) override;
  void backward_postprocess(const BackwardCall& call) override;

  /// Per function label, in the order first seen.
  const std::vector<std::pair<std::string, MemoryEntry>>& summary() const { return entries_; }
  /// Bytes allocated by outermost calls (nested calls not counted twice).
  uint64_t total_allocated_bytes() const { return total_; }
  /// The peak of live tracked array bytes since installation (kept after the scope ends).
  uint64_t peak_bytes() const;
  /// Table: FunctionName, AllocatedBytes, Occurrence. `unit`: "B", "KB", "MB", "GB", "TB", "auto"
  /// (default) or "auto_foreach"; ValueError otherwise.
  void print_report(std::ostream& os, std::string_view unit = "auto") const;
  /// print_report(std::cout) with the "auto" unit.
  void print_report() const;

 private:
  void end(std::string_view name);
  std::vector<uint64_t> starts_;
  std::vector<std::pair<std::string, MemoryEntry>> entries_;
  uint64_t total_ = 0;
  uint64_t base_ = 0;
  std::optional<uint64_t> final_peak_;
  std::optional<ArrayMemoryTracking> tracking_;
};

}  // namespace rensa::function_hooks
