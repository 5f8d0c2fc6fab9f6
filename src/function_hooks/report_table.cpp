#include "src/function_hooks/report_table.h"

#include <algorithm>
#include <cstdio>
#include <ostream>

#include "rensa/core/error.h"

namespace rensa::function_hooks::report {

const Units kTimeUnits = {{"sec", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
const Units kByteUnits = {{"TB", 1099511627776.0}, {"GB", 1073741824.0}, {"MB", 1048576.0}, {"KB", 1024.0},
                          {"B", 1.0}};

namespace {
const std::pair<std::string_view, double>& auto_unit(double value, const Units& units) {
  for (const auto& u : units) {
    if (value / u.second >= 1) return u;
  }
  return units.back();
}

std::string format(double value, const std::pair<std::string_view, double>& unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%3.2f", value / unit.second);
  return std::string(buf) + std::string(unit.first);
}
}  // namespace

std::vector<std::string> format_quantities(const std::vector<double>& values, std::string_view unit,
                                           const Units& units, const char* op) {
  std::vector<std::string> out;
  if (unit == "auto_foreach") {
    for (double v : values) out.push_back(format(v, auto_unit(v, units)));
    return out;
  }
  const std::pair<std::string_view, double>* chosen = nullptr;
  if (unit == "auto") {
    const double largest = values.empty() ? 0.0 : *std::max_element(values.begin(), values.end());
    chosen = &auto_unit(largest, units);
  } else {
    for (const auto& u : units) {
      if (u.first == unit) chosen = &u;
    }
    if (!chosen) {
      std::string valid;
      for (const auto& u : units) valid += std::string(u.first) + ", ";
      RENSA_THROW(ValueError, op, ": unknown unit '", unit, "'; valid: ", valid, "auto, auto_foreach");
    }
  }
  for (double v : values) out.push_back(format(v, *chosen));
  return out;
}

void print_table(std::ostream& os, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (c) os << "  ";
      os << std::string(widths[c] - row[c].size(), ' ') << row[c];
    }
    os << '\n';
  }
  os.flush();
}

}  // namespace rensa::function_hooks::report
