// ROI pooling as gathers (see roi_pooling.h). Every output element is fill + sum over k of
// weight_k x[b, c].flat[position_k]: the bins (and the maxima) are worked out on the host, then
// one gather of x, viewed as C planes of N H x W images stacked, a product with the weights and a
// sum. The gather is max pooling's (its backward a scatter, whose backward is the gather), so
// gradients of every order flow to x.
#include "rensa/functions/roi_pooling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/reduction.h"
#include "src/functions/common.h"
#include "src/functions/pooling_internal.h"

namespace rensa::functions {
namespace {

// One term w x[b, c].flat[pos] (pos within the image, h W + w).
struct Tap {
  int64_t pos;
  double w;
};
// A candidate of a max bin (one element, or one sample's neighbours), or all of an average bin.
using Group = std::vector<Tap>;

// The groups of every (r, i, j), channel-independent.
struct Bins {
  int64_t R = 0, OH = 0, OW = 0;
  std::vector<int64_t> batch;              // (R,)
  std::vector<std::vector<Group>> groups;  // (R OH OW) lists
};

// Checked inputs of the ROI functions with separate batch indices.
struct Rois {
  std::vector<double> box;  // (R, cols) row-major
  std::vector<int64_t> batch;
  int64_t R = 0;
};

void check_x(const char* op, const Variable& x) {
  detail::check_floating(op, x);
  RENSA_CHECK(x.ndim() == 4, ShapeError, op, ": x ", x.shape(), " must have 4 axes (N, C, H, W)");
  RENSA_CHECK(x.shape()[0] * x.shape()[2] * x.shape()[3] <= std::numeric_limits<int32_t>::max(), ShapeError, op, ": x ",
              x.shape(), " has more than 2^31 - 1 elements per channel");
}

void check_batch(const char* op, const Variable& x, const std::vector<int64_t>& batch) {
  for (std::size_t r = 0; r < batch.size(); ++r) {
    RENSA_CHECK(batch[r] >= 0 && batch[r] < x.shape()[0], IndexError, op, ": ROI ", r, " has batch index ", batch[r],
                ", outside [0, ", x.shape()[0], ") of x ", x.shape());
  }
}

Rois read_rois(const char* op, const Variable& x, const Array& rois, const Array& roi_indices) {
  check_x(op, x);
  RENSA_CHECK(!rois.is_null() && is_floating(rois.dtype()), DtypeError, op, ": rois must be floating, got ",
              rois.is_null() ? std::string_view("none") : dtype_name(rois.dtype()));
  RENSA_CHECK(!roi_indices.is_null() && is_integral(roi_indices.dtype()) && roi_indices.dtype() != Dtype::bool_,
              DtypeError, op, ": roi_indices must be an integer array, got ",
              roi_indices.is_null() ? std::string_view("none") : dtype_name(roi_indices.dtype()));
  RENSA_CHECK(rois.ndim() == 2 && rois.shape()[1] == 4, ShapeError, op, ": rois ", rois.shape(),
              " must be (R, 4) rows of (y_min, x_min, y_max, x_max) (x ", x.shape(), ")");
  RENSA_CHECK(roi_indices.ndim() == 1 && roi_indices.shape()[0] == rois.shape()[0], ShapeError, op, ": roi_indices ",
              roi_indices.shape(), " must have one batch index per ROI of rois ", rois.shape());
  Rois out{rois.to(Device::cpu()).to_vector<double>(), roi_indices.to(Device::cpu()).to_vector<int64_t>(),
           rois.shape()[0]};
  check_batch(op, x, out.batch);
  return out;
}

void check_params(const char* op, const Variable& x, int64_t oh, int64_t ow, double spatial_scale) {
  RENSA_CHECK(oh >= 1 && ow >= 1, ValueError, op, ": the output extent (", oh, ", ", ow, ") must be positive (x ",
              x.shape(), ")");
  RENSA_CHECK(spatial_scale > 0 && std::isfinite(spatial_scale), ValueError, op, ": spatial_scale ", spatial_scale,
              " must be positive (x ", x.shape(), ")");
}

// Chainer's _roi_pooling_slice: [floor(i stride), ceil((i + 1) stride)) shifted and clipped.
void bin_range(int64_t i, double stride, int64_t size, int64_t offset, int64_t& lo, int64_t& hi) {
  lo = std::clamp<int64_t>(static_cast<int64_t>(std::floor(static_cast<double>(i) * stride)) + offset, 0, size);
  hi = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(static_cast<double>(i + 1) * stride)) + offset, 0, size);
}

