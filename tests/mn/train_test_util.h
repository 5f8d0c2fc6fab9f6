#pragma once
// Helpers shared by the multi-rank tests of the training side of rensa::mn (optimizer, scatter,
// evaluator, snapshot): communicators of every variant, a small deterministic model and data, and
// comparisons across ranks.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rensa/mn/communicator.h"
#include "rensa/rensa.h"
#include "rensa/training.h"
#include "tests/mn/mn_test_util.h"

namespace rensa::mn::test {

namespace F = ::rensa::functions;
namespace L = ::rensa::links;

/// The communicators comm() made, by name and wire dtype.
inline std::map<std::pair<std::string, int>, Communicator>& communicator_cache() {
  static std::map<std::pair<std::string, int>, Communicator> cache;
  return cache;
}

/// Destroys the cached communicators when the tests end, while main()'s communicator and MPI are
/// alive: a communicator destroyed among the static destructors would join its thread while the
/// objects that thread may still release are being torn down.
class CommunicatorCacheCleaner : public ::testing::Environment {
 public:
  void TearDown() override { communicator_cache().clear(); }
};
inline const bool kCommunicatorCacheCleanerRegistered =
    (::testing::AddGlobalTestEnvironment(new CommunicatorCacheCleaner), true);

/// The ranks_per_host comm() gives variant `v`: two simulated hosts when the rank count is even (one
/// rank per host when odd) and the variant runs on them, so that its reduction across hosts runs on
/// one machine (on one host every variant averages through the shared segment); else 0 (by host name).
inline int simulated_ranks_per_host(const CommunicatorVariant& v) {
  const int size = testing::world().size();
  const int per_host = size % 2 == 0 ? size / 2 : 1;
  return testing::runs_here(v, per_host) ? per_host : 0;
}

/// A communicator of variant `name` (cached: one per name and wire dtype; "flat" in float32 is the
/// world communicator of main()), over simulated_ranks_per_host.
inline Communicator comm(const std::string& name = "flat", Dtype wire = Dtype::float32) {
  if (name == "flat" && wire == Dtype::float32) return testing::world();
  auto& cache = communicator_cache();
  const auto key = std::make_pair(name, static_cast<int>(wire));
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  CommunicatorOptions o = testing::test_options();
  o.allreduce_grad_dtype = wire;
  o.ranks_per_host = simulated_ranks_per_host(testing::variant(name));
  Communicator c = create_communicator(name, o);
  cache.emplace(key, c);
  return c;
}

/// n examples of 2 features and 3 classes, numbered so that every rank can tell them apart.
inline datasets::DatasetPtr three_class_points(int64_t n) {
  std::vector<float> x;
  std::vector<int32_t> t;
  for (int64_t i = 0; i < n; ++i) {
    x.push_back(static_cast<float>(i % 7) - 3.0f);
    x.push_back(static_cast<float>(i % 5) * 0.5f);
    t.push_back(static_cast<int32_t>(i % 3));
  }
  return std::make_shared<datasets::TupleDataset>(
      std::vector<Array>{Array::from_vector(x, {n, 2}), Array::from_vector(t, {n})});
}

/// Every rank's values, in rank order (on every rank).
inline std::vector<std::vector<double>> allgather_values(const std::vector<double>& v) {
  std::vector<std::vector<double>> out;
  for (const Array& a : comm().allgather(Array::from_vector(v))) out.push_back(a.to_vector<double>());
  return out;
}

/// True on every rank when `ok` holds on every rank.
inline bool all_ranks(bool ok) {
  const Array r = comm().allreduce(Array::from_vector(std::vector<int32_t>{ok ? 1 : 0}), ReduceOp::min);
  return r.to_vector<int32_t>()[0] == 1;
}

/// A three-layer perceptron with seeded initialization (the same values on every rank), or with
/// l1's W inferred at the first call (drawn from the default generator).
struct Net : Chain {
  std::shared_ptr<L::Linear> l1, l2, l3;
  Net(int64_t in, int64_t hidden, int64_t out, uint64_t seed, bool lazy = false) {
    if (lazy) {
      l1 = std::make_shared<L::Linear>(hidden);
    } else {
      l1 = std::make_shared<L::Linear>(in, hidden, L::LinearOptions{.seed = seed});
    }
    l2 = std::make_shared<L::Linear>(hidden, hidden, L::LinearOptions{.seed = seed + 1});
    l3 = std::make_shared<L::Linear>(hidden, out, L::LinearOptions{.seed = seed + 2});
    add_link("l1", l1);
    add_link("l2", l2);
    add_link("l3", l3);
  }
  Variable forward(const Variable& x) override { return (*l3)(F::tanh((*l2)(F::tanh((*l1)(x))))); }
  using Link::forward;
};

/// Parameter values in namedparams() order, as float64.
inline std::vector<std::vector<double>> param_values(const Link& link) {
  std::vector<std::vector<double>> out;
  for (const auto& [path, p] : link.namedparams(false)) {
    out.push_back(p.array().astype(Dtype::float64).to_vector<double>());
  }
  return out;
}

/// Largest |a - b| / (1 + |b|) over all parameters; infinity when the structures differ or a value
/// is NaN.
inline double max_rel_diff(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
  if (a.size() != b.size()) return INFINITY;
  double m = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size()) return INFINITY;
    for (std::size_t j = 0; j < a[i].size(); ++j) {
      const double d = std::abs(a[i][j] - b[i][j]) / (1.0 + std::abs(b[i][j]));
      if (std::isnan(d)) return INFINITY;
      m = std::max(m, d);
    }
  }
  return m;
}

/// Flattens parameter values (to compare ranks with allgather_values).
inline std::vector<double> flatten(const std::vector<std::vector<double>>& v) {
  std::vector<double> out;
  for (const auto& x : v) out.insert(out.end(), x.begin(), x.end());
  return out;
}

/// Rows [lo, hi) of a deterministic global batch of step `step`: inputs (G, in) and targets (G, out).
inline std::pair<Array, Array> batch_rows(int64_t step, int64_t global, int64_t in, int64_t out, int64_t lo,
                                          int64_t hi) {
  Generator gx(1000 + static_cast<uint64_t>(step)), gy(5000 + static_cast<uint64_t>(step));
  const Array x = random::normal({global, in}, 0.0, 1.0, Dtype::float32, Device::cpu(), &gx);
  const Array y = random::normal({global, out}, 0.0, 0.5, Dtype::float32, Device::cpu(), &gy);
  return {x.slice(0, lo, hi).copy(), y.slice(0, lo, hi).copy()};
}

}  // namespace rensa::mn::test
