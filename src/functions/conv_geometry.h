#pragma once
// Sliding-window geometry and argument checks shared by the convolution and pooling functions
// (2-d and N-d; Chainer's formulas).
#include <cstdint>
#include <ostream>
#include <vector>

#include "rensa/core/error.h"
#include "rensa/functions/convolution.h"
#include "rensa/functions/convolution_nd.h"

namespace rensa::functions::detail {

/// Extent of a dilated kernel: (k - 1) * d + 1.
inline int64_t dilated(int64_t k, int64_t d) {
  return (k - 1) * d + 1;
}

/// Windows of extent dk at stride s over size + 2p elements; with cover_all, the last window may
/// run past the end so every element is covered. 0 when no window fits (with cover_all, a window
/// may be larger than size + 2p by less than a stride).
inline int64_t window_count(int64_t size, int64_t dk, int64_t s, int64_t p, bool cover_all) {
  const int64_t span = size + 2 * p - dk;
  // A window larger than the padded input still fits once with cover_all when it reaches past the
  // input by less than a stride (Chainer's floor division: a 3-wide window over 2 at stride 2).
  if (span < 0) return cover_all && span + s - 1 >= 0 ? 1 : 0;
  return (cover_all ? (span + s - 1) / s : span / s) + 1;
}

/// Streams " and b (shape)" for an optional bias, only when an error message is built.
struct BiasNote {
  const Variable& b;
};
inline std::ostream& operator<<(std::ostream& os, const BiasNote& n) {
  if (!n.b.is_null()) os << " and b " << n.b.shape();
  return os;
}

/// One value per spatial axis of x from `v` (one value for all, or k of them); ValueError naming
/// `op`, `what` and x (and W when given) otherwise.
inline std::vector<int64_t> per_axis(const char* op, const char* what, const IntN& v, std::size_t k, const Variable& x,
                                     const Variable* W = nullptr) {
  RENSA_CHECK(v.values.size() == 1 || v.values.size() == k, ValueError, op, ": ", what, " ", v, " has ",
              v.values.size(), " values for the ", k, " spatial axes of x ", x.shape(),
              W != nullptr ? " (W " : "", W != nullptr ? W->shape() : Shape(), W != nullptr ? ")" : "");
  return v.values.size() == 1 ? std::vector<int64_t>(k, v.values[0]) : v.values;
}

/// A deconvolution's output channels W.shape[1] * groups, after checking that x's channels are
/// W's first axis, that groups divides them, and that b (if any) is (O,).
inline int64_t deconv_out_channels(const char* op, const Variable& x, const Variable& W, const Variable& b,
                                   int64_t groups) {
  const BiasNote bn{b};
  const int64_t c = x.shape()[1];
  RENSA_CHECK(c == W.shape()[0], ShapeError, op, ": x ", x.shape(), " has ", c, " channels but W ", W.shape(), bn,
              " takes ", W.shape()[0]);
  RENSA_CHECK(c % groups == 0, ShapeError, op, ": groups ", groups, " does not divide the ", c, " channels of x ",
              x.shape(), " (W ", W.shape(), bn, ")");
  const int64_t o = W.shape()[1] * groups;
  RENSA_CHECK(b.is_null() || (b.ndim() == 1 && b.shape()[0] == o), ShapeError, op, ": b ",
              b.is_null() ? Shape() : b.shape(), " does not match the ", o, " output channels of W ", W.shape(),
              " with groups ", groups, " (x ", x.shape(), ")");
  return o;
}

}  // namespace rensa::functions::detail

namespace rensa::functions {
/// Prints as (y, x) in error messages (found by argument-dependent lookup).
inline std::ostream& operator<<(std::ostream& os, const Int2& v) {
  return os << '(' << v.y << ", " << v.x << ')';
}
}  // namespace rensa::functions
