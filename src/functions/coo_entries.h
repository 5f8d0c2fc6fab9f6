#pragma once
// The entries of a CooMatrix, read and checked on the host, with padding left out and the batch
// folded into the indices: what to_dense and sparse_matmul gather and scatter with.
#include <cstdint>
#include <vector>

#include "rensa/core/array.h"

namespace rensa::functions::detail {

struct CooEntries {
  /// The entries' flat positions in data, padding left out.
  std::vector<int64_t> pos;
  /// batch * m + row and batch * k + col, for (m, k) the matrix shape (swapped when transposed).
  std::vector<int64_t> row, col;
  /// No padding: pos is 0, 1, ..., data.size() - 1.
  bool all = true;
};

/// row and col as int64 host vectors, checked: not null, int32 or int64 (DtypeError), one shape
/// (ShapeError), and -1 in both or neither of an entry's indices (ValueError). Errors start with op.
void read_coo_indices(const char* op, const Array& row, const Array& col, std::vector<int64_t>& rows,
                      std::vector<int64_t>& cols);

/// The entries of a matrix (m, k) = shape, or a batch of them, with data of `data_shape`: row and
/// col are also checked to have data's shape (ShapeError) and to index inside it (IndexError).
/// With `transpose`, the entries of the transposed matrix (k, m).
CooEntries coo_entries(const char* op, const Array& row, const Array& col, const Shape& data_shape, const Shape& shape,
                       bool transpose = false);

/// A 1-d int64 array of `v` on `device`.
Array index_array(const std::vector<int64_t>& v, Device device);

}  // namespace rensa::functions::detail
