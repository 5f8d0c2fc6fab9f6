#pragma once
/// \file
/// Stochastic regularization.

#include "rensa/core/random.h"
#include "rensa/core/variable.h"

namespace rensa::functions {

/// In training mode (Config::train) zeroes each element with probability `ratio` and scales the
/// rest by 1 / (1 - ratio); identity in test mode. ValueError unless 0 <= ratio < 1. Draws from
/// `gen`, or the thread's default generator.
Variable dropout(const Variable& x, double ratio = 0.5, Generator* gen = nullptr);

/// mean + exp(ln_var / 2) * eps with eps ~ N(0, 1) (the reparameterization trick), in training
/// and test mode alike, as Chainer. When `eps` points to a non-null array it is used (Chainer's
/// eps=; DtypeError/ShapeError unless it matches); when it points to a null array it receives the
/// eps drawn (return_eps). ShapeError/DtypeError unless mean and ln_var match.
Variable gaussian(const Variable& mean, const Variable& ln_var, Array* eps = nullptr, Generator* gen = nullptr);
/// softmax((log_pi + g) / tau) along `axis` with Gumbel noise g = -log(-log(u)), u ~ U(0, 1): a
/// differentiable sample from the categorical distribution. A 0-d log_pi gives 1. ValueError
/// unless tau > 0 (Chainer also takes tau as a Variable; here it is a number).
Variable gumbel_softmax(const Variable& log_pi, double tau = 0.1, int64_t axis = 1, Generator* gen = nullptr);
/// In training mode each element comes from h with probability `ratio` and from x otherwise
/// (zoneout of recurrent states); in test mode x. ShapeError/DtypeError unless h and x match;
/// ValueError unless 0 <= ratio <= 1.
Variable zoneout(const Variable& h, const Variable& x, double ratio = 0.5, Generator* gen = nullptr);
/// linear(x, W * mask / (1 - ratio), b): DropConnect with each weight kept with probability
/// 1 - ratio; a mask per sample (N, out, in) when `use_batchwise_mask`, else one (out, in). In
/// test mode ratio is 0. `mask` (bool or W's dtype, of the mask's shape) replaces the draw. x is
/// (N, ...) taken as (N, in); W (out, in); b (out,) or null. ValueError unless 0 <= ratio < 1.
Variable simplified_dropconnect(const Variable& x, const Variable& W, const Variable& b = Variable(),
                                double ratio = 0.5, const Array& mask = Array(), bool use_batchwise_mask = true,
                                Generator* gen = nullptr);

}  // namespace rensa::functions
