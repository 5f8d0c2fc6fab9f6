#pragma once
/// \file
/// Sparse matrices in COO format (Chainer's chainer.utils.CooMatrix and to_coo) and their products
/// with dense matrices (sparse_matmul).
///
/// A CooMatrix holds entries (row[i], col[i], data[i]) of a dense (m, k) matrix, or of a batch of
/// them when data, row and col are 2-d (nb, ldnz). Repeated (row, col) pairs add up. An entry whose
/// row and col are both -1 is padding (to_coo pads each batch to one length this way, as Chainer
/// does): it contributes nothing and its data gets a zero gradient.

#include <cstdint>
#include <optional>

#include "rensa/core/array.h"
#include "rensa/core/variable.h"

namespace rensa::utils {

/// Chainer's layout hint of a CooMatrix: `c` when its entries are sorted by (row, col), `f` when
/// by (col, row), `other` otherwise. Padding entries are ignored. rensa's kernels do not need it;
/// it is kept for Chainer's API.
enum class CooOrder : uint8_t { c, f, other };

/// A sparse matrix (or a batch of them) in COO format, as Chainer's CooMatrix.
class CooMatrix {
 public:
  /// data (ldnz,) or (nb, ldnz), any dtype (sparse_matmul needs a floating one), is kept as given:
  /// gradients flow to it and through it to whatever computed it. row and col are int32 or int64
  /// of data's shape, on any device (they are read on the host to be checked). shape is the dense
  /// (m, k) of one matrix. `order` defaults to get_order(row, col).
  /// Throws ShapeError unless data is 1-d or 2-d, row and col have its shape and shape is two
  /// positive extents; DtypeError for other index dtypes; IndexError for a row outside [-1, m) or a
  /// col outside [-1, k); ValueError when only one of an entry's row and col is -1.
  CooMatrix(Variable data, Array row, Array col, Shape shape, std::optional<CooOrder> order = std::nullopt);

  /// The entries' values, (ldnz,) or (nb, ldnz).
  const Variable& data() const { return data_; }
  /// Row indices, data's shape (-1 for padding).
  const Array& row() const { return row_; }
  /// Column indices, data's shape (-1 for padding).
  const Array& col() const { return col_; }
  /// The dense shape (m, k) of one matrix.
  const Shape& shape() const { return shape_; }
  /// The layout hint (given, or get_order(row, col) at construction).
  CooOrder order() const { return order_; }
  /// True when data is 2-d: a batch of data.shape()[0] matrices.
  bool batched() const { return data_.ndim() == 2; }

  /// The dense matrix (m, k), or (nb, m, k), in data's dtype, repeated entries added up. Unlike
  /// Chainer's (which returns an array) it is differentiable in data.
  Variable to_dense() const;

 private:
  Variable data_;
  Array row_, col_;
  Shape shape_;
  CooOrder order_ = CooOrder::other;
};

/// The nonzero elements of x (m, k), or of each matrix of a batch x (nb, m, k), in row-major
/// order, as a CooMatrix with int32 indices and data in x's dtype and device. ldnz is the length
/// of the entry arrays: at least the largest number of nonzeros of one matrix (a smaller ldnz is
/// raised to it, as in Chainer), the rest padding (data 0, row and col -1). data requires grad
/// when asked. ShapeError unless x is 2-d or 3-d; ValueError when an extent does not fit int32.
CooMatrix to_coo(const Array& x, std::optional<int64_t> ldnz = std::nullopt, bool requires_grad = false);

/// The order of entries with these indices (see CooOrder); ShapeError when their shapes differ,
/// ValueError when only one of an entry's row and col is -1.
CooOrder get_order(const Array& row, const Array& col);

}  // namespace rensa::utils

namespace rensa::functions {

/// C = op(a) op(b) with a sparse, b dense: op transposes the matrix when transa / transb is set.
/// a holds (m, k) matrices; b is (k, n) for an unbatched a, (nb, k, n) for a batched one (the
/// sizes after op). Costs O(nnz n), never the dense product: C's rows gather b's rows at the
/// entries' columns, scaled by data, and add them up at the entries' rows. Gradients flow to
/// a.data() (nonzero only at the entries; zero at padding) and to b, to any order (the backward is
/// again a sparse product). a.data() and b: one floating dtype (DtypeError) and one device.
/// ShapeError, naming both shapes, when b is not 2-d / 3-d as a requires or the inner extents or
/// batch sizes differ; IndexError for an index out of range; ValueError when only one of an
/// entry's row and col is -1 (a's indices are checked again at each call).
Variable sparse_matmul(const utils::CooMatrix& a, const Variable& b, bool transa = false, bool transb = false);
/// C = op(a) op(b) with a dense, b sparse: a is (m, k) or (nb, m, k), b holds (k, n) matrices
/// (the sizes after op). Otherwise as the overload above.
Variable sparse_matmul(const Variable& a, const utils::CooMatrix& b, bool transa = false, bool transb = false);

}  // namespace rensa::functions
