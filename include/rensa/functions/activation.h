#pragma once
/// \file
/// Activation functions, elementwise unless an axis is named. Floating dtypes only (DtypeError).

#include "rensa/core/variable.h"

namespace rensa::functions {

Variable relu(const Variable& x);
/// x for x > 0, slope * x otherwise; the gradient at x = 0 is slope, as in Chainer.
Variable leaky_relu(const Variable& x, double slope = 0.2);
/// x for x > 0, alpha * (exp(x) - 1) otherwise; the gradient at x = 0 is alpha, as in Chainer.
Variable elu(const Variable& x, double alpha = 1.0);
Variable sigmoid(const Variable& x);
Variable tanh(const Variable& x);
/// log(1 + exp(beta * x)) / beta, computed stably.
Variable softplus(const Variable& x, double beta = 1.0);
/// exp(x) / sum(exp(x)) along `axis`, computed stably.
Variable softmax(const Variable& x, int64_t axis = 1);
/// x - logsumexp(x) along `axis`.
Variable log_softmax(const Variable& x, int64_t axis = 1);

}  // namespace rensa::functions
