#pragma once
// Chainer's report tables (TimerHook, the memory hook): right-aligned columns two spaces apart, and
// quantities printed as "%3.2f<unit>" in a fixed or automatically chosen unit.

#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rensa::function_hooks::report {

/// Unit names and their sizes in the base unit, largest first.
using Units = std::vector<std::pair<std::string_view, double>>;
/// sec, ms, us, ns (Chainer's TimerHook).
extern const Units kTimeUnits;
/// TB, GB, MB, KB, B by powers of 1024 (Chainer's memory hook).
extern const Units kByteUnits;

/// Each value as "%3.2f<unit>": in `unit` (one of `units`); with "auto" in the largest unit in
/// which the largest value is at least 1 (the smallest unit if none), for all; with
/// "auto_foreach" so chosen for each value. ValueError naming `op` for an unknown unit.
std::vector<std::string> format_quantities(const std::vector<double>& values, std::string_view unit,
                                           const Units& units, const char* op);
/// Prints rows with every column right-aligned to its widest cell, two spaces apart.
void print_table(std::ostream& os, const std::vector<std::vector<std::string>>& rows);

}  // namespace rensa::function_hooks::report
