// Reading and checking COO indices on the host.
#include "src/functions/coo_entries.h"

#include "rensa/core/error.h"

namespace rensa::functions::detail {
namespace {

std::vector<int64_t> host_indices(const char* op, const Array& idx, const char* what) {
  RENSA_CHECK(!idx.is_null(), ValueError, op, ": ", what, " is null");
  RENSA_CHECK(idx.dtype() == Dtype::int32 || idx.dtype() == Dtype::int64, DtypeError, op, ": ", what,
              " must be int32 or int64, got ", idx.dtype(), " with shape ", idx.shape());
  return idx.to(Device::cpu()).to_vector<int64_t>();
}

}  // namespace

void read_coo_indices(const char* op, const Array& row, const Array& col, std::vector<int64_t>& rows,
                      std::vector<int64_t>& cols) {
  rows = host_indices(op, row, "row");
  cols = host_indices(op, col, "col");
  RENSA_CHECK(row.shape() == col.shape(), ShapeError, op, ": row ", row.shape(), " and col ", col.shape(),
              " must have one shape");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    RENSA_CHECK((rows[i] == -1) == (cols[i] == -1), ValueError, op, ": entry ", i, " has row ", rows[i], " and col ",
                cols[i], "; padding needs -1 in both");
  }
}

CooEntries coo_entries(const char* op, const Array& row, const Array& col, const Shape& data_shape, const Shape& shape,
                       bool transpose) {
  std::vector<int64_t> rows, cols;
  read_coo_indices(op, row, col, rows, cols);
  RENSA_CHECK(row.shape() == data_shape, ShapeError, op, ": row and col ", row.shape(), " must have data's shape ",
              data_shape);
  const int64_t m = shape[0], k = shape[1];
  const int64_t ldnz = data_shape.empty() ? 0 : data_shape.back();
  CooEntries e;
  e.pos.reserve(rows.size());
  e.row.reserve(rows.size());
  e.col.reserve(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const int64_t r = rows[i], c = cols[i];
    if (r == -1) {
      e.all = false;
      continue;
    }
    RENSA_CHECK(r >= 0 && r < m, IndexError, op, ": row index ", r, " of entry ", i, " is outside [-1, ", m,
                ") for shape ", shape);
    RENSA_CHECK(c >= 0 && c < k, IndexError, op, ": col index ", c, " of entry ", i, " is outside [-1, ", k,
                ") for shape ", shape);
    const int64_t b = static_cast<int64_t>(i) / ldnz;
    e.pos.push_back(static_cast<int64_t>(i));
    e.row.push_back(transpose ? b * k + c : b * m + r);
    e.col.push_back(transpose ? b * m + r : b * k + c);
  }
  return e;
}

Array index_array(const std::vector<int64_t>& v, Device device) {
  return Array::from_vector(v, Shape{static_cast<int64_t>(v.size())}, device);
}

}  // namespace rensa::functions::detail
