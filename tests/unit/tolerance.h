#pragma once
// How far the cpu backend may differ from the reference backend, in one place. Both compute the same
// math in the same dtype, in different orders (blocked and vectorized sums, FMA or not, oneDNN's
// kernels for the CPU's instruction set, vectorized exp and log against libm), so neither result is
// exact and they may differ by the sum of their rounding errors:
// - a formula evaluated elementwise: a few ulps per operation on its longest path; kFormulaUlps of
//   them bound any of rensa's formulas (a chain of transcendental functions and divisions);
// - a sum of n rounded terms: at most n * u * sum |terms| each in the worst case (Higham, Accuracy
//   and Stability of Numerical Algorithms, 2nd ed., eq. 4.4), and with rounding errors of random
//   sign at most lambda * sqrt(n) * u * sum |terms| with probability 1 - 2 exp(-lambda^2 / 2)
//   (Higham and Mary, SIAM J. Sci. Comput. 41(5), 2019); the worst case is far too loose to catch a
//   wrong formula in a long sum, so the tolerance takes the probabilistic bound with lambda = 8 for
//   each side. A test cannot see the terms, and their sum of magnitudes exceeds |output| exactly
//   where terms cancel, so the absolute part is scaled by the output's root mean square (at least
//   1, as the tests' inputs are of order 1): a normwise bound, as LAPACK's tests use.
// A function case states its accumulation: the length of the longest sum behind one output element
// (a matmul's inner dimension, a reduction's size, a convolution's C*kh*kw); 1 for elementwise ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "rensa/rensa.h"

