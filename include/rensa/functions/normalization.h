#pragma once
/// \file
/// Normalization functions: batch normalization (batch statistics or fixed ones) and layer
/// normalization. They are composites of differentiable functions, so they are differentiable
/// twice (and more). All inputs must share one floating dtype and device (DtypeError /
/// DeviceError otherwise); ShapeError names the function and every shape; ValueError for eps <= 0.

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
};

/// What batch_normalization gives: the output and the batch statistics it used (shaped as gamma),
/// for a link to update its running averages. `var` is the biased (population) variance of the batch.
struct BatchNormResult {
  Variable y;
  Array mean;
  Array var;
};

/// Training-mode batch normalization: y = gamma (x - mean) / sqrt(var + eps) + beta, with mean and
/// the biased var taken over options.axes of x. gamma or beta null stand for ones or zeros.
/// ShapeError when x has fewer than 2 dimensions or gamma / beta do not have x's shape without the
/// reduced axes; ValueError when the reduced axes hold no element.
BatchNormResult batch_normalization(const Variable& x, const Variable& gamma, const Variable& beta,
                                    const BatchNormOptions& options = {});

/// Batch normalization with given statistics (test mode): y = gamma (x - mean) / sqrt(var + eps) + beta.
/// gamma, beta, mean and var have x's shape without options.axes (gamma or beta null: ones or zeros).
/// Differentiable in every input.
Variable fixed_batch_normalization(const Variable& x, const Variable& gamma, const Variable& beta, const Variable& mean,
                                   const Variable& var, const BatchNormOptions& options = {});

/// Layer normalization over the last axis: y = gamma (x - mean) / sqrt(var + eps) + beta with mean
/// and biased var of each row; gamma and beta have shape (D,) for x (..., D) (null: ones or zeros).
/// ShapeError when x is 0-d or gamma / beta are not (D,).
Variable layer_normalization(const Variable& x, const Variable& gamma, const Variable& beta, double eps = 1e-5);

}  // namespace rensa::functions
