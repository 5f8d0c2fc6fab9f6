// sparse_matmul: products of a CooMatrix and a dense matrix in O(nnz n), composed of gather,
// multiply and scatter-add, each differentiable, so gradients of every order come for free and
// also cost O(nnz n): the data's gradient is a row-wise dot product at the entries only.
#include <ostream>

#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/sparse.h"
#include "src/functions/common.h"
#include "src/functions/coo_entries.h"
#include "src/functions/gather.h"

namespace rensa::functions {
namespace {

constexpr const char* kOp = "sparse_matmul";

// Streams both operands for error messages, the sparse one as "CooMatrix (3, 4) with data (5,)".
struct OperandsNote {
  const utils::CooMatrix& s;
  const Variable& d;
  bool sparse_left, transa, transb;
};
std::ostream& operator<<(std::ostream& os, const OperandsNote& n) {
  const auto sparse = [&](bool trans) -> std::ostream& {
    return os << "CooMatrix " << n.s.shape() << " with data " << n.s.data().shape() << (trans ? " (transposed)" : "");
  };
  const auto dense = [&](bool trans) -> std::ostream& { return os << n.d.shape() << (trans ? " (transposed)" : ""); };
  os << "a ";
  n.sparse_left ? sparse(n.transa) : dense(n.transa);
  os << " and b ";
  return n.sparse_left ? dense(n.transb) : sparse(n.transb);
}

// Checks the operands of s (sparse) by d (dense), whichever side each is on.
void check_operands(const utils::CooMatrix& s, const Variable& d, bool sparse_left, bool transa, bool transb) {
  detail::check_floating(kOp, s.data(), sparse_left ? "a.data" : "b.data");
  detail::check_floating(kOp, d, sparse_left ? "b" : "a");
  detail::check_same_dtype_device(kOp, {&s.data(), &d});
  const OperandsNote ops{s, d, sparse_left, transa, transb};
  const int64_t want = s.batched() ? 3 : 2;
  RENSA_CHECK(d.ndim() == want, ShapeError, kOp, ": ", ops, ": the dense operand must be ", want, "-d for a ",
              (s.batched() ? "batched" : "single"), " CooMatrix");
  RENSA_CHECK(!s.batched() || d.shape()[0] == s.data().shape()[0], ShapeError, kOp, ": ", ops,
              " have mismatched batch sizes ", s.data().shape()[0], " vs ", d.shape()[0]);
  const int64_t dm = d.shape()[d.ndim() - 2], dk = d.shape()[d.ndim() - 1];
  const int64_t left_k = sparse_left ? s.shape()[transa ? 0 : 1] : (transa ? dm : dk);
  const int64_t right_k = sparse_left ? (transb ? dk : dm) : s.shape()[transb ? 1 : 0];
  RENSA_CHECK(left_k == right_k, ShapeError, kOp, ": ", ops, " have mismatched inner dims ", left_k, " vs ", right_k);
}

// op(s) op(d) for checked operands: gather d's rows at the entries' columns, scale them by the
// entries' values and add them up at the entries' rows.
Variable sparse_times_dense(const utils::CooMatrix& s, const Variable& d, bool ts, bool td) {
  const auto e = detail::coo_entries(kOp, s.row(), s.col(), s.data().shape(), s.shape(), ts);
  const bool batched = s.batched();
  const int64_t nb = batched ? d.shape()[0] : 1;
  const int64_t m = s.shape()[ts ? 1 : 0], k = s.shape()[ts ? 0 : 1];
  Variable dm = td ? swapaxes(d, -1, -2) : d;  // (nb,) k, n
  const int64_t n = dm.shape().back();
  if (batched) dm = reshape(dm, Shape{nb * k, n});
  const Device device = d.device();
  const auto nnz = static_cast<int64_t>(e.pos.size());
  Variable values = reshape(s.data(), Shape{s.data().size()});
  if (!e.all) values = detail::take(kOp, values, detail::index_array(e.pos, device), 0);
  const Variable gathered = detail::take(kOp, dm, detail::index_array(e.col, device), 0);  // (nnz, n)
  const Variable scaled = mul(gathered, reshape(values, Shape{nnz, 1}));
  const Variable zeros(Array::zeros(Shape{nb * m, n}, d.dtype(), device));
  const Variable c = detail::scatter_add_axis(kOp, zeros, detail::index_array(e.row, device), scaled, 0);
  return batched ? reshape(c, Shape{nb, m, n}) : c;
}

}  // namespace

Variable sparse_matmul(const utils::CooMatrix& a, const Variable& b, bool transa, bool transb) {
  check_operands(a, b, true, transa, transb);
  return sparse_times_dense(a, b, transa, transb);
}

// C = op(a) op(b) is the transpose of op(b)^T op(a)^T, a sparse product on the left.
Variable sparse_matmul(const Variable& a, const utils::CooMatrix& b, bool transa, bool transb) {
  check_operands(b, a, false, transa, transb);
  return swapaxes(sparse_times_dense(b, a, !transb, !transa), -1, -2);
}

}  // namespace rensa::functions
