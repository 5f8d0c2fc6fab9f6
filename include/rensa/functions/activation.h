#pragma once
/// \file
/// Activation functions, elementwise unless an axis is named. Floating dtypes only (DtypeError).

#include "rensa/core/random.h"
#include "rensa/core/variable.h"

namespace rensa::functions {

/// max(x, 0); the gradient at x = 0 is 0.
Variable relu(const Variable& x);
/// x for x > 0, slope * x otherwise; the gradient at x = 0 is slope, as in Chainer.
Variable leaky_relu(const Variable& x, double slope = 0.2);
/// x for x > 0, alpha * (exp(x) - 1) otherwise; the gradient at x = 0 is alpha, as in Chainer.
Variable elu(const Variable& x, double alpha = 1.0);
/// 1 / (1 + exp(-x)).
Variable sigmoid(const Variable& x);
/// Hyperbolic tangent.
Variable tanh(const Variable& x);
/// log(1 + exp(beta * x)) / beta, computed stably.
Variable softplus(const Variable& x, double beta = 1.0);
/// min(max(0, x), z); the gradient is 1 for 0 < x < z, else 0. ValueError unless z > 0.
Variable clipped_relu(const Variable& x, double z = 20.0);
/// clipped_relu(x, 6).
Variable relu6(const Variable& x);
/// concat(relu(x), relu(-x)) along `axis` (IndexError for a bad axis).
Variable crelu(const Variable& x, int64_t axis = 1);
/// clip(0.2 x + 0.5, 0, 1); the gradient is 0.2 for -2.5 < x < 2.5, else 0.
Variable hard_sigmoid(const Variable& x);
/// Splits `axis` into (size / pool_size, pool_size) and takes the max over each group of
/// pool_size. ValueError unless pool_size > 0; ShapeError unless it divides the axis' size;
/// IndexError for a bad axis.
Variable maxout(const Variable& x, int64_t pool_size, int64_t axis = 1);
/// x for x >= 0, W * x otherwise, W's axes matching x's axes 1 .. W.ndim (broadcast over the
/// rest). DtypeError unless W has x's dtype; ShapeError unless x.ndim > W.ndim and
/// x.shape[1 : 1 + W.ndim] == W.shape.
Variable prelu(const Variable& x, const Variable& W);
/// Randomized leaky ReLU: x for x >= 0, r * x otherwise. In training mode r ~ U(l, u) per element
/// (drawn from `gen`, or the thread's default generator), or `*r` when r points to a non-null
/// array (Chainer's r=; DtypeError/ShapeError unless it matches x); when r points to a null array
/// it receives the r used (Chainer's return_r). In test mode r = (l + u) / 2. ValueError unless
/// 0 <= l < u < 1.
Variable rrelu(const Variable& x, double l = 1.0 / 8, double u = 1.0 / 3, Array* r = nullptr,
               Generator* gen = nullptr);
/// scale * elu(x, alpha), with the self-normalizing constants by default.
Variable selu(const Variable& x, double alpha = 1.6732632423543772848170429916717,
              double scale = 1.0507009873554804934193349852946);
/// x * sigmoid(beta * x), beta's axes matching x's axes 1 .. beta.ndim (errors as prelu).
Variable swish(const Variable& x, const Variable& beta);
/// exp(x) / sum(exp(x)) along `axis`, computed stably.
Variable softmax(const Variable& x, int64_t axis = 1);
/// x - logsumexp(x) along `axis`.
Variable log_softmax(const Variable& x, int64_t axis = 1);

}  // namespace rensa::functions
