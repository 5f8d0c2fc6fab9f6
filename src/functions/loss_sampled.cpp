// Sampled approximations of a large softmax: negative_sampling and black_out, composites over
// embed_id (so gradients reach x and the sampled rows of W, to every order).
#include <string_view>
#include <vector>

#include "rensa/functions/activation.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/embed_id.h"
#include "rensa/functions/linalg.h"
#include "rensa/functions/loss.h"
#include "rensa/functions/reduction.h"
#include "src/functions/common.h"

namespace rensa::functions {
namespace {

// x (B, D) and W (V, D) floating, of one dtype and device; t (B,) integer.
void check_embedding_loss(const char* op, const Variable& x, const Array& t, const Variable& W) {
  detail::check_floating(op, x);
  detail::check_floating(op, W, "W");
  detail::check_same_dtype_device(op, {&x, &W});
  RENSA_CHECK(x.ndim() == 2 && W.ndim() == 2 && x.shape()[1] == W.shape()[1], ShapeError, op, ": x ", x.shape(),
              " and W ", W.shape(), " must be (B, D) and (V, D)");
  RENSA_CHECK(!t.is_null() && (t.dtype() == Dtype::int32 || t.dtype() == Dtype::int64), DtypeError, op,
              ": t must be int32 or int64");
  RENSA_CHECK(t.shape() == Shape{x.shape()[0]}, ShapeError, op, ": t ", t.shape(), " must be (", x.shape()[0],
              ",) for x ", x.shape());
}

// (B, K) scores W[ids[b, k]] . x[b].
Variable sampled_scores(const Array& ids, const Variable& x, const Variable& W, std::optional<int64_t> ignore) {
  const Variable rows = embed_id(ids, W, ignore);  // (B, K, D)
  const int64_t b = x.shape()[0];
  return reshape(matmul(rows, expand_dims(x, 2)), {b, ids.shape()[1]});
}

}  // namespace

Variable negative_sampling(const Variable& x, const Array& t, const Variable& W, const NegativeSampler& sampler,
                           int64_t sample_size, std::string_view reduce, Array* samples) {
  constexpr const char* op = "negative_sampling";
  check_embedding_loss(op, x, t, W);
  const bool total = detail::parse_choice(op, "reduce", reduce, {"sum", "no"}) == 0;
  RENSA_CHECK(sample_size > 0, ValueError, op, ": sample_size must be positive, got ", sample_size);
  RENSA_CHECK(static_cast<bool>(sampler), ValueError, op, ": sampler is empty");
  const int64_t b = x.shape()[0], k = sample_size + 1, vocab = W.shape()[0];
  const Array drawn = sampler(Shape{b, k});
  RENSA_CHECK(!drawn.is_null() && (drawn.dtype() == Dtype::int32 || drawn.dtype() == Dtype::int64) &&
                  (drawn.shape() == Shape{b, k}),
              ValueError, op, ": the sampler must return int32/int64 ids of shape (", b, ", ", k, ")");
  auto ids = drawn.astype(Dtype::int64).to_vector<int64_t>();
  const auto targets = t.astype(Dtype::int64).to_vector<int64_t>();
  std::vector<double> keep(static_cast<std::size_t>(b), 1.0);
  for (int64_t i = 0; i < b; ++i) {
    const int64_t target = targets[static_cast<std::size_t>(i)];
    RENSA_CHECK(target == -1 || (target >= 0 && target < vocab), IndexError, op, ": target ", target, " at ", i,
                " is out of range [0, ", vocab, ")");
    ids[static_cast<std::size_t>(i * k)] = target;
    if (target == -1) keep[static_cast<std::size_t>(i)] = 0.0;
  }
  const Array id_array = Array::from_vector(ids, {b, k}).to(x.device());
  if (samples != nullptr) *samples = id_array;
  // The positive score enters as -f, the negatives as f: loss = sum softplus(sign * f).
  std::vector<double> sign(static_cast<std::size_t>(k), 1.0);
  sign[0] = -1.0;
  auto constant = [&](const std::vector<double>& v, const Shape& shape) {
    return Variable(Array::from_vector(v, shape).astype(x.dtype()).to(x.device()));
  };
  const Variable f = mul(sampled_scores(id_array, x, W, -1), constant(sign, {1, k}));
  const Variable loss = mul(sum(softplus(f), {1}), constant(keep, {b}));
  return total ? sum(loss) : loss;
}

Variable black_out(const Variable& x, const Array& t, const Variable& W, const Array& samples,
                   std::string_view reduce) {
  constexpr const char* op = "black_out";
  check_embedding_loss(op, x, t, W);
  const bool average = detail::parse_choice(op, "reduce", reduce, {"mean", "no"}) == 0;
  RENSA_CHECK(!samples.is_null() && samples.ndim() == 2 && samples.shape()[0] == x.shape()[0], ShapeError, op,
              ": samples must be (", x.shape()[0], ", S)");
  const int64_t b = x.shape()[0];
  const Variable neg_y = sampled_scores(samples, x, W, std::nullopt);                // (B, S)
  const Variable pos_y = sampled_scores(t.reshape({b, 1}), x, W, std::nullopt);      // (B, 1)
  const Variable logz = logsumexp(concat({pos_y, neg_y}, 1), {1}, true);             // (B, 1)
  const Variable ny = log(rsub(exp(sub(neg_y, logz)), 1.0));
  const Variable loss = neg(add(reshape(sub(pos_y, logz), {b}), sum(ny, {1})));
  return average ? mean(loss) : loss;
}

}  // namespace rensa::functions
