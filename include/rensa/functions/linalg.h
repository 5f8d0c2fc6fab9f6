#pragma once
/// \file
/// Matrix products and square-matrix functions.

#include <string>
#include <utility>
#include <vector>

#include "rensa/core/variable.h"

namespace rensa::functions {

/// Matrix product with NumPy's matmul rules: 1-d operands are promoted to matrices and the added
/// axis removed, batch axes broadcast. `transa`/`transb` transpose the last two axes first
/// (without copying). ShapeError names both shapes when the inner extents differ.
Variable matmul(const Variable& a, const Variable& b, bool transa = false, bool transb = false);
/// y = x W^T + b for x (N, in) (further axes of x are flattened into `in`), W (out, in), optional
/// b (out,). Pass a null Variable for no bias. Mixed precision: a float16 / bfloat16 x may come with
/// float32 W and b; y is then in x's dtype from W and b rounded to it, and the gradients of W and b
/// are float32, accumulated without rounding to 16 bits.
Variable linear(const Variable& x, const Variable& W, const Variable& b = Variable());

/// The inverse of a (n, n) matrix. ValueError when it is singular; ShapeError unless a is square
/// and 2-d; DtypeError unless floating. Computed in float64 by LU with partial pivoting.
Variable inv(const Variable& a);
/// The inverses of a (B, n, n) batch; errors as inv, naming the singular matrix's index.
Variable batch_inv(const Variable& a);
/// The determinant of a (n, n) matrix (0-d). Its gradient needs a invertible (ValueError
/// otherwise, as Chainer's).
Variable det(const Variable& a);
/// The determinants of a (B, n, n) batch, (B,).
Variable batch_det(const Variable& a);
/// The lower-triangular L with L L^T = a for a symmetric positive-definite (n, n) a (only its
/// lower triangle is read). ValueError when a is not positive definite. The gradient is that of a
/// symmetric input (symmetrized).
Variable cholesky(const Variable& a);

/// The discrete Fourier transform along the last axis of the complex array real + i imag (same
/// shape, at least 1-d), as (real, imag) of the result: X_k = sum_j x_j exp(-2 pi i j k / n).
/// Computed as products with the DFT matrices (O(n^2) per row; linear, so exact to every order of
/// gradient). ShapeError unless real and imag match.
std::pair<Variable, Variable> fft(const Variable& real, const Variable& imag);
/// The inverse of fft: x_j = sum_k X_k exp(2 pi i j k / n) / n.
std::pair<Variable, Variable> ifft(const Variable& real, const Variable& imag);

/// numpy.tensordot: the sum over the last `axes` axes of a and the first `axes` of b; the result
/// has a's free axes then b's. ShapeError when the contracted extents differ or axes exceeds
/// either rank.
Variable tensordot(const Variable& a, const Variable& b, int64_t axes = 2);
/// numpy.tensordot over the listed axes of a and b, paired in order (negative axes count from the
/// end). ShapeError when the lists differ in length or the paired extents differ; IndexError for
/// an axis out of range or listed twice.
Variable tensordot(const Variable& a, const Variable& b, const Shape& a_axes, const Shape& b_axes);
/// Chainer's batch_matmul: matmul of (B, N, M) by (B, M, K); a 2-d operand (B, N) is read as
/// (B, N, 1). ShapeError unless both are 2-d or 3-d with one batch.
Variable batch_matmul(const Variable& a, const Variable& b, bool transa = false, bool transb = false);
/// Einstein summation as numpy.einsum: "ij,jk->ik", implicit outputs ("ij,jk": the labels seen
/// once, sorted), repeated labels in one operand (diagonals, "ii->i"), "..." for leading broadcast
/// axes. Contracted pairwise with matmul. ValueError for a malformed subscript string or a label
/// in the output that no operand has; ShapeError when a label's extents disagree.
Variable einsum(const std::string& subscripts, const std::vector<Variable>& operands);

}  // namespace rensa::functions
