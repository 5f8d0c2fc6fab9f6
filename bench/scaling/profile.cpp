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

nlohmann::json fit_affine(const std::vector<std::pair<double, double>>& points) {
  // Minimize sum ((alpha + beta * x - t) / t)^2: weighted least squares with weights 1 / t^2.
  double sw = 0, sx = 0, sxx = 0, st = 0, sxt = 0;
  for (const auto& [x, t] : points) {
    const double w = 1.0 / (t * t);
    sw += w;
    sx += w * x;
    sxx += w * x * x;
    st += w * t;
    sxt += w * x * t;
  }
  const double det = sw * sxx - sx * sx;
  double alpha = 0, beta = 0;
  if (points.size() >= 2 && det > 0) {
    beta = (sw * sxt - sx * st) / det;
    alpha = (st - beta * sx) / sw;
  }
  if (alpha < 0 && sxx > 0) {  // no latency to speak of: the line through 0
    alpha = 0;
    beta = sxt / sxx;
  }
  if (beta < 0 && sw > 0) {  // no bandwidth term: a constant
    beta = 0;
    alpha = st / sw;
  }
  nlohmann::json pts = nlohmann::json::array();
  for (const auto& [x, t] : points) pts.push_back({x, t});
  return {{"alpha", alpha}, {"beta", beta}, {"points", pts}};
}

}  // namespace rensa_bench::scaling
