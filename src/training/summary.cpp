#include "rensa/training/summary.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rensa/core/error.h"

namespace rensa::training {

void DictSummary::add(const Observation& obs, double weight) {
  for (const auto& [key, value] : obs) add(key, value, weight);
}

void DictSummary::add(const std::string& key, double value, double weight) {
  RENSA_CHECK(weight > 0.0, ValueError, "DictSummary::add: the weight of '", key, "' must be positive, got ", weight);
  Entry& e = entries_[key];
  e.x += weight * value;
  e.x2 += weight * value * value;
  e.weight += weight;
}

void DictSummary::merge(const DictSummary& other) {
  for (const auto& [key, o] : other.entries_) {
    Entry& e = entries_[key];
    e.x += o.x;
    e.x2 += o.x2;
    e.weight += o.weight;
  }
}

Observation DictSummary::mean() const {
  Observation out;
  for (const auto& [key, e] : entries_) out[key] = e.x / e.weight;
  return out;
}

Observation DictSummary::std() const {
  Observation out;
  for (const auto& [key, e] : entries_) {
    const double m = e.x / e.weight;
    // Rounding can make the variance slightly negative for constant values.
    out[key] = std::sqrt(std::max(0.0, e.x2 / e.weight - m * m));
  }
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
      auto& c = summaries.child(std::to_string(i));
      Entry e;
      c.scalar("_x", e.x);
      c.scalar("_x2", e.x2);
      c.scalar("_n", e.weight);
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
  for (auto& [key, e] : entries_) {
    auto& c = summaries.child(std::to_string(i++));
    c.scalar("_x", e.x);
    c.scalar("_x2", e.x2);
    c.scalar("_n", e.weight);
  }
}

}  // namespace rensa::training