// Integer bins of every ROI; corners (y0, x0, y1, x1) already scaled and rounded. `plus_one`: the
// extent is max - min + 1 (roi_pooling_2d) instead of max - min. `average`: one group per bin of
// every element, weighted 1/count; otherwise one group per element.
Bins integer_bins(const Variable& x, const std::vector<int64_t>& batch, const std::vector<int64_t>& corners, int64_t OH,
                  int64_t OW, bool plus_one, bool average) {
  const int64_t H = x.shape()[2], W = x.shape()[3], R = static_cast<int64_t>(batch.size());
  Bins b{R, OH, OW, batch, std::vector<std::vector<Group>>(static_cast<std::size_t>(R * OH * OW))};
  for (int64_t r = 0; r < R; ++r) {
    const int64_t* c = &corners[static_cast<std::size_t>(4 * r)];
    const int64_t extra = plus_one ? 1 : 0;
    const double sh = static_cast<double>(std::max<int64_t>(c[2] - c[0] + extra, 1)) / static_cast<double>(OH);
    const double sw = static_cast<double>(std::max<int64_t>(c[3] - c[1] + extra, 1)) / static_cast<double>(OW);
    for (int64_t i = 0; i < OH; ++i) {
      int64_t h0, h1;
      bin_range(i, sh, H, c[0], h0, h1);
      for (int64_t j = 0; j < OW; ++j) {
        int64_t w0, w1;
        bin_range(j, sw, W, c[1], w0, w1);
        auto& groups = b.groups[static_cast<std::size_t>((r * OH + i) * OW + j)];
        if (h1 <= h0 || w1 <= w0) continue;
        const double inv = 1.0 / static_cast<double>((h1 - h0) * (w1 - w0));
        if (average) groups.emplace_back();
        for (int64_t h = h0; h < h1; ++h) {
          for (int64_t w = w0; w < w1; ++w) {
            if (average) {
              groups.back().push_back({h * W + w, inv});
            } else {
              groups.push_back({{h * W + w, 1.0}});
            }
          }
        }
      }
    }
  }
  return b;
}

// Chainer's _get_bounds: whether sample coordinate p is usable, clamping it and its neighbours.
bool bounds(double& p, int64_t limit, int64_t& lo, int64_t& hi) {
  if (p < -1.0 || p > static_cast<double>(limit)) return false;
  lo = static_cast<int64_t>(std::floor(p));
  if (lo == limit) lo -= 1;
  hi = lo + 1;
  if (lo <= -1) {
    p = 0.0;
  } else if (hi >= limit) {
    p = static_cast<double>(limit - 1);
  }
  return true;
}

// Bilinear samples of every ROI: a group per usable sample (its neighbours inside x with positive
// weights); `average`: one group of all samples' taps divided by the grid's size.
Bins align_bins(const Variable& x, const Rois& rois, int64_t OH, int64_t OW, double scale, SamplingRatio ratio,
                bool average) {
  const int64_t H = x.shape()[2], W = x.shape()[3], R = rois.R;
  Bins b{R, OH, OW, rois.batch, std::vector<std::vector<Group>>(static_cast<std::size_t>(R * OH * OW))};
  for (int64_t r = 0; r < R; ++r) {
    const double* box = &rois.box[static_cast<std::size_t>(4 * r)];
    const double y0 = box[0] * scale, x0 = box[1] * scale;
    const double rh = std::max(box[2] * scale - y0, 1.0), rw = std::max(box[3] * scale - x0, 1.0);
    const double bh = rh / static_cast<double>(OH), bw = rw / static_cast<double>(OW);
    const int64_t gh = ratio.y ? *ratio.y : static_cast<int64_t>(std::ceil(rh / static_cast<double>(OH)));
    const int64_t gw = ratio.x ? *ratio.x : static_cast<int64_t>(std::ceil(rw / static_cast<double>(OW)));
    const double inv = 1.0 / static_cast<double>(gh * gw);
    for (int64_t i = 0; i < OH; ++i) {
      for (int64_t j = 0; j < OW; ++j) {
        auto& groups = b.groups[static_cast<std::size_t>((r * OH + i) * OW + j)];
        if (average) groups.emplace_back();
        for (int64_t iy = 0; iy < gh; ++iy) {
          double y = y0 + static_cast<double>(i) * bh + (static_cast<double>(iy) + 0.5) * bh / static_cast<double>(gh);
          int64_t ylo, yhi;
          if (!bounds(y, H, ylo, yhi)) continue;
          for (int64_t ix = 0; ix < gw; ++ix) {
            double xs =
                x0 + static_cast<double>(j) * bw + (static_cast<double>(ix) + 0.5) * bw / static_cast<double>(gw);
            int64_t xlo, xhi;
            if (!bounds(xs, W, xlo, xhi)) continue;
            const double ly = y - static_cast<double>(ylo), lx = xs - static_cast<double>(xlo);
            const double hy = static_cast<double>(yhi) - y, hx = static_cast<double>(xhi) - xs;
            Group g;
            if (hy * hx > 0 && ylo >= 0 && xlo >= 0) g.push_back({ylo * W + xlo, hy * hx});
            if (hy * lx > 0 && ylo >= 0 && xhi <= W - 1) g.push_back({ylo * W + xhi, hy * lx});
            if (ly * hx > 0 && yhi <= H - 1 && xlo >= 0) g.push_back({yhi * W + xlo, ly * hx});
            if (ly * lx > 0 && yhi <= H - 1 && xhi <= W - 1) g.push_back({yhi * W + xhi, ly * lx});
            if (average) {
              for (const Tap& t : g) groups.back().push_back({t.pos, t.w * inv});
            } else {
              groups.push_back(std::move(g));
            }
          }
        }
      }
    }
  }
  return b;
}

