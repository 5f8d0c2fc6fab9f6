#pragma once
// Helpers of the connection links' tests: an .npz round trip and the mean square of a parameter.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "rensa/serializers/npz.h"
#include "tests/unit/links/recurrent_test_util.h"

namespace rensa::test {

/// Saves `saved` to an .npz file, loads it into `loaded`, expects equal parameters and returns the
/// file's keys (sorted).
inline std::vector<std::string> npz_round_trip(Link& saved, Link& loaded) {
  const std::string path = temp_npz("connection_link");
  serializers::save_npz(path, saved);
  std::vector<std::string> keys;
  for (const auto& [key, array] : serializers::read_npz(path)) keys.push_back(key);
  serializers::load_npz(path, loaded);
  std::filesystem::remove(path);
  expect_same_params(saved, loaded);
  return keys;
}

/// The mean of the squares of a's elements (the variance of a zero-mean initializer's draw).
inline double mean_square(const Array& a) {
  const auto v = a.to_vector<double>();
  double s = 0;
  for (double e : v) s += e * e;
  return s / static_cast<double>(v.size());
}

}  // namespace rensa::test
