// cpu symmetric eigendecomposition: LAPACK's divide-and-conquer syevd, from the OpenBLAS build
// rensa links (it exports LAPACK; OpenBLAS ships no LAPACKE header here, so the Fortran entry
// points are declared below). One matrix at a time; syevd's BLAS calls run on the OpenMP pool.
#include <cmath>
#include <cstddef>
#include <type_traits>
#include <vector>

#include "src/backends/cpu/kernels.h"

extern "C" {
// Fortran LAPACK with gfortran's hidden lengths of the two character arguments.
void ssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* lda, float* w, float* work,
             const int* lwork, int* iwork, const int* liwork, int* info, std::size_t, std::size_t);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w, double* work,
             const int* lwork, int* iwork, const int* liwork, int* info, std::size_t, std::size_t);
}

namespace rensa::backends::cpu {
namespace {

template <class T>
void syevd(int n, T* a, T* w, T* work, int lwork, int* iwork, int liwork, int* info) {
  if constexpr (std::is_same_v<T, float>) {
    ssyevd_("V", "L", &n, a, &n, w, work, &lwork, iwork, &liwork, info, 1, 1);
  } else {
    dsyevd_("V", "L", &n, a, &n, w, work, &lwork, iwork, &liwork, info, 1, 1);
  }
}

template <class T>
void eigh_typed(const Array& a, const Array& w, const Array& v) {
  const int64_t G = a.shape()[0], n = a.shape()[1];
  if (G == 0 || n == 0) return;
  RENSA_CHECK(n <= 46340, ValueError, "eigh: matrices ", a.shape(), " are too large for LAPACK's int sizes");
  const int64_t s0 = a.strides()[0], s1 = a.strides()[1], s2 = a.strides()[2];
  const T* pa = static_cast<const T*>(a.raw_data());
  T* pw = static_cast<T*>(w.raw_data());
  T* pv = static_cast<T*>(v.raw_data());
  const int ni = static_cast<int>(n);
  std::vector<T> m(static_cast<std::size_t>(n * n));
  // Workspace sizes from a query.
  T work_query{};
  int iwork_query = 0, info = 0;
  syevd<T>(ni, m.data(), pw, &work_query, -1, &iwork_query, -1, &info);
  RENSA_CHECK(info == 0, ValueError, "eigh: LAPACK workspace query for ", a.shape(), " failed (info ", info, ")");
  std::vector<T> work(static_cast<std::size_t>(work_query) + 1);
  std::vector<int> iwork(static_cast<std::size_t>(iwork_query) + 1);
  for (int64_t g = 0; g < G; ++g) {
    // Column-major with uplo 'L' reads m[i + j n] for i >= j: row-major a[g][i][j].
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = j; i < n; ++i) {
        const T e = pa[g * s0 + i * s1 + j * s2];
        RENSA_CHECK(std::isfinite(e), ValueError, "eigh: matrix ", g, " of a ", a.shape(),
                    " has a non-finite entry at (", i, ", ", j, ")");
        m[static_cast<std::size_t>(i + j * n)] = e;
      }
    }
    syevd<T>(ni, m.data(), pw + g * n, work.data(), static_cast<int>(work.size()), iwork.data(),
             static_cast<int>(iwork.size()), &info);
    RENSA_CHECK(info == 0, ValueError, "eigh: matrix ", g, " of a ", a.shape(), " did not converge (LAPACK info ", info,
                ")");
    // Column k of the column-major result is eigenvector k: v[g][i][k] = m[i + k n].
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t k = 0; k < n; ++k) pv[(g * n + i) * n + k] = m[static_cast<std::size_t>(i + k * n)];
    }
  }
}

}  // namespace

void eigh(const Array& a, const Array& w, const Array& v) {
  switch (a.dtype()) {
    case Dtype::float32:
      return eigh_typed<float>(a, w, v);
    case Dtype::float64:
      return eigh_typed<double>(a, w, v);
    default:
      RENSA_THROW(DtypeError, "eigh: expected float32 or float64, got ", a.dtype());
  }
}

}  // namespace rensa::backends::cpu
