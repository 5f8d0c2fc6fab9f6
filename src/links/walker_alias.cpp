// WalkerAlias: the alias tables in Chainer's float32 arithmetic, so they match its tables.
#include "rensa/links/walker_alias.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "rensa/core/error.h"

namespace rensa::links {

WalkerAlias::WalkerAlias(const std::vector<double>& probs) {
  const auto n = probs.size();
  RENSA_CHECK(n > 0, ValueError, "WalkerAlias: needs at least one probability");
  std::vector<float> prob(n);
  float total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    RENSA_CHECK((std::isfinite(probs[i]) && probs[i] >= 0), ValueError,
                "WalkerAlias: probabilities must be finite and non-negative, got ", probs[i], " at ", i);
    prob[i] = static_cast<float>(probs[i]);
    total += prob[i];  // numpy.sum in float32 (pairwise there; equal for short lists)
  }
  RENSA_CHECK(total > 0, ValueError, "WalkerAlias: the probabilities sum to 0");
  std::vector<std::pair<float, int32_t>> pairs(n);
  for (std::size_t i = 0; i < n; ++i) pairs[i] = {prob[i] / total, static_cast<int32_t>(i)};
  std::sort(pairs.begin(), pairs.end());
  threshold_.assign(n, 0.0f);
  values_.assign(2 * n, 0);
  std::size_t il = 0, ir = 0;
  for (const auto& [pr, i] : pairs) {
    // NumPy promotes a float32 scalar times a Python int to float64.
    double p = static_cast<double>(pr) * static_cast<double>(n);
    while (p > 1 && ir < il) {
      values_[ir * 2 + 1] = i;
      p -= 1.0 - static_cast<double>(threshold_[ir]);
      ++ir;
    }
    threshold_[il] = static_cast<float>(p);
    values_[il * 2] = i;
    ++il;
  }
  for (std::size_t i = ir; i < n; ++i) values_[i * 2 + 1] = 0;
}

Array WalkerAlias::sample(const Shape& shape, Generator& gen) const {
  const auto n = static_cast<double>(threshold_.size());
  const auto u = random::uniform(shape, 0.0, n, Dtype::float64, Device::cpu(), &gen).to_vector<double>();
  std::vector<int32_t> out(u.size());
  for (std::size_t k = 0; k < u.size(); ++k) {
    const auto index = std::min(static_cast<std::size_t>(u[k]), threshold_.size() - 1);
    const int right = threshold_[index] < static_cast<float>(u[k]) - static_cast<float>(index) ? 1 : 0;
    out[k] = values_[index * 2 + static_cast<std::size_t>(right)];
  }
  return Array::from_vector(out, shape);
}

}  // namespace rensa::links
