#pragma once
/// \file
/// The inverses of pooling, with Chainer's semantics: unpooling (each element copied over its
/// window, overlaps summed: the transpose of sum pooling) in 2-d, N-d, 1-d and 3-d, and
/// upsampling_2d (each element put at the position max_pooling_2d_with_indices recorded). All are
/// linear and differentiable to any order (their backwards are poolings and gathers, whose
/// backwards are these).
///
/// Output size: by default Chainer's get_deconv_outsize, stride (in - 1) + ksize - 2 pad, minus
/// stride - 1 with cover_all (the default). A given outsize must give back x's extents under
/// pooling with these parameters.
///
/// Errors: DtypeError when x is not floating (upsampling_2d: also when indexes is not an integer
/// array); ShapeError naming the function and the shapes when x has the wrong rank, the output would
/// be empty, an outsize does not pool back to x's extents, or (upsampling_2d) indexes' shape is not
/// x's; ValueError when ksize or stride is below 1, a pad is negative, or a parameter has neither
/// one value nor one per spatial axis; IndexError when an index is outside [0, KH KW).

#include <optional>

#include "rensa/core/array.h"
#include "rensa/core/variable.h"
#include "rensa/functions/convolution.h"
#include "rensa/functions/convolution_nd.h"

namespace rensa::functions {

/// Unpooling of x (N, C, H, W): y (N, C, OH, OW) with y[n, c, i s - p + ky, j s - p + kx] +=
/// x[n, c, i, j] for every window cell inside y. stride defaults to ksize. Accepts an empty x.
Variable unpooling_2d(const Variable& x, Int2 ksize, std::optional<Int2> stride = std::nullopt, Int2 pad = 0,
                      std::optional<Int2> outsize = std::nullopt, bool cover_all = true);
/// Unpooling over the k spatial axes of x (N, C, D1..Dk), k >= 1.
Variable unpooling_nd(const Variable& x, const IntN& ksize, const std::optional<IntN>& stride = std::nullopt,
                      const IntN& pad = 0, const std::optional<std::vector<int64_t>>& outsize = std::nullopt,
                      bool cover_all = true);
/// unpooling_nd for x (N, C, L).
Variable unpooling_1d(const Variable& x, const IntN& ksize, const std::optional<IntN>& stride = std::nullopt,
                      const IntN& pad = 0, const std::optional<std::vector<int64_t>>& outsize = std::nullopt,
                      bool cover_all = true);
/// unpooling_nd for x (N, C, D, H, W).
Variable unpooling_3d(const Variable& x, const IntN& ksize, const std::optional<IntN>& stride = std::nullopt,
                      const IntN& pad = 0, const std::optional<std::vector<int64_t>>& outsize = std::nullopt,
                      bool cover_all = true);

/// Upsampling with max pooling's indexes: x (N, C, H, W) and `indexes` (integer, x's shape, each a
/// window offset ky KW + kx as max_pooling_2d_with_indices returns) give y (N, C, OH, OW), zero but
/// y[n, c, i s - p + ky, j s - p + kx] += x[n, c, i, j]. An offset that lands in the padding drops
/// its element, as in Chainer. `indexes` is a constant (not differentiated).
Variable upsampling_2d(const Variable& x, const Array& indexes, Int2 ksize, std::optional<Int2> stride = std::nullopt,
                       Int2 pad = 0, std::optional<Int2> outsize = std::nullopt, bool cover_all = true);

}  // namespace rensa::functions
