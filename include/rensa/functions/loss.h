#pragma once
/// \file
/// Loss functions.

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rensa/core/array.h"
#include "rensa/core/variable.h"

namespace rensa::functions {

/// The options of softmax_cross_entropy, Chainer's arguments in Chainer's order.
struct SoftmaxCrossEntropyOptions {
  /// reduce "mean": true divides the summed loss by the number of labels not ignored, false by the
  /// batch size N (x's first axis). Soft targets always divide by the number of distributions.
  bool normalize = true;
  /// Keep softmax(x) from the forward for the backward (faster); false recomputes it there, saving
  /// x's size in memory between forward and backward.
  bool cache_score = true;
  /// Weights of the classes, (C,) floating (or null): each label's loss is multiplied by
  /// class_weight[t], its gradient alike; the mean's divisor is unchanged (as Chainer, unlike
  /// PyTorch's weighted mean). Not used with soft targets.
  Array class_weight{};
  /// Labels equal to it contribute nothing.
  int64_t ignore_label = -1;
  /// "mean" (a scalar) or "no" (the loss per label, shaped like integer t; per distribution with
  /// soft targets, shaped like x without axis 1).
  std::string reduce = "mean";
  /// For soft targets: "cross-entropy" (-sum t log softmax(x)) or "kl-divergence"
  /// (sum t (log(t + 1e-7) - log softmax(x))).
  std::string soft_target_loss = "cross-entropy";
};

/// Cross entropy of softmax(x) along axis 1. x (N, C) or (N, C, d...). With integer labels, t
/// (N,) or (N, d...) int32/int64 in [0, C) or ignore_label; with soft targets, t floating of x's
/// shape, a distribution over axis 1 for each sample (the gradient is softmax(x) * sum(t) - t,
/// which is Chainer's softmax(x) - t when t sums to 1). reduce "mean" over no label gives 0.
/// Bad labels throw IndexError; bad shapes ShapeError; a bad option ValueError naming it.
Variable softmax_cross_entropy(const Variable& x, const Array& t, const SoftmaxCrossEntropyOptions& options);
/// softmax_cross_entropy with only ignore_label and reduce set.
Variable softmax_cross_entropy(const Variable& x, const Array& t, int64_t ignore_label = -1,
                               std::string_view reduce = "mean");

/// The options of sigmoid_cross_entropy, Chainer's arguments in Chainer's order.
struct SigmoidCrossEntropyOptions {
  /// reduce "mean": true divides by the number of entries not ignored, false by the batch size N
  /// (x's first axis); at least 1 either way.
  bool normalize = true;
  /// "mean" (a scalar) or "no" (x's shape).
  std::string reduce = "mean";
};
/// Binary cross entropy of sigmoid(x) against t in {0, 1} (same shape as x, int32/int64);
/// t == -1 entries are ignored.
Variable sigmoid_cross_entropy(const Variable& x, const Array& t, const SigmoidCrossEntropyOptions& options);
/// sigmoid_cross_entropy with only reduce set (normalize on).
Variable sigmoid_cross_entropy(const Variable& x, const Array& t, std::string_view reduce = "mean");
/// mean((a - b)^2) over all elements; shapes must be equal.
Variable mean_squared_error(const Variable& a, const Variable& b);

// ---- regression and distance losses (shapes must match: ShapeError; dtypes: DtypeError) --------

/// |x0 - x1| elementwise.
Variable absolute_error(const Variable& x0, const Variable& x1);
/// (x0 - x1)^2 elementwise (not halved).
Variable squared_error(const Variable& x0, const Variable& x1);
/// mean(|x0 - x1|) over all elements.
Variable mean_absolute_error(const Variable& x0, const Variable& x1);
/// Huber loss of d = x - t: d^2 / 2 where |d| <= delta, delta (|d| - delta / 2) elsewhere; its
/// gradient is clip(d, -delta, delta). reduce "sum_along_second_axis" (x at least 2-d) or "no"
/// (elementwise). ValueError unless delta > 0 (Chainer does not check).
Variable huber_loss(const Variable& x, const Variable& t, double delta,
                    std::string_view reduce = "sum_along_second_axis");
/// Multi-class hinge loss of x (N, K) against labels t (N,) (int32/int64, 0 <= t < K): for the
/// true class max(0, 1 - x), for the others max(0, 1 + x); norm "L1" or "L2" (squared); reduce
/// "mean" (the sum divided by N) or "no" (N, K). IndexError for a label out of range.
Variable hinge(const Variable& x, const Array& t, std::string_view norm = "L1", std::string_view reduce = "mean");
/// Contrastive loss of pairs x0, x1 (N, K), N > 0, with labels y (N,) in {0, 1} (1: similar):
/// (y d^2 + (1 - y) max(margin - d, 0)^2) / 2 with d = ||x0 - x1||; reduce "mean" (over N) or
/// "no" (N,). ValueError unless margin > 0 or for a label not 0 or 1. For d below 1e-7 the
/// dissimilar term uses d = 1e-7, as Chainer's gradient does, so the gradient stays finite.
Variable contrastive(const Variable& x0, const Variable& x1, const Array& y, double margin = 1.0,
                     std::string_view reduce = "mean");
/// Triplet loss max(||a - p||^2 - ||a - n||^2 + margin, 0), the squared norms summed over axis 1
/// of inputs of one shape (at least 2-d, N > 0); reduce "mean" (Chainer's: the sum of every element
/// divided by N) or "no". ValueError unless margin > 0.
Variable triplet(const Variable& anchor, const Variable& positive, const Variable& negative, double margin = 0.2,
                 std::string_view reduce = "mean");

// ---- likelihood losses of the variational autoencoder (reduce "sum" or "no") ------------------

/// KL divergence of N(mean, exp(ln_var)) from N(0, 1): (mean^2 + exp(ln_var) - ln_var - 1) / 2.
/// This and the two NLLs below take Chainer's reduce: "sum", "mean" (over every element) or "no".
Variable gaussian_kl_divergence(const Variable& mean, const Variable& ln_var, std::string_view reduce = "sum");
/// Negative log-likelihood of x under N(mean, exp(ln_var)):
/// (log(2 pi) + ln_var + (x - mean)^2 exp(-ln_var)) / 2.
Variable gaussian_nll(const Variable& x, const Variable& mean, const Variable& ln_var,
                      std::string_view reduce = "sum");
/// Negative log-likelihood of x in [0, 1] under Bernoulli(sigmoid(y)): softplus(y) - x y.
Variable bernoulli_nll(const Variable& x, const Variable& y, std::string_view reduce = "sum");

// ---- sampled softmax approximations --------------------------------------------------------------

/// Draws integer ids of the given shape (int32/int64 in [0, V)): the negative samples.
using NegativeSampler = std::function<Array(const Shape&)>;
/// Negative sampling (Mikolov et al. 2013; Chainer's negative_sampling): for x (B, D), targets t
/// (B,) and the output embeddings W (V, D), the loss of sample i is
/// -log sigmoid(W[t_i] . x_i) - sum_k log sigmoid(-W[s_ik] . x_i) over sample_size ids drawn by
/// `sampler` (called with (B, sample_size + 1), its first column replaced by t, as Chainer).
/// Targets equal to -1 are ignored (loss 0). reduce "sum" or "no" (B,). When `samples` is
/// non-null it receives the (B, sample_size + 1) ids used (Chainer's return_samples).
/// ShapeError / IndexError / ValueError for inconsistent shapes, ids or arguments.
Variable negative_sampling(const Variable& x, const Array& t, const Variable& W, const NegativeSampler& sampler,
                           int64_t sample_size, std::string_view reduce = "sum", Array* samples = nullptr);
/// BlackOut (Ji et al. 2016; Chainer's black_out): with p = W[t] . x and n_k = W[s_k] . x for
/// the given negative samples (B, S), the loss is -(p - log Z + sum_k log(1 - exp(n_k - log Z)))
/// with Z = exp(p) + sum_k exp(n_k); reduce "mean" (over the batch) or "no" (B,).
Variable black_out(const Variable& x, const Array& t, const Variable& W, const Array& samples,
                   std::string_view reduce = "mean");

// ---- connectionist temporal classification ------------------------------------------------------

/// CTC loss (Graves et al. 2006; Chainer's connectionist_temporal_classification): x[t] (B, V) the
/// unnormalized scores at time t (softmax is applied inside), t (B, L) int32/int64 labels padded
/// to L, `blank_symbol` in [0, V). input_length / label_length (B,) int32/int64 give each
/// sequence's lengths (null: T and L for all). The negative log-likelihood of the labels summed
/// over alignments, computed by the forward algorithm in log space with -1e10 for impossible
/// states (as Chainer; an impossible alignment gives a loss near 1e10, not infinity); reduce
/// "mean" (over the batch) or "no" (B,). ShapeError / IndexError / ValueError for inconsistent
/// shapes, labels or lengths (including a label equal to the blank).
Variable connectionist_temporal_classification(const std::vector<Variable>& x, const Array& t, int64_t blank_symbol,
                                               const Array& input_length = Array(),
                                               const Array& label_length = Array(), std::string_view reduce = "mean");

// ---- linear-chain CRF ---------------------------------------------------------------------------

/// Negative log-likelihood of label sequences under a linear-chain CRF (Chainer's crf1d): cost
/// (K, K) holds the transition scores cost[i, j] from label i to label j; xs[t] (B_t, K) the
/// unary scores and ys[t] (B_t,) (int32/int64) the labels at time t, time-major with
/// B_0 >= B_1 >= ... (sequences sorted by decreasing length, then transposed). loss = log Z -
/// score(ys); reduce "mean" (sum over the B_0 sequences / B_0) or "no" (B_0,). ShapeError for
/// inconsistent shapes, IndexError for a label outside [0, K).
Variable crf1d(const Variable& cost, const std::vector<Variable>& xs, const std::vector<Array>& ys,
               std::string_view reduce = "mean");
/// The best label sequences of crf1d's model (Viterbi): their scores (B_0,) and the path, one
/// int64 array (B_t,) per time step. Errors as crf1d.
std::pair<Variable, std::vector<Array>> argmax_crf1d(const Variable& cost, const std::vector<Variable>& xs);

// ---- instance embedding ------------------------------------------------------------------------

/// The three terms of discriminative_margin_based_clustering_loss, already weighted.
struct DiscriminativeLoss {
  /// The variance term (pulls embeddings toward their cluster's mean); \p distance and \p regularization likewise.
  Variable variance, distance, regularization;
  /// \var distance
  /// The distance term (pushes the cluster means apart).
  /// \var regularization
  /// The regularization term (keeps the cluster means near the origin).
};
/// The discriminative loss of De Brabandere et al. 2017 (Chainer's
/// discriminative_margin_based_clustering_loss) for embeddings (N, C, H, W) of the pixels labelled
/// 1..C in labels (N, H, W) (0: background, ignored): with m_c the mean embedding of instance c in
/// each image, variance = alpha * mean over instances of the mean over their pixels of
/// relu(||m_c - e|| - delta_v)^2, distance = beta * mean over image and instance pairs of
/// relu(2 delta_d - ||m_a - m_b||)^2, regularization = gamma * sum_c ||m_c|| / (C N) (norms over
/// the image and channel axes together, as Chainer). norm 1 or 2 (L1 / L2). C must equal
/// max_embedding_dim. Chainer's code broadcasts the batch against the instances and only runs
/// when N is 1 or C; this computes what it means for every N. ValueError for a bad norm,
/// max_embedding_dim or label; ShapeError for inconsistent shapes.
DiscriminativeLoss discriminative_margin_based_clustering_loss(const Variable& embeddings, const Array& labels,
                                                               double delta_v, double delta_d,
                                                               int64_t max_embedding_dim, int norm = 1,
                                                               double alpha = 1.0, double beta = 1.0,
                                                               double gamma = 0.001);

// ---- covariance penalties ----------------------------------------------------------------------

/// The cross-covariance of y (N, K) and z (N, L) over the batch, (y - mean y)^T (z - mean z) / N;
/// reduce "half_squared_sum" (half its squared Frobenius norm) or "no" (the (K, L) matrix).
Variable cross_covariance(const Variable& y, const Variable& z, std::string_view reduce = "half_squared_sum");
/// DeCov (Cogswell et al. 2016) of h (N, K): the covariance of h's columns with its diagonal
/// zeroed; reduce "half_squared_sum" (half its squared Frobenius norm) or "no" (the (K, K) matrix).
Variable decov(const Variable& h, std::string_view reduce = "half_squared_sum");

}  // namespace rensa::functions
