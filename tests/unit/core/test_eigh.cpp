// The eigh kernel on both backends: a = v diag(w) v^T, orthonormal v, ascending w, only the lower
// triangle read, repeated eigenvalues, 1x1 and empty batches, and the cpu against the reference.
#include <cmath>
#include <string>
#include <vector>

#include "tests/unit/test_util.h"

using namespace rensa;
using rensa::test::expect_error;
using rensa::test::randn;

namespace {

struct Eig {
  std::vector<double> w, v;
};

Eig run_eigh(const Array& a, Device device) {
  const int64_t g = a.shape()[0], n = a.shape()[1];
  Array w = Array::empty({g, n}, a.dtype(), device), v = Array::empty({g, n, n}, a.dtype(), device);
  get_backend(device).kernels().eigh(a.to(device), w, v);
  return {w.to(Device::cpu()).astype(Dtype::float64).to_vector<double>(),
          v.to(Device::cpu()).astype(Dtype::float64).to_vector<double>()};
}

// (g, n, n) symmetric float64 matrices with entries (b + b^T) / 2 of a random b.
std::vector<double> random_symmetric(int64_t g, int64_t n, uint64_t seed) {
  const auto b = randn({g, n, n}, Dtype::float64, seed).to_vector<double>();
  std::vector<double> a(b.size());
  for (int64_t k = 0; k < g; ++k) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        a[static_cast<std::size_t>((k * n + i) * n + j)] =
            0.5 * (b[static_cast<std::size_t>((k * n + i) * n + j)] + b[static_cast<std::size_t>((k * n + j) * n + i)]);
      }
    }
  }
  return a;
}

// Expects v[k] orthonormal, w[k] ascending and v[k] diag(w[k]) v[k]^T = a[k] within tol (relative
// to the largest entry).
void expect_decomposes(const std::vector<double>& a, const Eig& e, int64_t g, int64_t n, double tol) {
  auto V = [&](int64_t k, int64_t i, int64_t j) { return e.v[static_cast<std::size_t>((k * n + i) * n + j)]; };
  double scale = 1.0;
  for (double x : a) scale = std::max(scale, std::abs(x));
  for (int64_t k = 0; k < g; ++k) {
    for (int64_t i = 0; i + 1 < n; ++i) {
      EXPECT_LE(e.w[static_cast<std::size_t>(k * n + i)], e.w[static_cast<std::size_t>(k * n + i + 1)]);
    }
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double rec = 0.0, dot = 0.0;
        for (int64_t l = 0; l < n; ++l) {
          rec += V(k, i, l) * e.w[static_cast<std::size_t>(k * n + l)] * V(k, j, l);
          dot += V(k, l, i) * V(k, l, j);
        }
        EXPECT_NEAR(rec, a[static_cast<std::size_t>((k * n + i) * n + j)], tol * scale)
            << "matrix " << k << " (" << i << ", " << j << ")";
        EXPECT_NEAR(dot, i == j ? 1.0 : 0.0, tol) << "v^T v, matrix " << k << " (" << i << ", " << j << ")";
      }
    }
  }
}

const Device kDevices[] = {Device::cpu(), Device::reference()};

TEST(Eigh, RandomSymmetricMatricesBothBackendsAndDtypes) {
  const int64_t g = 3, n = 7;
  const auto a = random_symmetric(g, n, 5);
  for (Device d : kDevices) {
    SCOPED_TRACE(std::string(get_backend(d).name()));
    expect_decomposes(a, run_eigh(Array::from_vector(a, {g, n, n}), d), g, n, 1e-12);
    expect_decomposes(a, run_eigh(Array::from_vector(a, {g, n, n}).astype(Dtype::float32), d), g, n, 2e-5);
  }
}

TEST(Eigh, ReadsOnlyTheLowerTriangleOfAnyStrides) {
  const int64_t g = 2, n = 5;
  const auto a = random_symmetric(g, n, 7);
  std::vector<double> lower = a;
  for (int64_t k = 0; k < g; ++k) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = i + 1; j < n; ++j) lower[static_cast<std::size_t>((k * n + i) * n + j)] = 1e6;
    }
  }
  for (Device d : kDevices) {
    SCOPED_TRACE(std::string(get_backend(d).name()));
    expect_decomposes(a, run_eigh(Array::from_vector(lower, {g, n, n}), d), g, n, 1e-12);
    // The transpose of the upper-triangle-garbage matrix, as a strided view, holds the garbage below.
    std::vector<double> upper = lower;
    for (int64_t k = 0; k < g; ++k) {
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          upper[static_cast<std::size_t>((k * n + i) * n + j)] = lower[static_cast<std::size_t>((k * n + j) * n + i)];
        }
      }
    }
    const Array view = Array::from_vector(upper, {g, n, n}).swapaxes(1, 2);
    ASSERT_FALSE(view.is_contiguous());
    expect_decomposes(a, run_eigh(view, d), g, n, 1e-12);
  }
}

