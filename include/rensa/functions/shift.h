#pragma once
/// \file
/// Chainer's shift: a zero-parameter spatial shift of channel groups (Wu et al., "Shift: A Zero
/// FLOP, Zero Parameter Alternative to Spatial Convolutions").

#include "rensa/core/variable.h"
#include "rensa/functions/convolution.h"

namespace rensa::functions {

/// The channels of x (N, C, H, W) are split into KH KW groups of C / (KH KW) (the last group also
/// takes the remainder); group g moves its planes by ((g / KW) - KH / 2, (g % KW) - KW / 2) times
/// `dilate` pixels, zeros filling in, where Chainer swaps the center group and the last one so
/// that the remainder stays in place. Made of pad, slices and concat: differentiable to any order.
/// ValueError when a ksize is even or a dilate is 0; ShapeError when x is not 4-d or has fewer
/// than KH KW channels; DtypeError when x is not floating.
Variable shift(const Variable& x, Int2 ksize = 3, Int2 dilate = 1);

}  // namespace rensa::functions
