// CooMatrix (Chainer's chainer.utils.CooMatrix), to_coo and get_order. Indices are read on the
// host; data stays a Variable so that gradients reach it.
#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "rensa/functions/array_ops.h"
#include "rensa/functions/sparse.h"
#include "src/functions/coo_entries.h"
#include "src/functions/gather.h"

namespace rensa::utils {
namespace {

// Whether the non-padding entries of each batch (ldnz entries) are sorted by (major, minor).
bool sorted_by(const std::vector<int64_t>& major, const std::vector<int64_t>& minor, int64_t ldnz) {
  int64_t prev = -1;  // the previous non-padding entry of this batch
  for (int64_t i = 0; i < static_cast<int64_t>(major.size()); ++i) {
    if (i % ldnz == 0) prev = -1;
    const auto u = static_cast<std::size_t>(i);
    if (major[u] == -1) continue;
    if (prev >= 0) {
      const auto p = static_cast<std::size_t>(prev);
      if (major[p] > major[u] || (major[p] == major[u] && minor[p] > minor[u])) return false;
    }
    prev = i;
  }
  return true;
}

}  // namespace

CooOrder get_order(const Array& row, const Array& col) {
  std::vector<int64_t> rows, cols;
  functions::detail::read_coo_indices("get_order", row, col, rows, cols);
  const int64_t ldnz = row.ndim() == 0 ? 1 : std::max<int64_t>(row.shape().back(), 1);
  if (sorted_by(rows, cols, ldnz)) return CooOrder::c;
  if (sorted_by(cols, rows, ldnz)) return CooOrder::f;
  return CooOrder::other;
}

CooMatrix::CooMatrix(Variable data, Array row, Array col, Shape shape, std::optional<CooOrder> order)
    : data_(std::move(data)), row_(std::move(row)), col_(std::move(col)), shape_(std::move(shape)) {
  RENSA_CHECK(!data_.is_null(), ValueError, "CooMatrix: data is null");
  RENSA_CHECK(data_.ndim() == 1 || data_.ndim() == 2, ShapeError,
              "CooMatrix: data must be 1-d, or 2-d for a batch, got ", data_.shape());
  RENSA_CHECK(shape_.size() == 2 && shape_[0] > 0 && shape_[1] > 0, ShapeError,
              "CooMatrix: shape must be two positive extents, got ", shape_);
  functions::detail::coo_entries("CooMatrix", row_, col_, data_.shape(), shape_);
  order_ = order ? *order : get_order(row_, col_);
}

Variable CooMatrix::to_dense() const {
  constexpr const char* kOp = "CooMatrix::to_dense";
  const auto e = functions::detail::coo_entries(kOp, row_, col_, data_.shape(), shape_);
  const int64_t nb = batched() ? data_.shape()[0] : 1, m = shape_[0], k = shape_[1];
  std::vector<int64_t> flat(e.row.size());
  for (std::size_t i = 0; i < flat.size(); ++i) flat[i] = e.row[i] * k + e.col[i] % k;  // col is b k + c
  const Device device = data_.device();
  Variable values = functions::reshape(data_, Shape{data_.size()});
  if (!e.all) values = functions::detail::take(kOp, values, functions::detail::index_array(e.pos, device), 0);
  const Variable zeros(Array::zeros(Shape{nb * m * k}, data_.dtype(), device));
  Variable dense =
      functions::detail::scatter_add_axis(kOp, zeros, functions::detail::index_array(flat, device), values, 0);
  return functions::reshape(dense, batched() ? Shape{nb, m, k} : Shape{m, k});
}

CooMatrix to_coo(const Array& x, std::optional<int64_t> ldnz, bool requires_grad) {
  RENSA_CHECK(!x.is_null(), ValueError, "to_coo: x is null");
  RENSA_CHECK(x.ndim() == 2 || x.ndim() == 3, ShapeError, "to_coo: x must be 2-d, or 3-d for a batch, got ", x.shape());
  const int64_t kMax = std::numeric_limits<int32_t>::max();
  RENSA_CHECK(x.shape()[x.ndim() - 2] <= kMax && x.shape().back() <= kMax, ValueError, "to_coo: x ", x.shape(),
              " has an extent beyond int32 indices");
  const bool batched = x.ndim() == 3;
  const int64_t nb = batched ? x.shape()[0] : 1;
  const int64_t per = x.size() / std::max<int64_t>(nb, 1);  // elements of one matrix
  const Array host = x.to(Device::cpu()).contiguous();
  const auto values = host.to_vector<double>();  // only to find the nonzeros
  std::vector<std::vector<int64_t>> nonzero(static_cast<std::size_t>(nb));
  int64_t len = ldnz.value_or(0);
  for (int64_t b = 0; b < nb; ++b) {
    auto& nz = nonzero[static_cast<std::size_t>(b)];
    for (int64_t i = 0; i < per; ++i) {
      if (values[static_cast<std::size_t>(b * per + i)] != 0.0) nz.push_back(i);
    }
    len = std::max(len, static_cast<int64_t>(nz.size()));
  }
  const int64_t cols = x.shape().back();
  const std::size_t item = x.itemsize();
  Array data = Array::zeros(batched ? Shape{nb, len} : Shape{len}, x.dtype(), Device::cpu());
  std::vector<int32_t> row(static_cast<std::size_t>(nb * len), -1), col(row.size(), -1);
  const auto* src = static_cast<const char*>(host.raw_data());
  auto* dst = static_cast<char*>(data.raw_data());
  for (int64_t b = 0; b < nb; ++b) {
    const auto& nz = nonzero[static_cast<std::size_t>(b)];
    for (std::size_t j = 0; j < nz.size(); ++j) {
      const auto at = static_cast<std::size_t>(b * len) + j;
      std::memcpy(dst + at * item, src + static_cast<std::size_t>(b * per + nz[j]) * item, item);
      row[at] = static_cast<int32_t>(nz[j] / cols);
      col[at] = static_cast<int32_t>(nz[j] % cols);
    }
  }
  const Shape& index_shape = data.shape();
  const Shape shape{x.shape()[x.ndim() - 2], cols};
  return CooMatrix(Variable(data.to(x.device()), requires_grad), Array::from_vector(row, index_shape, x.device()),
                   Array::from_vector(col, index_shape, x.device()), shape);
}

}  // namespace rensa::utils
