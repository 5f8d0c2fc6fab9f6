#pragma once
// NumPy's statistics of a flat sample, shared by ParameterStatistics and VariableStatisticsPlot.

#include <algorithm>
#include <cmath>
#include <vector>

namespace rensa::extensions::detail {

inline double mean_of(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += v;
  return s / static_cast<double>(x.size());
}

/// numpy.std (population).
inline double std_of(const std::vector<double>& x) {
  const double m = mean_of(x);
  double s = 0;
  for (double v : x) s += (v - m) * (v - m);
  return std::sqrt(s / static_cast<double>(x.size()));
}

/// numpy.percentile(x, qs) with linear interpolation; x must not be empty.
inline std::vector<double> percentiles(std::vector<double> x, const std::vector<double>& qs) {
  std::sort(x.begin(), x.end());
  std::vector<double> out;
  for (double q : qs) {
    const double pos = q / 100.0 * static_cast<double>(x.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, x.size() - 1);
    out.push_back(x[lo] + (x[hi] - x[lo]) * (pos - static_cast<double>(lo)));
  }
  return out;
}

}  // namespace rensa::extensions::detail
