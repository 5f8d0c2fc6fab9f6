// The linear-chain CRF: crf1d's negative log-likelihood (the forward algorithm in log space, a
// composite of differentiable functions) and argmax_crf1d's Viterbi decoding.
#include <string_view>
#include <utility>
#include <vector>

#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/linalg.h"
#include "rensa/functions/loss.h"
#include "rensa/functions/reduction.h"
#include "src/functions/common.h"

namespace rensa::functions {
namespace {

// K, after checking cost (K, K) and xs[t] (B_t, K) with non-increasing B_t.
int64_t check_chain(const char* op, const Variable& cost, const std::vector<Variable>& xs) {
  detail::check_floating(op, cost, "cost");
  RENSA_CHECK(cost.ndim() == 2 && cost.shape()[0] == cost.shape()[1], ShapeError, op, ": cost must be (K, K), got ",
              cost.shape());
  RENSA_CHECK(!xs.empty(), ValueError, op, ": xs is empty");
  const int64_t k = cost.shape()[0];
  int64_t prev = xs[0].is_null() ? 0 : xs[0].shape()[0];
  for (std::size_t t = 0; t < xs.size(); ++t) {
    detail::check_floating(op, xs[t], "xs[t]");
    detail::check_same_dtype_device(op, {&cost, &xs[t]});
    RENSA_CHECK(xs[t].ndim() == 2 && xs[t].shape()[1] == k && xs[t].shape()[0] <= prev, ShapeError, op, ": xs[", t,
                "] ", xs[t].shape(), " must be (B_t, ", k, ") with B_t at most ", prev);
    prev = xs[t].shape()[0];
  }
  return k;
}

// (first rows, rest) of v split after `rows` rows; rest is null when nothing is left.
std::pair<Variable, Variable> head_rows(const Variable& v, int64_t rows) {
  if (v.shape()[0] == rows) return {v, Variable()};
  auto parts = split_axis(v, std::vector<int64_t>{rows}, 0);
  return {parts[0], parts[1]};
}

Variable with_rest(const Variable& head, std::vector<Variable>& rests) {
  if (rests.empty()) return head;
  std::vector<Variable> parts{head};
  parts.insert(parts.end(), rests.rbegin(), rests.rend());
  return concat(parts, 0);
}

}  // namespace

Variable crf1d(const Variable& cost, const std::vector<Variable>& xs, const std::vector<Array>& ys,
               std::string_view reduce) {
  constexpr const char* op = "crf1d";
  const int64_t k = check_chain(op, cost, xs);
  const bool mean_over_n = detail::parse_choice(op, "reduce", reduce, {"mean", "no"}) == 0;
  RENSA_CHECK(ys.size() == xs.size(), ValueError, op, ": ", xs.size(), " steps of xs but ", ys.size(), " of ys");
  for (std::size_t t = 0; t < ys.size(); ++t) {
    RENSA_CHECK(!ys[t].is_null() && (ys[t].dtype() == Dtype::int32 || ys[t].dtype() == Dtype::int64), DtypeError, op,
                ": ys[", t, "] must be int32 or int64");
    RENSA_CHECK(ys[t].shape() == Shape{xs[t].shape()[0]}, ShapeError, op, ": ys[", t, "] ", ys[t].shape(),
                " must be (", xs[t].shape()[0], ",)");
    for (int64_t v : ys[t].astype(Dtype::int64).to_vector<int64_t>()) {
      RENSA_CHECK(v >= 0 && v < k, IndexError, op, ": label ", v, " at step ", t, " is out of range [0, ", k, ")");
    }
  }
  const int64_t n = xs[0].shape()[0];
  // log Z by the forward algorithm; finished sequences keep their last alpha.
  Variable alpha = xs[0];
  std::vector<Variable> done;
  for (std::size_t t = 1; t < xs.size(); ++t) {
    const int64_t b = xs[t].shape()[0];
    auto [head, rest] = head_rows(alpha, b);
    if (!rest.is_null()) done.push_back(rest);
    alpha = add(logsumexp(add(expand_dims(head, 2), broadcast_to(expand_dims(cost, 0), {b, k, k})), {1}), xs[t]);
  }
  const Variable logz = logsumexp(with_rest(alpha, done), {1});
  // The gold path's score: unary scores plus cost[y_{t-1}, y_t] (row y_{t-1} of cost by a one-hot
  // product, then item y_t).
  Variable score = select_item(xs[0], ys[0]);
  std::vector<Variable> finished;
  for (std::size_t t = 1; t < xs.size(); ++t) {
    const int64_t b = xs[t].shape()[0];
    auto [head, rest] = head_rows(score, b);
    if (!rest.is_null()) finished.push_back(rest);
    const auto prev = ys[t - 1].astype(Dtype::int64).to_vector<int64_t>();
    std::vector<double> onehot(static_cast<std::size_t>(b * k), 0.0);
    for (int64_t i = 0; i < b; ++i) onehot[static_cast<std::size_t>(i * k + prev[static_cast<std::size_t>(i)])] = 1.0;
    const Variable rows = matmul(Variable(Array::from_vector(onehot, {b, k}).astype(cost.dtype()).to(cost.device())),
                                 cost);
    score = add(head, add(select_item(xs[t], ys[t]), select_item(rows, ys[t])));
  }
  const Variable loss = sub(logz, with_rest(score, finished));
  return mean_over_n ? mul(sum(loss), n > 0 ? 1.0 / static_cast<double>(n) : 0.0) : loss;
}

std::pair<Variable, std::vector<Array>> argmax_crf1d(const Variable& cost, const std::vector<Variable>& xs) {
  constexpr const char* op = "argmax_crf1d";
  const int64_t k = check_chain(op, cost, xs);
  Variable alpha = xs[0];
  std::vector<Variable> done;                // alphas of sequences finished before step t
  std::vector<std::vector<int64_t>> back;    // argmax predecessor per step (B_t x K)
  std::vector<int64_t> done_at;              // how many rows finished before each step
  for (std::size_t t = 1; t < xs.size(); ++t) {
    const int64_t b = xs[t].shape()[0];
    auto [head, rest] = head_rows(alpha, b);
    if (!rest.is_null()) done.push_back(rest);
    const Variable scores = add(expand_dims(head, 2), broadcast_to(expand_dims(cost, 0), {b, k, k}));
    back.push_back(argmax(scores, 1).array().astype(Dtype::int64).to_vector<int64_t>());
    alpha = add(max(scores, {1}), xs[t]);
  }
  const Variable final_alpha = with_rest(alpha, done);
  // Backtrack on the host from each sequence's last step.
  const auto best = argmax(final_alpha, 1).array().astype(Dtype::int64).to_vector<int64_t>();
  const std::size_t steps = xs.size();
  std::vector<std::vector<int64_t>> path(steps);
  std::vector<int64_t> cur = best;  // label at the current step for rows still running
  for (std::size_t s = steps; s-- > 0;) {
    const int64_t b = xs[s].shape()[0];
    path[s].assign(cur.begin(), cur.begin() + b);
    if (s == 0) break;
    const auto& bp = back[s - 1];
    const int64_t b_prev = xs[s - 1].shape()[0];
    std::vector<int64_t> prev(static_cast<std::size_t>(b_prev));
    for (int64_t i = 0; i < b_prev; ++i) {
      prev[static_cast<std::size_t>(i)] =
          i < b ? bp[static_cast<std::size_t>(i * k + cur[static_cast<std::size_t>(i)])] : best[static_cast<std::size_t>(i)];
    }
    cur = prev;
  }
  std::vector<Array> out;
  for (const auto& p : path) out.push_back(Array::from_vector(p).to(cost.device()));
  return {max(final_alpha, {1}), out};
}

}  // namespace rensa::functions
