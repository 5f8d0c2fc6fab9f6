#pragma once
/// \file
/// Loss functions.

#include <string_view>

#include "rensa/core/array.h"
#include "rensa/core/variable.h"

namespace rensa::functions {

/// Cross entropy of softmax(x) along axis 1 against integer labels t. x (N, C) or (N, C, d...),
/// t (N,) or (N, d...) int32/int64. Labels equal to `ignore_label` contribute nothing. reduce
/// "mean" averages over the non-ignored labels (0 when all are ignored); "no" returns the per-label
/// loss shaped like t. Bad labels throw IndexError; a bad reduce throws ValueError.
Variable softmax_cross_entropy(const Variable& x, const Array& t, int64_t ignore_label = -1,
                               std::string_view reduce = "mean");
/// Binary cross entropy of sigmoid(x) against t in {0, 1} (same shape as x, int32/int64);
/// t == -1 entries are ignored. reduce "mean" averages over the non-ignored entries; "no" keeps
/// the shape.
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
/// of inputs of one shape (at least 2-d, N > 0); reduce "mean" or "no". ValueError unless margin > 0.
Variable triplet(const Variable& anchor, const Variable& positive, const Variable& negative, double margin = 0.2,
                 std::string_view reduce = "mean");

// ---- likelihood losses of the variational autoencoder (reduce "sum" or "no") ------------------

/// KL divergence of N(mean, exp(ln_var)) from N(0, 1): (mean^2 + exp(ln_var) - ln_var - 1) / 2.
Variable gaussian_kl_divergence(const Variable& mean, const Variable& ln_var, std::string_view reduce = "sum");
/// Negative log-likelihood of x under N(mean, exp(ln_var)):
/// (log(2 pi) + ln_var + (x - mean)^2 exp(-ln_var)) / 2.
Variable gaussian_nll(const Variable& x, const Variable& mean, const Variable& ln_var,
                      std::string_view reduce = "sum");
/// Negative log-likelihood of x in [0, 1] under Bernoulli(sigmoid(y)): softplus(y) - x y.
Variable bernoulli_nll(const Variable& x, const Variable& y, std::string_view reduce = "sum");

// ---- covariance penalties ----------------------------------------------------------------------

/// The cross-covariance of y (N, K) and z (N, L) over the batch, (y - mean y)^T (z - mean z) / N;
/// reduce "half_squared_sum" (half its squared Frobenius norm) or "no" (the (K, L) matrix).
Variable cross_covariance(const Variable& y, const Variable& z, std::string_view reduce = "half_squared_sum");
/// DeCov (Cogswell et al. 2016) of h (N, K): the covariance of h's columns with its diagonal
/// zeroed; reduce "half_squared_sum" (half its squared Frobenius norm) or "no" (the (K, K) matrix).
Variable decov(const Variable& h, std::string_view reduce = "half_squared_sum");

}  // namespace rensa::functions