TEST(Eigh, RepeatedEigenvalues) {
  // Q diag(1, 1, 1, 3) Q^T with Q a rotation mixing every axis, and the identity itself.
  const double c = std::cos(0.3), s = std::sin(0.3);
  const std::vector<double> q = {c, -s, 0, 0, s, c, 0, 0, 0, 0, c, -s, 0, 0, s, c};
  const std::vector<double> h = {0.5, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, -0.5, 0.5, 0.5, -0.5, -0.5, 0.5, -0.5, -0.5, 0.5};
  const double lam[] = {1.0, 1.0, 1.0, 3.0};
  std::vector<double> m(16, 0.0), a(32, 0.0);
  for (int i = 0; i < 4; ++i) {  // m = q h (orthogonal)
    for (int j = 0; j < 4; ++j) {
      for (int l = 0; l < 4; ++l) m[i * 4 + j] += q[i * 4 + l] * h[l * 4 + j];
    }
  }
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      for (int l = 0; l < 4; ++l) a[i * 4 + j] += m[i * 4 + l] * lam[l] * m[j * 4 + l];
      a[16 + i * 4 + j] = i == j ? 1.0 : 0.0;
    }
  }
  for (Device d : kDevices) {
    SCOPED_TRACE(std::string(get_backend(d).name()));
    const Eig e = run_eigh(Array::from_vector(a, {2, 4, 4}), d);
    expect_decomposes(a, e, 2, 4, 1e-12);
    for (int i = 0; i < 4; ++i) {
      EXPECT_NEAR(e.w[static_cast<std::size_t>(i)], lam[i], 1e-13);
      EXPECT_NEAR(e.w[static_cast<std::size_t>(4 + i)], 1.0, 1e-15);
    }
  }
}

TEST(Eigh, OneByOneZeroAndEmpty) {
  for (Device d : kDevices) {
    SCOPED_TRACE(std::string(get_backend(d).name()));
    const Eig one = run_eigh(Array::from_vector(std::vector<double>{-2.5, 4.0}, {2, 1, 1}), d);
    EXPECT_EQ(one.w, (std::vector<double>{-2.5, 4.0}));
    EXPECT_EQ(std::abs(one.v[0]), 1.0);
    EXPECT_EQ(std::abs(one.v[1]), 1.0);
    const std::vector<double> zeros(9, 0.0);
    expect_decomposes(zeros, run_eigh(Array::from_vector(zeros, {1, 3, 3}), d), 1, 3, 1e-15);
    EXPECT_TRUE(run_eigh(Array::zeros({0, 3, 3}, Dtype::float64), d).w.empty());
    EXPECT_TRUE(run_eigh(Array::zeros({2, 0, 0}, Dtype::float32), d).v.empty());
  }
}

TEST(Eigh, CpuMatchesReference) {
  const int64_t g = 4, n = 16;
  const auto a = random_symmetric(g, n, 11);
  const Eig cpu = run_eigh(Array::from_vector(a, {g, n, n}), Device::cpu());
  const Eig ref = run_eigh(Array::from_vector(a, {g, n, n}), Device::reference());
  for (std::size_t i = 0; i < cpu.w.size(); ++i) EXPECT_NEAR(cpu.w[i], ref.w[i], 1e-12);
  // Eigenvectors agree up to sign (the eigenvalues of a random matrix are distinct).
  for (int64_t k = 0; k < g; ++k) {
    for (int64_t j = 0; j < n; ++j) {
      double dot = 0.0;
      for (int64_t i = 0; i < n; ++i) {
        dot +=
            cpu.v[static_cast<std::size_t>((k * n + i) * n + j)] * ref.v[static_cast<std::size_t>((k * n + i) * n + j)];
      }
      EXPECT_NEAR(std::abs(dot), 1.0, 1e-10) << "matrix " << k << " vector " << j;
    }
  }
}

TEST(Eigh, LargerMatricesOnTwoThreads) {
  // syevd's BLAS calls may split among OpenMP threads from this size on.
  const int saved = get_num_threads();
  set_num_threads(2);
  const int64_t g = 2, n = 96;
  const auto a = random_symmetric(g, n, 13);
  expect_decomposes(a, run_eigh(Array::from_vector(a, {g, n, n}), Device::cpu()), g, n, 1e-11);
  set_num_threads(saved);
}

TEST(Eigh, NonFiniteEntryAndBadDtype) {
  std::vector<double> a = {1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, std::nan(""), 1.0};
  for (Device d : kDevices) {
    SCOPED_TRACE(std::string(get_backend(d).name()));
    expect_error<ValueError>(
        [&] {
          run_eigh(Array::from_vector(a, {1, 3, 3}), d);
        },
        {"eigh", "matrix 0", "(1, 3, 3)", "non-finite", "(2, 1)"});
    expect_error<DtypeError>([&] { run_eigh(Array::zeros({1, 2, 2}, Dtype::float16), d); }, {"eigh", "float16"});
  }
}

}  // namespace
