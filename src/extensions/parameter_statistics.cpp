#include "rensa/extensions/parameter_statistics.h"

#include <algorithm>
#include <cmath>

#include "rensa/core/error.h"
#include "rensa/links/link.h"
#include "rensa/training/trainer.h"
#include "src/extensions/statistics.h"

namespace rensa::extensions {

std::map<std::string, StatisticFunction> ParameterStatistics::default_statistics() {
  return {
      {"mean", [](const std::vector<double>& x) { return std::vector<double>{detail::mean_of(x)}; }},
      {"std", [](const std::vector<double>& x) { return std::vector<double>{detail::std_of(x)}; }},
      {"min", [](const std::vector<double>& x) { return std::vector<double>{*std::min_element(x.begin(), x.end())}; }},
      {"max", [](const std::vector<double>& x) { return std::vector<double>{*std::max_element(x.begin(), x.end())}; }},
      {"zeros",
       [](const std::vector<double>& x) {
         return std::vector<double>{static_cast<double>(std::count(x.begin(), x.end(), 0.0))};
       }},
      {"percentile",
       [](const std::vector<double>& x) {
         return detail::percentiles(x, {0.13, 2.28, 15.87, 50.0, 84.13, 97.72, 99.87});
       }},
  };
}

ParameterStatistics::ParameterStatistics(std::vector<Link*> links, std::map<std::string, StatisticFunction> statistics,
                                         ParameterStatisticsOptions options)
    : links_(std::move(links)), statistics_(std::move(statistics)), options_(std::move(options)) {
  RENSA_CHECK(!links_.empty(), ValueError, "ParameterStatistics: no links given");
  for (std::size_t i = 0; i < links_.size(); ++i) {
    RENSA_CHECK(links_[i] != nullptr, ValueError, "ParameterStatistics: link ", i, " is null");
  }
  for (const auto& [name, fn] : statistics_) {
    RENSA_CHECK(!name.empty() && fn, ValueError, "ParameterStatistics: statistic '", name,
                "' needs a name and a function");
  }
}

ParameterStatistics::ParameterStatistics(std::vector<Link*> links, ParameterStatisticsOptions options)
    : ParameterStatistics(std::move(links), default_statistics(), std::move(options)) {}

ParameterStatistics::ParameterStatistics(Link& link, ParameterStatisticsOptions options)
    : ParameterStatistics(std::vector<Link*>{&link}, std::move(options)) {}

void ParameterStatistics::register_statistics(const std::string& name, StatisticFunction function) {
  RENSA_CHECK(!name.empty() && function, ValueError, "ParameterStatistics::register_statistics: statistic '", name,
              "' needs a name and a function");
  statistics_[name] = std::move(function);
}

void ParameterStatistics::operator()(training::Trainer& trainer) {
  Observation stats;
  const std::string prefix = options_.prefix.empty() ? "" : options_.prefix + "/";
  for (Link* link : links_) {
    const std::string link_name = link->name().empty() ? "None" : link->name();
    for (const auto& [path, param] : link->namedparams(false)) {
      for (const char* attr : {"data", "grad"}) {
        const bool is_grad = attr[0] == 'g';
        if (is_grad ? !options_.report_grads : !options_.report_params) continue;
        if (is_grad && param.grad().is_null()) continue;
        const std::vector<double> x = (is_grad ? param.grad().array() : param.array()).to_vector<double>();
        if (x.empty()) continue;
        const bool has_nan = std::any_of(x.begin(), x.end(), [](double v) { return std::isnan(v); });
        for (const auto& [fname, fn] : statistics_) {
          std::string key = prefix;  // appended to, not concatenated: no temporary strings
          key.append(link_name).append(path).append("/").append(attr).append("/").append(fname);
          if (options_.skip_nan_params && has_nan) {
            stats[key] = std::nan("");
            continue;
          }
          const std::vector<double> values = fn(x);
          RENSA_CHECK(!values.empty(), ValueError, "ParameterStatistics: statistic '", fname,
                      "' returned no value for ", key);
          if (values.size() == 1) {
            stats[key] = values[0];
          } else {
            for (std::size_t i = 0; i < values.size(); ++i) stats[key + "/" + std::to_string(i)] = values[i];
          }
        }
      }
    }
  }
  summary_.add(stats);
  if (options_.trigger(trainer)) {
    for (const auto& [key, value] : summary_.mean()) trainer.observation()[key] = value;
    summary_.reset();
  }
}

void ParameterStatistics::serialize(serializers::Serializer& s) {
  options_.trigger.serialize(s.child("trigger"));
  summary_.serialize(s.child("summary"));
}

}  // namespace rensa::extensions
