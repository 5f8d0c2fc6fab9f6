// Square-matrix functions: inv, det, cholesky and their batched forms. Forwards factor each
// matrix on the host in float64 (LU with partial pivoting, or Cholesky); backwards are written
// with differentiable functions (matmul, inv itself), so higher orders follow.
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "rensa/core/config.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/linalg.h"
#include "src/functions/common.h"

namespace rensa::functions {
namespace {

using Grads = std::vector<Variable>;

// The batch of n x n matrices of x: (n, n) when `batched` is false, else (B, n, n).
struct Square {
  int64_t batch = 1, n = 0;
};

Square check_square(const char* op, const Variable& x, bool batched) {
  detail::check_floating(op, x, "a");
  const int64_t want = batched ? 3 : 2;
  const auto& s = x.shape();
  RENSA_CHECK(x.ndim() == want && s[s.size() - 1] == s[s.size() - 2], ShapeError, op, ": a must be ",
              batched ? "(B, n, n)" : "(n, n)", ", got ", s);
  return {batched ? s[0] : 1, s.back()};
}

// LU factorization of the n x n row-major matrix m in place with partial pivoting; returns the
// determinant's sign (+1/-1), or 0 when a pivot is exactly 0.
double lu(std::vector<double>& m, std::vector<int64_t>& perm, int64_t n) {
  double sign = 1.0;
  perm.resize(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[static_cast<std::size_t>(i)] = i;
  auto at = [&](int64_t r, int64_t c) -> double& { return m[static_cast<std::size_t>(r * n + c)]; };
  for (int64_t k = 0; k < n; ++k) {
    int64_t p = k;
    for (int64_t r = k + 1; r < n; ++r) {
      if (std::abs(at(r, k)) > std::abs(at(p, k))) p = r;
    }
    if (at(p, k) == 0.0) return 0.0;
    if (p != k) {
      for (int64_t c = 0; c < n; ++c) std::swap(at(k, c), at(p, c));
      std::swap(perm[static_cast<std::size_t>(k)], perm[static_cast<std::size_t>(p)]);
      sign = -sign;
    }
    for (int64_t r = k + 1; r < n; ++r) {
      const double f = at(r, k) /= at(k, k);
      for (int64_t c = k + 1; c < n; ++c) at(r, c) -= f * at(k, c);
    }
  }
  return sign;
}

// The matrices of a (B, n, n) or (n, n) as float64 host data.
std::vector<double> host(const Variable& a) { return a.array().astype(Dtype::float64).to_vector<double>(); }

Variable to_like(const std::vector<double>& v, const Shape& shape, const Variable& like) {
  return Variable(Array::from_vector(v, shape).astype(like.dtype()).to(like.device()));
}

// The transposes of the last two axes.
Variable mT(const Variable& x) { return swapaxes(x, -1, -2); }

Variable inverse(const char* op, const Variable& a, bool batched) {
  rensa::detail::ForwardEntry entry(op, a);
  const Square sq = check_square(op, a, batched);
  const int64_t n = sq.n;
  const auto in = host(a);
  std::vector<double> out(in.size());
  std::vector<double> m;
  std::vector<int64_t> perm;
  for (int64_t b = 0; b < sq.batch; ++b) {
    m.assign(in.begin() + b * n * n, in.begin() + (b + 1) * n * n);
    RENSA_CHECK(lu(m, perm, n) != 0.0, ValueError, op, ": matrix ", b, " of a ", a.shape(), " is singular");
    // Solve LU x = P e_j for each column j.
    for (int64_t j = 0; j < n; ++j) {
      std::vector<double> x(static_cast<std::size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        double v = perm[static_cast<std::size_t>(i)] == j ? 1.0 : 0.0;
        for (int64_t k = 0; k < i; ++k) v -= m[static_cast<std::size_t>(i * n + k)] * x[static_cast<std::size_t>(k)];
        x[static_cast<std::size_t>(i)] = v;
      }
      for (int64_t i = n - 1; i >= 0; --i) {
        double v = x[static_cast<std::size_t>(i)];
        for (int64_t k = i + 1; k < n; ++k) v -= m[static_cast<std::size_t>(i * n + k)] * x[static_cast<std::size_t>(k)];
        x[static_cast<std::size_t>(i)] = v / m[static_cast<std::size_t>(i * n + i)];
      }
      for (int64_t i = 0; i < n; ++i) out[static_cast<std::size_t>(b * n * n + i * n + j)] = x[static_cast<std::size_t>(i)];
    }
  }
  return record1(op, {a}, to_like(out, a.shape(), a).array(), [](const BackwardContext& ctx) {
    // d(A^-1) = -A^-1 dA A^-1, so gA = -Y^T gY Y^T.
    const Variable yT = mT(ctx.output());
    return Grads{neg(matmul(yT, matmul(ctx.grad_output(), yT)))};
  }, true);
}

Variable determinant(const char* op, const Variable& a, bool batched) {
  rensa::detail::ForwardEntry entry(op, a);
  const Square sq = check_square(op, a, batched);
  const int64_t n = sq.n;
  const auto in = host(a);
  std::vector<double> det(static_cast<std::size_t>(sq.batch));
  std::vector<double> m;
  std::vector<int64_t> perm;
  for (int64_t b = 0; b < sq.batch; ++b) {
    m.assign(in.begin() + b * n * n, in.begin() + (b + 1) * n * n);
    double d = lu(m, perm, n);
    for (int64_t i = 0; i < n && d != 0.0; ++i) d *= m[static_cast<std::size_t>(i * n + i)];
    det[static_cast<std::size_t>(b)] = d;
  }
  const Shape out_shape = batched ? Shape{sq.batch} : Shape{};
  return record1(op, {a}, to_like(det, out_shape, a).array(), [a, batched, op](const BackwardContext& ctx) {
    // d det(A) = det(A) tr(A^-1 dA): gA = gy det(A) A^-T (A must be invertible, as in Chainer).
    Variable scale = mul(ctx.grad_output(), ctx.output());
    if (batched) scale = reshape(scale, {scale.shape()[0], 1, 1});
    return Grads{mul(scale, mT(inverse(op, a, batched)))};
  }, true);
}

}  // namespace

Variable inv(const Variable& a) { return inverse("inv", a, false); }
Variable batch_inv(const Variable& a) { return inverse("batch_inv", a, true); }
Variable det(const Variable& a) { return determinant("det", a, false); }
Variable batch_det(const Variable& a) { return determinant("batch_det", a, true); }

Variable cholesky(const Variable& a) {
  constexpr const char* op = "cholesky";
  rensa::detail::ForwardEntry entry(op, a);
  const Square sq = check_square(op, a, false);
  const int64_t n = sq.n;
  const auto m = host(a);
  std::vector<double> l(m.size(), 0.0);
  auto A = [&](int64_t r, int64_t c) { return m[static_cast<std::size_t>(r * n + c)]; };
  auto L = [&](int64_t r, int64_t c) -> double& { return l[static_cast<std::size_t>(r * n + c)]; };
  for (int64_t j = 0; j < n; ++j) {
    double d = A(j, j);
    for (int64_t k = 0; k < j; ++k) d -= L(j, k) * L(j, k);
    RENSA_CHECK(d > 0.0 && std::isfinite(d), ValueError, op, ": a ", a.shape(),
                " is not positive definite (pivot ", j, " is ", d, ")");
    L(j, j) = std::sqrt(d);
    for (int64_t i = j + 1; i < n; ++i) {
      double v = A(i, j);
      for (int64_t k = 0; k < j; ++k) v -= L(i, k) * L(j, k);
      L(i, j) = v / L(j, j);
    }
  }
  // Phi keeps the lower triangle and halves the diagonal.
  std::vector<double> phi(static_cast<std::size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j <= i; ++j) phi[static_cast<std::size_t>(i * n + j)] = i == j ? 0.5 : 1.0;
  }
  const Variable phi_mask = to_like(phi, {n, n}, a);
  return record1(op, {a}, to_like(l, a.shape(), a).array(), [phi_mask](const BackwardContext& ctx) {
    // gA = sym(L^-T Phi(L^T gL) L^-1) (Murray 2016), read as the gradient of a symmetric input.
    const Variable li = inv(ctx.output());
    const Variable s = matmul(mT(li), matmul(mul(matmul(mT(ctx.output()), ctx.grad_output()), phi_mask), li));
    return Grads{mul(add(s, mT(s)), 0.5)};
  }, true);
}

}  // namespace rensa::functions
