#pragma once
// Helpers of the recurrent links' tests: the deterministic inputs and parameters the reference
// values were computed on, value comparison, a directional gradient check of the parameters, and
// temporary files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "rensa/rensa.h"
#include "rensa/training.h"
#include "tests/unit/test_util.h"

namespace rensa::test {

/// scale * sin(0.37 k + off) laid out in `shape` (k the flat index), float64.
inline Array sin_array(const Shape& shape, double off, double scale = 1.0) {
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = scale * std::sin(0.37 * static_cast<double>(k) + off);
  return Array::from_vector(v, shape);
}

inline Variable sin_var(const Shape& shape, double off) {
  return Variable(sin_array(shape, off));
}

/// Sets parameter i of the link's sorted paths to 0.5 sin(0.37 k + base + 0.1 i), as the
/// reference script does.
inline void set_params(Link& link, double base) {
  auto params = link.namedparams();
  std::sort(params.begin(), params.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Variable& p = params[i].second;
    p.array().assign(sin_array(p.shape(), base + 0.1 * static_cast<double>(i), 0.5).astype(p.dtype()));
  }
}

inline void expect_values(const Variable& v, const std::vector<double>& want, double tol = 1e-12) {
  ASSERT_FALSE(v.is_null());
  const auto got = v.array().to_vector<double>();
  ASSERT_EQ(got.size(), want.size()) << "shape " << v.shape();
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << i;
}

/// A scalar of outputs: sum_i <ys[i], sin weights>, so every element counts differently.
inline Variable weighted_sum(const std::vector<Variable>& ys) {
  Variable total;
  for (std::size_t i = 0; i < ys.size(); ++i) {
    const Variable w(sin_array(ys[i].shape(), 0.7 + static_cast<double>(i)));
    const Variable s = functions::sum(functions::mul(ys[i], w));
    total = total.is_null() ? s : functions::add(total, s);
  }
  return total;
}

/// Checks the gradient of `loss()` (a scalar recomputed from scratch on each call) with respect to
/// every initialized parameter of `link`: <grad, d> against the central difference along a random
/// direction d. Float64 parameters.
inline void expect_param_grads(Link& link, const std::function<Variable()>& loss, double eps = 1e-5) {
  link.cleargrads();
  loss().backward();
  uint64_t seed = 100;
  for (const auto& [path, p] : link.namedparams(false)) {
    ASSERT_FALSE(p.grad().is_null()) << path << " got no gradient";
    const Array d = randn(p.shape(), Dtype::float64, seed++);
    const auto dv = d.to_vector<double>();
    const auto gv = p.grad().array().to_vector<double>();
    double analytic = 0;
    for (std::size_t k = 0; k < dv.size(); ++k) analytic += gv[k] * dv[k];
    const Array orig = p.array().copy();
    auto at = [&](double t) {
      auto v = orig.to_vector<double>();
      for (std::size_t k = 0; k < v.size(); ++k) v[k] += t * dv[k];
      p.array().assign(Array::from_vector(v, p.shape()));
      auto guard = no_backprop_mode();
      return loss().array().to_vector<double>()[0];
    };
    const double numerical = (at(eps) - at(-eps)) / (2 * eps);
    p.array().assign(orig);
    EXPECT_NEAR(analytic, numerical, 1e-6 * (1 + std::abs(numerical))) << path;
  }
}

/// A path in the temporary directory unique to this process.
inline std::string temp_npz(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("rensa_" + name + "_" + std::to_string(::getpid()) + ".npz"))
      .string();
}

/// Expects equal parameter paths and values.
inline void expect_same_params(const Link& a, const Link& b) {
  const auto pa = a.namedparams(), pb = b.namedparams();
  ASSERT_EQ(pa.size(), pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    EXPECT_EQ(pa[i].first, pb[i].first);
    EXPECT_TRUE(array_equal(pa[i].second.array(), pb[i].second.array())) << pa[i].first;
  }
}

}  // namespace rensa::test