// y (R, C, OH, OW) from the bins: for `max`, each channel's first group of the largest value
// (`empty` where a bin has none), otherwise the bin's one group (0 where it has none).
Variable apply_bins(const Variable& x, const Bins& b, bool max, double empty) {
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t M = b.R * b.OH * b.OW;
  std::vector<double> xs;
  if (max) xs = x.array().to(Device::cpu()).to_vector<double>();
  // The chosen group of each (c, bin): its index, or -1 when the bin has none.
  std::vector<int64_t> chosen(static_cast<std::size_t>(C * M), -1);
  std::size_t K = 1;
  for (int64_t m = 0; m < M; ++m) {
    const auto& groups = b.groups[static_cast<std::size_t>(m)];
    const int64_t base = b.batch[static_cast<std::size_t>(m / (b.OH * b.OW))] * C;
    for (int64_t c = 0; c < C; ++c) {
      int64_t best = groups.empty() ? -1 : 0;
      if (max && groups.size() > 1) {
        const double* plane = xs.data() + (base + c) * H * W;
        double best_value = -std::numeric_limits<double>::infinity();
        best = -1;
        for (std::size_t g = 0; g < groups.size(); ++g) {
          double v = 0;
          for (const Tap& t : groups[g]) v += t.w * plane[t.pos];
          if (best < 0 || v > best_value) {
            best_value = v;
            best = static_cast<int64_t>(g);
          }
        }
      }
      chosen[static_cast<std::size_t>(c * M + m)] = best;
      if (best >= 0) K = std::max(K, groups[static_cast<std::size_t>(best)].size());
    }
  }
  std::vector<int32_t> pos(static_cast<std::size_t>(C * M) * K, 0);
  std::vector<double> weight(pos.size(), 0.0), fill(static_cast<std::size_t>(C * M), 0.0);
  bool any_fill = false;
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t m = 0; m < M; ++m) {
      const std::size_t cm = static_cast<std::size_t>(c * M + m);
      const int64_t image = b.batch[static_cast<std::size_t>(m / (b.OH * b.OW))] * H * W;
      if (chosen[cm] < 0) {
        fill[cm] = max ? empty : 0.0;
        any_fill = any_fill || fill[cm] != 0.0;
        continue;
      }
      const Group& g = b.groups[static_cast<std::size_t>(m)][static_cast<std::size_t>(chosen[cm])];
      for (std::size_t k = 0; k < g.size(); ++k) {
        pos[cm * K + k] = static_cast<int32_t>(image + g[k].pos);
        weight[cm * K + k] = g[k].w;
      }
    }
  }
  const int64_t Ki = static_cast<int64_t>(K);
  // x as C planes of the N images stacked: (1, C, N H, W); image b's element p is at b H W + p.
  const Variable planes = reshape(transpose(x, {1, 0, 2, 3}), {1, C, N * H, W});
  const Variable gathered = detail::max_pool_gather(planes, Array::from_vector(pos, {1, C, M, Ki}).to(x.device()));
  const Array w = Array::from_vector(weight, {1, C, M, Ki}).astype(x.dtype()).to(x.device());
  Variable y = sum(mul(gathered, Variable(w)), {3});
  if (any_fill) y = add(y, Variable(Array::from_vector(fill, {1, C, M}).astype(x.dtype()).to(x.device())));
  return transpose(reshape(y, {C, b.R, b.OH, b.OW}), {1, 0, 2, 3});
}

