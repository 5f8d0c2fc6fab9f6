#pragma once
/// \file
/// Region-of-interest pooling with Chainer's semantics: roi_pooling_2d (Fast R-CNN's, ROIs with
/// their batch index in column 0), roi_max_pooling_2d and roi_average_pooling_2d (integer bins),
/// roi_max_align_2d and roi_average_align_2d (bilinear samples, Mask R-CNN's RoIAlign). Each output
/// element is a weighted sum of gathered elements of x (the maximum's position, a bin's elements,
/// or a sample's four neighbours), so the functions are differentiable in x to any order; the
/// ROIs are constants. The bins and, for the max functions, the maxima (the first one on ties)
/// are found on the host from the inputs' values, then gathered on x's device.
///
/// x is (N, C, H, W) and floating; y is (R, C, OH, OW). rois is a floating (R, 4) array of
/// (y_min, x_min, y_max, x_max) in the coordinates of the image that `spatial_scale` maps onto x,
/// roi_indices an integer (R,) array of batch indices. Unlike Chainer, every floating dtype is
/// accepted (Chainer takes float32 only for the align functions and rois of x's dtype).
///
/// Errors: DtypeError when x or rois is not floating or roi_indices is not integer; ShapeError
/// naming the shapes when x is not 4-d, rois is not (R, 4) (roi_pooling_2d: (R, 5)), or
/// roi_indices is not (R,); ValueError when an output extent or a sampling ratio is below 1 or
/// spatial_scale is not positive; IndexError when a batch index is outside [0, N).

#include <cstdint>
#include <optional>

#include "rensa/core/array.h"
#include "rensa/core/variable.h"
#include "rensa/functions/convolution.h"

namespace rensa::functions {

/// Sampling points per bin along (y, x) for the align functions; an absent one is
/// ceil(roi extent / output extent), Chainer's default (None).
struct SamplingRatio {
  /// Sampling points per bin along y; \p x along x.
  std::optional<int64_t> y, x;
  SamplingRatio() = default;
  /// `v` points along both axes.
  SamplingRatio(int64_t v) : y(v), x(v) {}  // NOLINT(google-explicit-constructor)
  /// `y_` points along y and `x_` along x (nullopt: the default).
  SamplingRatio(std::optional<int64_t> y_, std::optional<int64_t> x_) : y(y_), x(x_) {}
  /// \var x
  /// Sampling points per bin along x.
};

/// Fast R-CNN's ROI pooling: rois (R, 5) rows (batch index, x_min, y_min, x_max, y_max); the ROI's
/// corners are rounded (half to even, as Chainer's CPU code) after scaling, its extent is
/// max(max - min + 1, 1), each of the outh x outw bins covers [floor(i h / OH), ceil((i + 1) h / OH))
/// shifted by the corner and clipped to x, and gets its maximum (0 for an empty bin).
Variable roi_pooling_2d(const Variable& x, const Array& rois, int64_t outh, int64_t outw, double spatial_scale);

/// Max over integer bins as roi_pooling_2d, but rois (R, 4) (y_min, x_min, y_max, x_max) with the
/// batch indices apart, ROI extents max(max - min, 1), and -inf for an empty bin.
Variable roi_max_pooling_2d(const Variable& x, const Array& rois, const Array& roi_indices, Int2 outsize,
                            double spatial_scale);

/// Mean over the bins of roi_max_pooling_2d (0 for an empty bin).
Variable roi_average_pooling_2d(const Variable& x, const Array& rois, const Array& roi_indices, Int2 outsize,
                                double spatial_scale);

/// RoIAlign with max: each bin's maximum over its sampling grid of bilinearly interpolated values
/// (samples beyond the border by more than one pixel skipped; -inf when all are).
Variable roi_max_align_2d(const Variable& x, const Array& rois, const Array& roi_indices, Int2 outsize,
                          double spatial_scale, SamplingRatio sampling_ratio = {});

/// RoIAlign with mean: each bin's sum of interpolated samples divided by the grid's size (skipped
/// samples count as zeros, as Chainer).
Variable roi_average_align_2d(const Variable& x, const Array& rois, const Array& roi_indices, Int2 outsize,
                              double spatial_scale, SamplingRatio sampling_ratio = {});

}  // namespace rensa::functions
