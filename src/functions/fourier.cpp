// fft / ifft along the last axis, as Chainer's (a pair of real and imaginary parts). Computed as
// products with the DFT's cosine and sine matrices: O(n^2) per transform, but linear in the
// inputs and made of matmul, so every order of gradient is exact.
#include <cmath>
#include <numbers>
#include <utility>
#include <vector>

#include "rensa/functions/basic_math.h"
#include "rensa/functions/linalg.h"
#include "src/functions/common.h"

namespace rensa::functions {
namespace {

// cos and sin of 2 pi j k / n for j, k < n, the angle reduced mod n first for accuracy.
std::pair<Variable, Variable> dft_matrices(int64_t n, const Variable& like) {
  std::vector<double> c(static_cast<std::size_t>(n * n)), s(c.size());
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t k = 0; k < n; ++k) {
      const double angle = 2.0 * std::numbers::pi * static_cast<double>((j * k) % n) / static_cast<double>(n);
      c[static_cast<std::size_t>(j * n + k)] = std::cos(angle);
      s[static_cast<std::size_t>(j * n + k)] = std::sin(angle);
    }
  }
  auto make = [&](const std::vector<double>& v) {
    return Variable(Array::from_vector(v, {n, n}).astype(like.dtype()).to(like.device()));
  };
  return {make(c), make(s)};
}

std::pair<Variable, Variable> transform(const char* op, const Variable& re, const Variable& im, bool inverse) {
  detail::check_floating(op, re, "real");
  detail::check_floating(op, im, "imag");
  detail::check_same_dtype_device(op, {&re, &im});
  RENSA_CHECK(re.shape() == im.shape() && re.ndim() >= 1, ShapeError, op, ": real ", re.shape(), " and imag ",
              im.shape(), " must have one shape of at least 1 axis");
  const int64_t n = re.shape().back();
  if (n == 0) return {re, im};
  const auto [c, s] = dft_matrices(n, re);
  // X = x (C - i S) forward, x (C + i S) / n inverse.
  const double sign = inverse ? -1.0 : 1.0;
  Variable out_re = add(matmul(re, c), mul(matmul(im, s), sign));
  Variable out_im = sub(matmul(im, c), mul(matmul(re, s), sign));
  if (inverse) {
    out_re = mul(out_re, 1.0 / static_cast<double>(n));
    out_im = mul(out_im, 1.0 / static_cast<double>(n));
  }
  return {out_re, out_im};
}

}  // namespace

std::pair<Variable, Variable> fft(const Variable& real, const Variable& imag) {
  return transform("fft", real, imag, false);
}

std::pair<Variable, Variable> ifft(const Variable& real, const Variable& imag) {
  return transform("ifft", real, imag, true);
}

}  // namespace rensa::functions
