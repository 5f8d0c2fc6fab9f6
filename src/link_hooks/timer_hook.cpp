#include "rensa/link_hooks/timer_hook.h"

#include <iostream>

#include "rensa/core/debug_site.h"

namespace rensa::link_hooks {

void TimerHook::forward_preprocess(const LinkForwardCall&) { table_.begin(); }
void TimerHook::forward_postprocess(const LinkForwardCall& call) {
  table_.end(rensa::detail::short_class_name(typeid(call.link)), false);
}
void TimerHook::print_report(std::ostream& os, std::string_view unit) const {
  table_.print_report(os, unit, "LinkName");
}
void TimerHook::print_report() const { print_report(std::cout); }

}  // namespace rensa::link_hooks
