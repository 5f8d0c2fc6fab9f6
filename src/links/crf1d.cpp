// CRF1d: the cost matrix, and the sort and transposition of batch-major sequences.
#include "rensa/links/crf1d.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "rensa/core/config.h"
#include "rensa/core/error.h"
#include "rensa/core/random.h"
#include "rensa/functions/loss.h"
#include "rensa/functions/sequence.h"

namespace rensa::links {
namespace {

// Indices of the sequences by decreasing length, ties in their order.
std::vector<std::size_t> by_length(const std::vector<int64_t>& lengths) {
  std::vector<std::size_t> order(lengths.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return lengths[a] > lengths[b]; });
  return order;
}

// Time-major integer arrays from batch-major ones already sorted by decreasing length.
std::vector<Array> transpose_labels(const std::vector<Array>& ys) {
  std::vector<std::vector<int64_t>> seqs;
  for (const Array& y : ys) seqs.push_back(y.to(Device::cpu()).astype(Dtype::int64).to_vector<int64_t>());
  std::vector<Array> out;
  for (std::size_t t = 0; !seqs.empty() && t < seqs[0].size(); ++t) {
    std::vector<int64_t> step;
    for (const auto& s : seqs) {
      if (t < s.size()) step.push_back(s[t]);
    }
    out.push_back(Array::from_vector(step, ys[0].device()));
  }
  return out;
}

template <class F>
auto prefixed(F&& f) {
  try {
    return f();
  } catch (...) {
    rethrow_with_context("CRF1d: ");
  }
}

std::vector<Variable> sorted_time_major(const std::vector<Variable>& xs, const std::vector<std::size_t>& order) {
  std::vector<Variable> sorted;
  for (std::size_t i : order) sorted.push_back(xs[i]);
  return prefixed([&] { return functions::transpose_sequence(sorted); });
}

std::vector<int64_t> lengths_of(const std::vector<Variable>& xs) {
  std::vector<int64_t> lengths;
  for (const Variable& x : xs) {
    RENSA_CHECK(!x.shape().empty(), ShapeError, "CRF1d: a sequence of scores must be (L, n_label), got ", x.shape());
    lengths.push_back(x.shape()[0]);
  }
  return lengths;
}

}  // namespace

CRF1d::CRF1d(int64_t n_label, CRF1dOptions options) {
  RENSA_CHECK(n_label >= 1, ValueError, "CRF1d: n_label must be at least 1, got ", n_label);
  const Dtype dtype = get_dtype();
  RENSA_CHECK(is_floating(dtype), DtypeError, "CRF1d: parameters need a floating dtype, the config's is ", dtype);
  Array cost = Array::zeros({n_label, n_label}, dtype, device_);
  if (options.initial_cost) {
    std::optional<Generator> own;
    if (options.seed) own.emplace(*options.seed);
    (*options.initial_cost)(cost, own ? *own : default_generator());
  }
  cost_ = add_param("cost", cost);
}

Variable CRF1d::forward(const std::vector<Variable>& xs, const std::vector<Array>& ys, std::string_view reduce,
                        bool transpose) {
  if (!transpose) return prefixed([&] { return functions::crf1d(cost_, xs, ys, reduce); });
  RENSA_CHECK(xs.size() == ys.size(), ShapeError, "CRF1d: ", xs.size(), " score sequences but ", ys.size(),
              " label sequences");
  const auto order = by_length(lengths_of(xs));
  std::vector<Array> sorted_ys;
  for (std::size_t i : order) sorted_ys.push_back(ys[i]);
  const auto txs = sorted_time_major(xs, order);
  return prefixed([&] { return functions::crf1d(cost_, txs, transpose_labels(sorted_ys), reduce); });
}

std::pair<Variable, std::vector<Array>> CRF1d::argmax(const std::vector<Variable>& xs, bool transpose) {
  if (!transpose) return prefixed([&] { return functions::argmax_crf1d(cost_, xs); });
  const auto order = by_length(lengths_of(xs));
  auto [score, path] = prefixed([&] { return functions::argmax_crf1d(cost_, sorted_time_major(xs, order)); });
  // path is time-major in the sorted order: back to one sequence per entry, in the order of xs.
  std::vector<std::vector<int64_t>> seqs(xs.size());
  for (const Array& step : path) {
    const auto v = step.to(Device::cpu()).astype(Dtype::int64).to_vector<int64_t>();
    for (std::size_t b = 0; b < v.size(); ++b) seqs[order[b]].push_back(v[b]);
  }
  std::vector<Array> out;
  for (const auto& s : seqs) out.push_back(Array::from_vector(s, cost_.device()));
  return {score, out};
}

}  // namespace rensa::links