namespace rensa::test {

/// The unit of the last place at 1 of a floating dtype (2^-23 for float32).
inline double dtype_epsilon(Dtype dtype) {
  switch (dtype) {
    case Dtype::float64:
      return 0x1p-52;
    case Dtype::float16:
      return 0x1p-10;
    case Dtype::bfloat16:
      return 0x1p-7;
    default:
      return 0x1p-23;
  }
}

/// Elementwise |got - want| <= rtol * |want| + atol * scale, where scale is the root mean square of
/// `want` (at least 1) when `normwise` is set (sums), 1 otherwise.
struct Tolerance {
  double rtol = 0;
  double atol = 0;
  bool normwise = false;
};

/// Ulps two correct elementwise formulas may differ by along one output's path.
inline constexpr double kFormulaUlps = 64;
/// lambda of the probabilistic sum bound: two sides of lambda * sqrt(n) * u each are
/// lambda * sqrt(n) * eps together (u = eps / 2).
inline constexpr double kSumLambda = 8;

/// The tolerance between two correct computations of a function in `dtype` whose outputs are sums of
/// at most `accumulation` terms (1: elementwise).
inline Tolerance reference_tolerance(Dtype dtype, int64_t accumulation = 1) {
  const double eps = dtype_epsilon(dtype);
  const double n = static_cast<double>(std::max<int64_t>(accumulation, 1));
  const double rtol = eps * (kFormulaUlps + (n > 1 ? kSumLambda * std::sqrt(n) : 0.0));
  return {rtol, rtol, n > 1};
}

/// The tolerance of a function whose 16-bit float (float16, bfloat16) results both backends compute
/// in float32 and round once to `dtype` (matrix products, convolutions, pooling, reductions,
/// elementwise formulas): the float32 results differ by at most reference_tolerance(float32,
/// accumulation), and each side's final rounding moves its result by at most half an ulp of `dtype`,
/// so together by at most eps(dtype) * |result| more. reference_tolerance(dtype, accumulation) would
/// instead take every rounding in the 16-bit type (kFormulaUlps of them: 6% for float16), far too
/// loose for a path that rounds once. Other dtypes: reference_tolerance.
inline Tolerance rounded_once_tolerance(Dtype dtype, int64_t accumulation = 1) {
  if (dtype != Dtype::float16 && dtype != Dtype::bfloat16) return reference_tolerance(dtype, accumulation);
  Tolerance t = reference_tolerance(Dtype::float32, accumulation);
  t.rtol += dtype_epsilon(dtype);
  return t;
}

/// Ulps of the compute type by which the cpu's and the reference's result of one op of the kernel
/// tables (a unary or binary op, one step of a scan) may differ for the same inputs. The reference
/// evaluates the op in double (its special functions in long double) and rounds once: within half
/// an ulp of the exact value. The cpu evaluates it in the compute type (float for float32 and the
/// 16-bit types, double for float64) as one libm or special_functions.h evaluation, taken within 4
/// ulps (libm's float and double functions are within a few, glibc's manual, "Errors in Math
/// Functions"; the series of special_functions.h are summed to below an ulp), its own final
/// rounding (half an ulp) and at most three more roundings of operands or parameters around it
/// (p0 x + p1, a scale, a conversion: an ulp each, of an intermediate no larger than |result| + 1):
/// 1/2 + 4 + 1/2 + 3 = 8.
inline constexpr double kKernelUlps = 8;

/// The tolerance of an op of the kernel tables whose results are stored in `dtype`, evaluated
/// `steps` times in a chain (a scan of that length, each step reading the stored result of the one
/// before, so the differences of the steps add up; 1 for unary and binary ops): kKernelUlps of the
/// compute type, relative to |result| and absolute (a result near 0 from operands of order 1), and
/// for the 16-bit types, whose results both backends round once from the compute type, eps(dtype)
/// of |result| more (half an ulp each), per step. Exact (0) for integer and bool results.
inline Tolerance kernel_tolerance(Dtype dtype, int64_t steps = 1) {
  if (dtype != Dtype::float64 && dtype != Dtype::float32 && dtype != Dtype::float16 && dtype != Dtype::bfloat16) {
    return {};
  }
  const double compute = dtype_epsilon(dtype == Dtype::float64 ? Dtype::float64 : Dtype::float32);
  const bool sixteen = dtype == Dtype::float16 || dtype == Dtype::bfloat16;
  const double n = static_cast<double>(std::max<int64_t>(steps, 1));
  const double atol = n * kKernelUlps * compute;
  return {atol + (sixteen ? n * dtype_epsilon(dtype) : 0.0), atol, false};
}

/// The tolerance of a reduction (sum, product, maximum) of at most `accumulation` terms that both
/// backends accumulate in double and round once to `dtype` (the kernel tables' reduce, for every
/// floating dtype): the double results differ by at most reference_tolerance(float64,
/// accumulation), and each side's final rounding moves its result by at most half an ulp of
/// `dtype` (none for float64). Exact (0) for integer and bool results.
inline Tolerance double_accumulated_tolerance(Dtype dtype, int64_t accumulation) {
  if (dtype != Dtype::float64 && dtype != Dtype::float32 && dtype != Dtype::float16 && dtype != Dtype::bfloat16) {
    return {};
  }
  Tolerance t = reference_tolerance(Dtype::float64, accumulation);
  if (dtype != Dtype::float64) t.rtol += dtype_epsilon(dtype);
  return t;
}

/// The tolerance of `steps` computations in a chain, each from the stored results of the one before
/// (an optimizer's updates of a parameter and its state), each within `step`: the differences of
/// the steps add up where each step passes on a difference of its inputs at most unchanged (a
/// parameter's update p - lr u: 1; a state's decay: beta < 1; a state's part of u scaled by the
/// learning rate), so `steps` times `step`.
inline Tolerance chained_tolerance(Tolerance step, int64_t steps) {
  const double n = static_cast<double>(std::max<int64_t>(steps, 1));
  step.rtol *= n;
  step.atol *= n;
  return step;
}

/// Compares `got` with `want` (same shape) within `tol`; NaNs must match NaNs. On failure the
/// message names the worst element's index, both values, its tolerance and how many elements fail.
inline ::testing::AssertionResult close_within(const Array& got, const Array& want, const Tolerance& tol) {
  if (got.shape() != want.shape()) {
    std::ostringstream os;
    os << "shapes differ: " << got.shape() << " against " << want.shape();
    return ::testing::AssertionFailure() << os.str();
  }
  const auto g = got.to(Device::cpu()).astype(Dtype::float64).to_vector<double>();
  const auto w = want.to(Device::cpu()).astype(Dtype::float64).to_vector<double>();
  double scale = 1;
  if (tol.normwise && !w.empty()) {
    double sq = 0;
    for (double v : w) {
      if (std::isfinite(v)) sq += v * v;
    }
    scale = std::max(std::sqrt(sq / static_cast<double>(w.size())), 1.0);
  }
  std::size_t bad = 0, worst = 0;
  double worst_ratio = -1;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const double bound = tol.rtol * std::abs(w[i]) + tol.atol * scale;
    double ratio;
    if (std::isnan(w[i]) || std::isnan(g[i])) {
      ratio = std::isnan(w[i]) && std::isnan(g[i]) ? 0 : INFINITY;
    } else if (std::isinf(w[i]) || std::isinf(g[i])) {
      ratio = g[i] == w[i] ? 0 : INFINITY;
    } else {
      const double err = std::abs(g[i] - w[i]);
      ratio = err == 0 ? 0 : (bound > 0 ? err / bound : INFINITY);
    }
    if (ratio > 1) ++bad;
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst = i;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  // The worst element's index along each axis (row-major).
  std::vector<int64_t> index(want.shape().size());
  std::size_t rest = worst;
  for (std::size_t d = index.size(); d-- > 0;) {
    const auto extent = static_cast<std::size_t>(want.shape()[d]);
    index[d] = static_cast<int64_t>(rest % extent);
    rest /= extent;
  }
  std::ostringstream os;
  os.precision(9);
  os << bad << " of " << w.size() << " elements differ; worst at (";
  for (std::size_t d = 0; d < index.size(); ++d) os << (d ? ", " : "") << index[d];
  os << "): " << g[worst] << " against " << w[worst] << ", difference " << std::abs(g[worst] - w[worst])
     << ", tolerance " << tol.rtol * std::abs(w[worst]) + tol.atol * scale << " (rtol " << tol.rtol << ", atol "
     << tol.atol;
  if (tol.normwise) os << " x output rms " << scale;
  os << ")";
  return ::testing::AssertionFailure() << os.str();
}

}  // namespace rensa::test
