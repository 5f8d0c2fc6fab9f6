// Reference symmetric eigendecomposition: the cyclic Jacobi method in double, one matrix at a time.
// Slow (O(C^3) per sweep) but simple, and accurate to rounding in float64: the ground truth for the
// cpu kernel's LAPACK call.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>
#include <vector>

#include "src/backends/reference/kernels.h"

namespace rensa::backends::reference {
namespace {

constexpr int kMaxSweeps = 100;

// Diagonalizes the n x n symmetric row-major matrix `a` in place; `v` receives the accumulated
// rotations (eigenvectors as columns). Returns false when the sweeps run out.
bool jacobi(std::vector<double>& a, std::vector<double>& v, int64_t n) {
  auto A = [&](int64_t i, int64_t j) -> double& { return a[static_cast<std::size_t>(i * n + j)]; };
  auto V = [&](int64_t i, int64_t j) -> double& { return v[static_cast<std::size_t>(i * n + j)]; };
  std::fill(v.begin(), v.end(), 0.0);
  for (int64_t i = 0; i < n; ++i) V(i, i) = 1.0;
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    bool rotated = false;
    for (int64_t p = 0; p < n; ++p) {
      for (int64_t q = p + 1; q < n; ++q) {
        const double apq = A(p, q);
        // An element below rounding of its diagonal moves no eigenvalue: drop it. A sweep that
        // only drops elements ends the iteration (rotations shrink them quadratically).
        if (std::abs(apq) <= 1e-18 * (std::abs(A(p, p)) + std::abs(A(q, q)))) {
          A(p, q) = A(q, p) = 0.0;
          continue;
        }
        rotated = true;
        // The rotation that zeroes a[p][q], with the smaller angle (Golub & Van Loan 8.5.2).
        const double theta = (A(q, q) - A(p, p)) / (2.0 * apq);
        const double t = (theta >= 0.0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1.0));
        const double c = 1.0 / std::sqrt(t * t + 1.0), s = t * c;
        for (int64_t k = 0; k < n; ++k) {
          const double akp = A(k, p), akq = A(k, q);
          A(k, p) = c * akp - s * akq;
          A(k, q) = s * akp + c * akq;
        }
        for (int64_t k = 0; k < n; ++k) {
          const double apk = A(p, k), aqk = A(q, k);
          A(p, k) = c * apk - s * aqk;
          A(q, k) = s * apk + c * aqk;
        }
        for (int64_t k = 0; k < n; ++k) {
          const double vkp = V(k, p), vkq = V(k, q);
          V(k, p) = c * vkp - s * vkq;
          V(k, q) = s * vkp + c * vkq;
        }
        A(p, q) = A(q, p) = 0.0;
      }
    }
    if (!rotated) return true;
  }
  return false;
}

}  // namespace

void eigh(const Array& a, const Array& w, const Array& v) {
  const int64_t G = a.shape()[0], n = a.shape()[1];
  const int64_t s0 = a.strides()[0], s1 = a.strides()[1], s2 = a.strides()[2];
  dispatch_floating(a.dtype(), "reference eigh", [&]<class T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T* pa = static_cast<const T*>(a.raw_data());
      T* pw = static_cast<T*>(w.raw_data());
      T* pv = static_cast<T*>(v.raw_data());
      std::vector<double> m(static_cast<std::size_t>(n * n)), vec(m.size());
      std::vector<int64_t> order(static_cast<std::size_t>(n));
      for (int64_t g = 0; g < G; ++g) {
        // The lower triangle, mirrored.
        for (int64_t i = 0; i < n; ++i) {
          for (int64_t j = 0; j <= i; ++j) {
            const double e = static_cast<double>(pa[g * s0 + i * s1 + j * s2]);
            RENSA_CHECK(std::isfinite(e), ValueError, "eigh: matrix ", g, " of a ", a.shape(),
                        " has a non-finite entry at (", i, ", ", j, ")");
            m[static_cast<std::size_t>(i * n + j)] = m[static_cast<std::size_t>(j * n + i)] = e;
          }
        }
        RENSA_CHECK(jacobi(m, vec, n), ValueError, "eigh: matrix ", g, " of a ", a.shape(), " did not converge");
        std::iota(order.begin(), order.end(), int64_t{0});
        std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
          return m[static_cast<std::size_t>(x * n + x)] < m[static_cast<std::size_t>(y * n + y)];
        });
        for (int64_t k = 0; k < n; ++k) {
          const int64_t src = order[static_cast<std::size_t>(k)];
          pw[g * n + k] = static_cast<T>(m[static_cast<std::size_t>(src * n + src)]);
          for (int64_t i = 0; i < n; ++i)
            pv[(g * n + i) * n + k] = static_cast<T>(vec[static_cast<std::size_t>(i * n + src)]);
        }
      }
    } else {
      RENSA_THROW(DtypeError, "eigh: expected float32 or float64, got ", a.dtype());
    }
  });
}

}  // namespace rensa::backends::reference
