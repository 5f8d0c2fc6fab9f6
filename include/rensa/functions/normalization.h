#pragma once
/// \file
/// Normalization functions: batch normalization (batch statistics or fixed ones), decorrelated
/// batch normalization, layer normalization and local response normalization. Most are composites
/// of differentiable functions, so they are differentiable twice (and more); the exceptions say
/// so. All inputs must share one floating dtype and device (DtypeError / DeviceError otherwise);
/// ShapeError names the function and every shape; ValueError for eps <= 0.

#include <cstdint>
#include <functional>
#include <optional>

#include "rensa/core/array.h"
#include "rensa/core/variable.h"

namespace rensa::functions {

/// Options of batch_normalization and fixed_batch_normalization.
struct BatchNormOptions {
  /// Added to the variance before the square root.
  double eps = 2e-5;
  /// The axes the statistics are taken over; empty means every axis but axis 1 (the channels of
  /// (N, C) or (N, C, H, W)). gamma, beta, mean and var have x's shape without these axes.
  Shape axes = {};
  /// batch_normalization only: null takes the statistics over this x alone. Otherwise the statistics
  /// are over the batches of every worker (synchronized / multi-node batch normalization, exact for
  /// unequal batches): the function passes its per-channel partial sums, a 1-d Variable of the
  /// statistics dtype (x's; float32 for float16 / bfloat16 x), to this callable, which must return
  /// their elementwise sum over the workers, same shape and dtype, differentiably (its backward sums
  /// the gradients over the workers). It is called twice per call, in the same order on every
  /// worker: on the sums of x with the element count appended, then on the sums of squared
  /// deviations from the global mean. rensa::mn installs one that allreduces over a communicator.
  std::function<Variable(const Variable&)> allreduce_sum = nullptr;
  /// batch_normalization only: ghost batch normalization (Hoffer et al. 2017). The statistics are
  /// taken over each run of this many consecutive examples along axis 0 separately, as K = N / G
  /// workers with G examples each would take them. nullopt: over the whole batch. ValueError unless
  /// positive, when allreduce_sum is set too, or when options.axes leaves out axis 0; ShapeError
  /// unless it divides x's axis 0.
  std::optional<int64_t> ghost_batch_size = std::nullopt;
};

/// What batch_normalization gives: the output and the batch statistics it used (shaped as gamma),
/// for a link to update its running averages. `var` is the biased (population) variance of the batch;
/// `count` the number of elements each statistic is taken over (over every worker with
/// allreduce_sum), for the unbiased variance var * count / (count - 1). With ghost_batch_size, `mean`
/// and `var` have a leading axis of the K sub-batches, (K, ...gamma's shape), and `count` is per
/// sub-batch.
struct BatchNormResult {
  /// The normalized output.
  Variable y;
  /// The batch mean, shaped as gamma ((K, ...) with ghost_batch_size).
  Array mean;
  /// The batch's biased variance, shaped as mean.
  Array var;
  /// Elements each statistic is taken over (per sub-batch with ghost_batch_size).
  int64_t count = 0;
};

/// Training-mode batch normalization: y = gamma (x - mean) / sqrt(var + eps) + beta, with mean and
/// the biased var taken over options.axes of x. gamma or beta null stand for ones or zeros.
/// Over the usual axes (every axis but 1) it runs on fused kernels (statistics summed in double,
/// only x and the statistics kept for backward; double backprop through the composite form); there
/// a float16 / bfloat16 x may come with float32 gamma and beta (mixed precision: y in x's dtype,
/// their gradients float32), and the statistics of a 16-bit x are float32. DtypeError for other
/// mixes of dtypes.
/// ShapeError when x has fewer than 2 dimensions or gamma / beta do not have x's shape without the
/// reduced axes; ValueError when the reduced axes hold no element (with allreduce_sum: on no
/// worker; a worker's x may be empty), or when allreduce_sum returns a different shape or dtype.
BatchNormResult batch_normalization(const Variable& x, const Variable& gamma, const Variable& beta,
                                    const BatchNormOptions& options = {});

/// Batch normalization with given statistics (test mode): y = gamma (x - mean) / sqrt(var + eps) + beta.
/// gamma, beta, mean and var have x's shape without options.axes (gamma or beta null: ones or zeros).
/// Differentiable in every input.
Variable fixed_batch_normalization(const Variable& x, const Variable& gamma, const Variable& beta, const Variable& mean,
                                   const Variable& var, const BatchNormOptions& options = {});

/// Batch renormalization (Ioffe 2017), training mode: with the batch's mean and biased var as in
/// batch_normalization and sigma = sqrt(running_var + eps),
/// y = gamma ((x - mean) / sqrt(var + eps) * r + d) + beta, where r = clip(sqrt(var + eps) / sigma,
/// 1 / rmax, rmax) and d = clip((mean - running_mean) / sigma, -dmax, dmax) are constants (no
/// gradient flows through them). Statistics over options.axes as batch_normalization; gamma and
/// beta required. running_mean / running_var: null pointers stand for zeros / ones; pointers to
/// null arrays are set to those. With update_statistics they are updated in place after use:
/// decay * old + (1 - decay) * batch value (the variance unbiased by m / (m - 1)). ValueError
/// unless rmax >= 1, dmax >= 0 and 0 <= decay <= 1; errors otherwise as batch_normalization.
Variable batch_renormalization(const Variable& x, const Variable& gamma, const Variable& beta, double rmax, double dmax,
                               Array* running_mean = nullptr, Array* running_var = nullptr, double decay = 0.9,
                               bool update_statistics = false, const BatchNormOptions& options = {});
/// Batch renormalization in test mode: fixed_batch_normalization with the running statistics.
Variable fixed_batch_renormalization(const Variable& x, const Variable& gamma, const Variable& beta,
                                     const Variable& mean, const Variable& var, const BatchNormOptions& options = {});

/// Group normalization (Wu & He 2018): x (N, C, ...) normalized over each of `groups` groups of
/// C / groups channels and all other axes, then gamma * xhat + beta per channel (gamma, beta (C,)).
/// ValueError unless groups > 0 and eps > 0; ShapeError unless x has at least 2 axes, groups
/// divides C and gamma / beta are (C,).
Variable group_normalization(const Variable& x, int64_t groups, const Variable& gamma, const Variable& beta,
                             double eps = 1e-5);

/// Decorrelated batch normalization (Huang et al. 2018; Chainer's
/// decorrelated_batch_normalization), training mode: ZCA whitening of x (N, C, ...) with the batch
/// statistics of each of `groups` groups of C / groups channels. With xc (groups, C / groups, m) the
/// channels of a group centred over the m = N * (spatial size) positions, Sigma = xc xc^T / m +
/// eps I = V diag(w) V^T and W = V diag(w^-1/2) V^T, y = W xc, back in x's layout: each group of
/// y has zero mean and identity covariance (up to eps). float16 / bfloat16 x is computed in float32.
///
/// running_mean (groups, C / groups) and running_projection (groups, C / groups, C / groups), when
/// given, are updated in place after use, in their own dtype: decay * old + (1 - decay) * batch
/// value, the batch's mean and, for the projection, m / max(m - 1, 1) times W (as Chainer). Pointers
/// to null arrays are first set to zeros and the identity.
///
/// Differentiable once in x (the gradient through the eigendecomposition, exact also for repeated
/// eigenvalues); differentiating its backward (double backprop) throws NotImplementedError, as in
/// Chainer. ValueError unless groups > 0, eps > 0 and 0 <= decay <= 1, when x holds no position (m
/// = 0), or when the eigendecomposition fails (non-finite x); ShapeError when x has fewer than 2
/// axes, groups does not divide C, or a running statistic has the wrong shape; DtypeError for a
/// non-floating x.
Variable decorrelated_batch_normalization(const Variable& x, int64_t groups = 16, double eps = 2e-5,
                                          Array* running_mean = nullptr, Array* running_projection = nullptr,
                                          double decay = 0.9);

/// Decorrelated batch normalization with given statistics (test mode; Chainer's
/// fixed_decorrelated_batch_normalization): y = projection[g] (x_g - mean[g]) for each group g of
/// C / groups channels of x (N, C, ...), with mean (groups, C / groups) and projection (groups,
/// C / groups, C / groups). Composed of differentiable functions, so differentiable in every input
/// and to any order (Chainer's gradients of mean and projection are wrong; x's agrees). ValueError
/// unless groups > 0; ShapeError when x has fewer than 2 axes, groups does not divide C, or mean /
/// projection have other shapes; DtypeError / DeviceError when the inputs' dtypes or devices differ.
Variable fixed_decorrelated_batch_normalization(const Variable& x, const Variable& mean, const Variable& projection,
                                                int64_t groups = 16);

/// L2 normalization along `axes` (Chainer's normalize; axis 1 by default): x / (||x|| + eps). The
/// gradient of an all-zero slice is gy / eps, as Chainer (finite to every order). ValueError
/// unless eps > 0; IndexError for a bad axis.
Variable normalize(const Variable& x, double eps = 1e-5, const Shape& axes = {1});

/// Layer normalization over the last axis: y = gamma (x - mean) / sqrt(var + eps) + beta with mean
/// and biased var of each row; gamma and beta have shape (D,) for x (..., D) (null: ones or zeros).
/// ShapeError when x is 0-d or gamma / beta are not (D,).
Variable layer_normalization(const Variable& x, const Variable& gamma, const Variable& beta, double eps = 1e-5);

/// Local response normalization across channels (Chainer's local_response_normalization, as in
/// AlexNet): for x (N, C, ...), y[:, c] = x[:, c] / (k + alpha * s[:, c]) ** beta with
/// s[:, c] = sum of x[:, c'] ** 2 over the channels c' from c - n / 2 to c + n / 2 (integer
/// division; clipped at the edges), i.e. a window of n channels for odd n and n + 1 for even n, as
/// Chainer's cpu code. y has x's shape. ValueError when n < 1, k <= 0, alpha < 0 or beta < 0 (or
/// one of them is not finite): with k > 0 and alpha >= 0 the base of the power is at least k, so y
/// and its gradients are defined everywhere. ShapeError when x has fewer than 2 dimensions;
/// DtypeError when x is not floating.
Variable local_response_normalization(const Variable& x, int64_t n = 5, double k = 2.0, double alpha = 1e-4,
                                      double beta = 0.75);

}  // namespace rensa::functions