// Scaled corners rounded half to even, as Chainer's CPU code (Python's round).
std::vector<int64_t> rounded_corners(const std::vector<double>& box, std::size_t cols, std::size_t first, int64_t R,
                                     double scale, bool xy_order) {
  std::vector<int64_t> c(static_cast<std::size_t>(4 * R));
  for (int64_t r = 0; r < R; ++r) {
    const double* row = &box[static_cast<std::size_t>(r) * cols + first];
    // Stored as (y0, x0, y1, x1); roi_pooling_2d's rows are (x0, y0, x1, y1).
    const int order[4] = {xy_order ? 1 : 0, xy_order ? 0 : 1, xy_order ? 3 : 2, xy_order ? 2 : 3};
    for (int k = 0; k < 4; ++k) {
      c[static_cast<std::size_t>(4 * r + k)] = static_cast<int64_t>(std::nearbyint(row[order[k]] * scale));
    }
  }
  return c;
}

Variable integer_pooling(const char* op, const Variable& x, const Array& rois, const Array& roi_indices, Int2 outsize,
                         double spatial_scale, bool average) {
  const Rois r = read_rois(op, x, rois, roi_indices);
  check_params(op, x, outsize.y, outsize.x, spatial_scale);
  const auto corners = rounded_corners(r.box, 4, 0, r.R, spatial_scale, false);
  const Bins b = integer_bins(x, r.batch, corners, outsize.y, outsize.x, false, average);
  return apply_bins(x, b, !average, -std::numeric_limits<double>::infinity());
}

Variable align(const char* op, const Variable& x, const Array& rois, const Array& roi_indices, Int2 outsize,
               double spatial_scale, SamplingRatio ratio, bool average) {
  const Rois r = read_rois(op, x, rois, roi_indices);
  check_params(op, x, outsize.y, outsize.x, spatial_scale);
  RENSA_CHECK((!ratio.y || *ratio.y >= 1) && (!ratio.x || *ratio.x >= 1), ValueError, op,
              ": sampling_ratio must be at least 1 (x ", x.shape(), ")");
  const Bins b = align_bins(x, r, outsize.y, outsize.x, spatial_scale, ratio, average);
  return apply_bins(x, b, !average, -std::numeric_limits<double>::infinity());
}

}  // namespace

Variable roi_pooling_2d(const Variable& x, const Array& rois, int64_t outh, int64_t outw, double spatial_scale) {
  const char* op = "roi_pooling_2d";
  check_x(op, x);
  RENSA_CHECK(!rois.is_null() && is_floating(rois.dtype()), DtypeError, op, ": rois must be floating, got ",
              rois.is_null() ? std::string_view("none") : dtype_name(rois.dtype()));
  RENSA_CHECK(rois.ndim() == 2 && rois.shape()[1] == 5, ShapeError, op, ": rois ", rois.shape(),
              " must be (R, 5) rows of (batch index, x_min, y_min, x_max, y_max) (x ", x.shape(), ")");
  check_params(op, x, outh, outw, spatial_scale);
  const int64_t R = rois.shape()[0];
  const std::vector<double> box = rois.to(Device::cpu()).to_vector<double>();
  std::vector<int64_t> batch(static_cast<std::size_t>(R));
  for (int64_t r = 0; r < R; ++r)
    batch[static_cast<std::size_t>(r)] = static_cast<int64_t>(box[static_cast<std::size_t>(5 * r)]);
  check_batch(op, x, batch);
  const auto corners = rounded_corners(box, 5, 1, R, spatial_scale, true);
  const Bins b = integer_bins(x, batch, corners, outh, outw, true, false);
  return apply_bins(x, b, true, 0.0);
}

Variable roi_max_pooling_2d(const Variable& x, const Array& rois, const Array& roi_indices, Int2 outsize,
                            double spatial_scale) {
  return integer_pooling("roi_max_pooling_2d", x, rois, roi_indices, outsize, spatial_scale, false);
}

Variable roi_average_pooling_2d(const Variable& x, const Array& rois, const Array& roi_indices, Int2 outsize,
                                double spatial_scale) {
  return integer_pooling("roi_average_pooling_2d", x, rois, roi_indices, outsize, spatial_scale, true);
}

Variable roi_max_align_2d(const Variable& x, const Array& rois, const Array& roi_indices, Int2 outsize,
                          double spatial_scale, SamplingRatio sampling_ratio) {
  return align("roi_max_align_2d", x, rois, roi_indices, outsize, spatial_scale, sampling_ratio, false);
}

Variable roi_average_align_2d(const Variable& x, const Array& rois, const Array& roi_indices, Int2 outsize,
                              double spatial_scale, SamplingRatio sampling_ratio) {
  return align("roi_average_align_2d", x, rois, roi_indices, outsize, spatial_scale, sampling_ratio, true);
}

}  // namespace rensa::functions
