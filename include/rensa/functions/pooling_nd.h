#pragma once
/// \file
/// N-dimensional max and average pooling over (N, C, D1, ..., Dk) arrays, k >= 1, with Chainer's
/// semantics (max_pooling_nd, average_pooling_nd and their 1d/3d wrappers). A box window's max or
/// mean is one of a window per axis in turn, so they run as 2-d poolings (the last two axes, then
/// each earlier axis as a window of one column): on the backend's pooling kernels, differentiable
/// to any order. Max pooling reduces the last axes first, so on ties the gradient goes to the first
/// maximum in row-major order, as in Chainer.
///
/// Errors: DtypeError when x is not floating; ShapeError naming the function and x's shape when x
/// has fewer than 3 axes (the 1d/3d wrappers: not 3 / 5), is empty (as Chainer, for both), or a
/// window is larger than the padded input; ValueError when ksize, stride or pad has neither one
/// value nor one per spatial axis, ksize or stride is below 1, a pad is negative or not below its
/// ksize (Chainer would pool padding only there), or, with cover_all, a last window would hold
/// padding only; ValueError for a pad_value other than 0 or none.

#include <optional>
#include <utility>

#include "rensa/core/array.h"
#include "rensa/core/variable.h"
#include "rensa/functions/convolution_nd.h"

namespace rensa::functions {

/// y[n, c, o1..ok] = max of x[n, c] over the window of `ksize` at (oi stride_i - pad_i); stride
/// defaults to ksize; padding never wins. With cover_all (Chainer's default) windows run on past the
/// end until every element is covered. k = 2 is max_pooling_2d.
Variable max_pooling_nd(const Variable& x, const IntN& ksize, const std::optional<IntN>& stride = std::nullopt,
                        const IntN& pad = 0, bool cover_all = true);
/// max_pooling_nd for x (N, C, L).
Variable max_pooling_1d(const Variable& x, const IntN& ksize, const std::optional<IntN>& stride = std::nullopt,
                        const IntN& pad = 0, bool cover_all = true);
/// max_pooling_nd for x (N, C, D, H, W).
Variable max_pooling_3d(const Variable& x, const IntN& ksize, const std::optional<IntN>& stride = std::nullopt,
                        const IntN& pad = 0, bool cover_all = true);

/// max_pooling_nd that also returns, as Chainer's return_indices, each maximum's offset within its
/// window: an int32 array of y's shape holding the row-major index over the window (k1..kk) of
/// the first maximum. The offsets are found on the host from x's values. (Chainer's are int64 on
/// the cpu and int32 on the gpu.)
std::pair<Variable, Array> max_pooling_nd_with_indices(const Variable& x, const IntN& ksize,
                                                       const std::optional<IntN>& stride = std::nullopt,
                                                       const IntN& pad = 0, bool cover_all = true);
/// max_pooling_nd_with_indices for x (N, C, L).
std::pair<Variable, Array> max_pooling_1d_with_indices(const Variable& x, const IntN& ksize,
                                                       const std::optional<IntN>& stride = std::nullopt,
                                                       const IntN& pad = 0, bool cover_all = true);
/// max_pooling_nd_with_indices for x (N, C, D, H, W).
std::pair<Variable, Array> max_pooling_3d_with_indices(const Variable& x, const IntN& ksize,
                                                       const std::optional<IntN>& stride = std::nullopt,
                                                       const IntN& pad = 0, bool cover_all = true);

/// Mean of x over each window. pad_value 0 (the default) counts padding as zeros (the sum divided
/// by the window's size, so averages near the border lean toward 0); std::nullopt (Chainer's None)
/// leaves padding out (the sum divided by the count of x's elements in the window).
Variable average_pooling_nd(const Variable& x, const IntN& ksize, const std::optional<IntN>& stride = std::nullopt,
                            const IntN& pad = 0, std::optional<double> pad_value = 0.0);
/// average_pooling_nd for x (N, C, L).
Variable average_pooling_1d(const Variable& x, const IntN& ksize, const std::optional<IntN>& stride = std::nullopt,
                            const IntN& pad = 0, std::optional<double> pad_value = 0.0);
/// average_pooling_nd for x (N, C, D, H, W).
Variable average_pooling_3d(const Variable& x, const IntN& ksize, const std::optional<IntN>& stride = std::nullopt,
                            const IntN& pad = 0, std::optional<double> pad_value = 0.0);

}  // namespace rensa::functions
