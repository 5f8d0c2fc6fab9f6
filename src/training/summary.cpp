#include "rensa/training/summary.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rensa/core/error.h"

namespace rensa::training {

void Summary::add(double value, double w) {
  RENSA_CHECK(w > 0.0, ValueError, "Summary::add: the weight must be positive, got ", w);
  x += w * value;
  x2 += w * value * value;
  weight += w;
}

void Summary::merge(const Summary& other) {
  x += other.x;
  x2 += other.x2;
  weight += other.weight;
}

double Summary::compute_mean() const {
  RENSA_CHECK(weight > 0.0, ValueError, "Summary: no value has been added, so there is no mean");
  return x / weight;
}

std::pair<double, double> Summary::make_statistics() const {
  const double m = compute_mean();
  // Rounding can make the variance slightly negative for constant values.
  return {m, std::sqrt(std::max(0.0, x2 / weight - m * m))};
}

void Summary::serialize(serializers::Serializer& s) {
  s.scalar("_x", x);
  s.scalar("_x2", x2);
  s.scalar("_n", weight);
}

void DictSummary::add(const Observation& obs, double weight) {
  for (const auto& [key, value] : obs) add(key, value, weight);
}

void DictSummary::add(const std::string& key, double value, double weight) {
  RENSA_CHECK(weight > 0.0, ValueError, "DictSummary::add: the weight of '", key, "' must be positive, got ", weight);
  entries_[key].add(value, weight);
}

void DictSummary::merge(const DictSummary& other) {
  for (const auto& [key, o] : other.entries_) entries_[key].merge(o);
}

Observation DictSummary::mean() const {
  Observation out;
  for (const auto& [key, e] : entries_) out[key] = e.compute_mean();
  return out;
}

Observation DictSummary::std() const {
  Observation out;
  for (const auto& [key, e] : entries_) out[key] = e.make_statistics().second;
  return out;
}

void DictSummary::serialize(serializers::Serializer& s) {
  if (s.is_loading()) {
    entries_.clear();
    std::string names_json;
    s.string("_names", names_json);
    nlohmann::json names;
    try {
      names = nlohmann::json::parse(names_json);
    } catch (const nlohmann::json::exception& e) {
      RENSA_THROW(IOError, "DictSummary::serialize: '", s.path(), "_names' is not a JSON list of names: ", e.what());
    }
    RENSA_CHECK(names.is_array(), IOError, "DictSummary::serialize: '", s.path(), "_names' is not a JSON list");
    auto& summaries = s.child("_summaries");
    for (std::size_t i = 0; i < names.size(); ++i) {
      RENSA_CHECK(names[i].is_string(), IOError, "DictSummary::serialize: entry ", i, " of '", s.path(),
                  "_names' is not a string");
      Summary e;
      e.serialize(summaries.child(std::to_string(i)));
      entries_[names[i].get<std::string>()] = e;
    }
    return;
  }
  nlohmann::json names = nlohmann::json::array();
  for (const auto& [key, e] : entries_) names.push_back(key);
  std::string names_json = names.dump();
  s.string("_names", names_json);
  auto& summaries = s.child("_summaries");
  std::size_t i = 0;
  for (auto& [key, e] : entries_) e.serialize(summaries.child(std::to_string(i++)));
}

}  // namespace rensa::training
