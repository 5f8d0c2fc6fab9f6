// The discriminative (margin-based clustering) loss for instance embeddings, as a composite of
// differentiable functions over per-instance masks.
#include <algorithm>
#include <vector>

#include "rensa/functions/activation.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/loss.h"
#include "rensa/functions/reduction.h"
#include "src/functions/common.h"

namespace rensa::functions {
namespace {

// The L1 or L2 norm over `axes`; the L2 root is taken only of positive sums, so masked-out
// entries (exactly 0) keep a zero gradient instead of 0 * infinity.
Variable norm_over(const Variable& v, const Shape& axes, int norm) {
  if (norm == 1) return sum(abs(v), axes);
  const Variable sq = sum(square(v), axes);
  const Array positive = detail::binary("norm", BinaryOp::gt, sq.array(), detail::scalar_like(0.0, sq.array()), true);
  const Variable one(Array::ones(sq.shape(), sq.dtype(), sq.device()));
  const Variable zero(Array::zeros(sq.shape(), sq.dtype(), sq.device()));
  return where(positive, sqrt(where(positive, sq, one)), zero);
}

}  // namespace

DiscriminativeLoss discriminative_margin_based_clustering_loss(const Variable& embeddings, const Array& labels,
                                                               double delta_v, double delta_d,
                                                               int64_t max_embedding_dim, int norm, double alpha,
                                                               double beta, double gamma) {
  constexpr const char* op = "discriminative_margin_based_clustering_loss";
  detail::check_floating(op, embeddings, "embeddings");
  RENSA_CHECK(max_embedding_dim > 0, ValueError, op, ": max_embedding_dim must be positive, got ", max_embedding_dim);
  RENSA_CHECK(norm == 1 || norm == 2, ValueError, op, ": norm must be 1 or 2, got ", norm);
  RENSA_CHECK(embeddings.ndim() == 4 && embeddings.shape()[1] == max_embedding_dim, ShapeError, op,
              ": embeddings must be (N, ", max_embedding_dim, ", H, W), got ", embeddings.shape());
  const Shape& es = embeddings.shape();
  const int64_t n = es[0], k = es[1], h = es[2], w = es[3];
  RENSA_CHECK(!labels.is_null() && (labels.dtype() == Dtype::int32 || labels.dtype() == Dtype::int64), DtypeError, op,
              ": labels must be int32 or int64");
  RENSA_CHECK((labels.shape() == Shape{n, h, w}), ShapeError, op, ": labels ", labels.shape(), " must be (", n, ", ", h,
              ", ", w, ") for embeddings ", es);
  // Masks (K, N, 1, H, W): pixel of instance c + 1.
  const auto lv = labels.astype(Dtype::int64).to_vector<int64_t>();
  std::vector<double> masks(static_cast<std::size_t>(k * n * h * w), 0.0);
  std::vector<double> pixels(static_cast<std::size_t>(k * n), 0.0), per_instance(static_cast<std::size_t>(k), 0.0);
  for (std::size_t i = 0; i < lv.size(); ++i) {
    const int64_t c = lv[i];
    RENSA_CHECK(c >= 0 && c <= k, ValueError, op, ": label ", c, " is outside [0, ", k, "]");
    if (c == 0) continue;
    const auto img = static_cast<int64_t>(i) / (h * w);
    masks[static_cast<std::size_t>((c - 1) * n * h * w) + i] = 1.0;
    pixels[static_cast<std::size_t>((c - 1) * n + img)] += 1.0;
    per_instance[static_cast<std::size_t>(c - 1)] += 1.0;
  }
  auto constant = [&](const std::vector<double>& v, const Shape& shape) {
    return Variable(Array::from_vector(v, shape).astype(embeddings.dtype()).to(embeddings.device()));
  };
  for (double& p : pixels) p = 1.0 / std::max(p, 1.0);
  for (double& p : per_instance) p = 1.0 / std::max(p, 1.0);
  const Variable ms = constant(masks, {k, n, 1, h, w});
  const Shape full{k, n, k, h, w};
  const Variable emb = broadcast_to(expand_dims(embeddings, 0), full);
  // Instance means (K, N, C).
  const Variable means = mul(sum(mul(emb, broadcast_to(ms, full)), {3, 4}), constant(pixels, {k, n, 1}));
  const double kn = static_cast<double>(k * n);
  const Variable reg = mul(sum(norm_over(means, {1, 2}, norm)), 1.0 / kn);
  // Variance: each instance pixel's distance to its mean.
  const Variable diff = mul(sub(broadcast_to(reshape(means, {k, n, k, 1, 1}), full), emb), broadcast_to(ms, full));
  const Variable pull = square(relu(add(norm_over(diff, {2}, norm), -delta_v)));
  const Variable var = mul(sum(mul(sum(pull, {1, 2, 3}), constant(per_instance, {k}))), 1.0 / static_cast<double>(k));
  // Distance: every pair of instance means, per image.
  Variable dist;
  int64_t pairs = 0;
  for (int64_t a = 0; a < k; ++a) {
    for (int64_t b = a + 1; b < k; ++b) {
      const Variable d = norm_over(sub(get_item(means, {a}), get_item(means, {b})), {1}, norm);
      const Variable push = sum(square(relu(rsub(d, 2.0 * delta_d))));
      dist = dist.is_null() ? push : add(dist, push);
      ++pairs;
    }
  }
  if (dist.is_null()) dist = Variable(Array::zeros({}, embeddings.dtype(), embeddings.device()));
  dist = mul(dist, 1.0 / std::max(static_cast<double>(pairs * n), 1.0));
  return {mul(var, alpha), mul(dist, beta), mul(reg, gamma)};
}

}  // namespace rensa::functions
