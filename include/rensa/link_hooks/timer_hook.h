#pragma once
/// \file
/// TimerHook (Chainer's link_hooks.TimerHook): the wall time of every link's forward, per link
/// class, with Chainer's report table.

#include <iosfwd>
#include <string>
#include <string_view>

#include "rensa/function_hooks/timer_hook.h"
#include "rensa/links/link_hook.h"

namespace rensa::link_hooks {

/// Measures the forward time of links called on the installing thread (LinkHookScope), or of one
/// link (Link::add_hook), keyed by class name ("Linear", a user's "MLP"). A call's time includes
/// its child links'; total_time() counts outermost calls only.
class TimerHook : public LinkHook {
 public:
  std::string name() const override { return "TimerHook"; }
  void forward_preprocess(const LinkForwardCall& call) override;
  void forward_postprocess(const LinkForwardCall& call) override;

  /// Seconds spent in outermost link calls (nested calls are not counted twice).
  double total_time() const { return table_.total_time(); }
  /// Per link class, in the order first seen (backward fields stay 0).
  const std::vector<std::pair<std::string, function_hooks::TimerEntry>>& summary() const { return table_.summary(); }
  /// Chainer's table: LinkName, ElapsedTime, Occurrence; units as function_hooks::TimerHook.
  void print_report(std::ostream& os, std::string_view unit = "auto") const;
  /// print_report(std::cout) with the "auto" unit.
  void print_report() const;
  /// The summary as JSON (as function_hooks::TimerHook::summary_json).
  std::string summary_json() const { return table_.summary_json(); }
  /// Drops every entry and the total.
  void clear() { table_.clear(); }

 private:
  function_hooks::detail::ElapsedTable table_;
};

}  // namespace rensa::link_hooks
