#include "bench/scaling/profile.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "src/serializers/npz_internal.h"

namespace rensa_bench::scaling {

Profile Profile::load(const std::string& path) {
  Profile p;
  p.path_ = path;
  std::ifstream in(path);
  if (!in) return p;
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("scaling profile " + path + ": not JSON (" + e.what() + ")");
  }
  if (!j.is_object() || !j.contains("entries") || !j["entries"].is_object()) {
    throw std::runtime_error("scaling profile " + path + ": no \"entries\" object; not a profile");
  }
  p.entries_ = j["entries"];
  if (j.contains("machine")) p.machine_ = j["machine"];
  return p;
}

void Profile::save(const std::string& path) const {
  nlohmann::ordered_json j;
  j["machine"] = machine_;
  j["entries"] = entries_;
  const std::string text = j.dump(1) + "\n";
  rensa::serializers::detail::AtomicFileWriter writer(path, "scaling profile");
  writer.write(text.data(), text.size());
  writer.commit();
}

const nlohmann::json& Profile::at(const std::string& key, const std::string& hint) const {
  if (!entries_.contains(key)) {
    throw std::runtime_error("scaling profile " + path_ + ": no entry \"" + key + "\"; " + hint);
  }
  return entries_.at(key);
}

namespace {

// The median of the values at one place of every profile's entry; `where` names it for errors.
nlohmann::json median_of(const std::vector<const nlohmann::json*>& values, const std::vector<Profile>& profiles,
                         const std::string& where) {
  const nlohmann::json& first = *values.front();
  for (std::size_t i = 1; i < values.size(); ++i) {
    const nlohmann::json& v = *values[i];
    const bool same = (first.is_number() && v.is_number()) ||
                      (first.type() == v.type() && (!first.is_array() || first.size() == v.size()) &&
                       (!first.is_object() || first.size() == v.size()));
    if (!same) {
      throw std::runtime_error("median of scaling profiles: " + where + " differs in shape between " +
                               profiles.front().path() + " and " + profiles[i].path());
    }
  }
  if (first.is_number()) {
    std::vector<double> xs;
    for (const nlohmann::json* v : values) xs.push_back(v->get<double>());
    std::sort(xs.begin(), xs.end());
    const std::size_t n = xs.size();
    return n % 2 == 1 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
  }
  if (first.is_array() || first.is_object()) {
    nlohmann::json out = first.is_array() ? nlohmann::json::array() : nlohmann::json::object();
    std::size_t index = 0;
    for (auto it = first.begin(); it != first.end(); ++it, ++index) {
      std::vector<const nlohmann::json*> parts;
      const std::string key = first.is_array() ? std::to_string(index) : it.key();
      for (std::size_t i = 0; i < values.size(); ++i) {
        const nlohmann::json& v = *values[i];
        if (first.is_object() && !v.contains(key)) {
          throw std::runtime_error("median of scaling profiles: " + where + " has no \"" + key + "\" in " +
                                   profiles[i].path());
        }
        parts.push_back(first.is_array() ? &v[index] : &v[key]);
      }
      const nlohmann::json m = median_of(parts, profiles, where + "/" + key);
      if (first.is_array()) {
        out.push_back(m);
      } else {
        out[key] = m;
      }
    }
    return out;
  }
  return first;
}

}  // namespace

Profile median_profile(const std::vector<Profile>& profiles) {
  if (profiles.empty()) throw std::runtime_error("median of scaling profiles: no profiles");
  Profile out;
  out.machine_ = profiles.front().machine_;
  for (std::size_t i = 0; i < profiles.size(); ++i) {
    if (profiles[i].entries_.size() != profiles.front().entries_.size()) {
      throw std::runtime_error("median of scaling profiles: " + profiles[i].path() + " has " +
                               std::to_string(profiles[i].entries_.size()) + " entries, " + profiles.front().path() +
                               " " + std::to_string(profiles.front().entries_.size()));
    }
  }
  for (auto it = profiles.front().entries_.begin(); it != profiles.front().entries_.end(); ++it) {
    std::vector<const nlohmann::json*> values;
    for (const Profile& p : profiles) {
      if (!p.entries_.contains(it.key())) {
        throw std::runtime_error("median of scaling profiles: no entry \"" + it.key() + "\" in " + p.path());
      }
      values.push_back(&p.entries_.at(it.key()));
    }
    out.entries_[it.key()] = median_of(values, profiles, "entry \"" + it.key() + "\"");
  }
  return out;
}

nlohmann::json fit_affine(const std::vector<std::pair<double, double>>& points) {
  // beta: the least-squares slope over the sizes from 1 MiB up, where bandwidth dominates (all of
  // them when fewer than two are that large); alpha: the latency the small sizes leave.
  std::vector<std::pair<double, double>> large;
  for (const auto& pt : points) {
    if (pt.first >= (1 << 20)) large.push_back(pt);
  }
  if (large.size() < 2) large = points;
  double sx = 0, st = 0, sxx = 0, sxt = 0;
  for (const auto& [x, t] : large) {
    sx += x;
    st += t;
    sxx += x * x;
    sxt += x * t;
  }
  const double n = static_cast<double>(large.size());
  const double det = n * sxx - sx * sx;
  double beta = det > 0 ? (n * sxt - sx * st) / det : 0;
  if (beta <= 0 && !points.empty()) beta = points.back().second / points.back().first;  // one size, or noise
  // Noise only ever adds time: the least latency any size below 1 MiB leaves (the smallest size
  // when none is that small).
  double alpha = -1;
  for (const auto& [x, t] : points) {
    if (x < (1 << 20)) alpha = alpha < 0 ? t - beta * x : std::min(alpha, t - beta * x);
  }
  if (alpha < 0 && !points.empty()) {
    const auto smallest = *std::min_element(points.begin(), points.end());
    alpha = smallest.second - beta * smallest.first;
  }
  alpha = std::max(0.0, alpha);
  nlohmann::json pts = nlohmann::json::array();
  for (const auto& [x, t] : points) pts.push_back({x, t});
  return {{"alpha", alpha}, {"beta", beta}, {"points", pts}};
}

}  // namespace rensa_bench::scaling
