#pragma once
// Helpers shared by the unit tests.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "rensa/rensa.h"
#include "rensa/testing/gradient_check.h"
#include "tests/unit/tolerance.h"

namespace rensa::test {

/// Random normal array (seeded) of a floating dtype on `device`.
inline Array randn(const Shape& shape, Dtype dtype = Dtype::float64, uint64_t seed = 1, Device device = Device::cpu()) {
  Generator g(seed);
  return random::normal(shape, 0.0, 1.0, dtype, device, &g);
}

/// Random uniform array in [lo, hi).
inline Array randu(const Shape& shape, double lo, double hi, Dtype dtype = Dtype::float64, uint64_t seed = 1,
                   Device device = Device::cpu()) {
  Generator g(seed);
  return random::uniform(shape, lo, hi, dtype, device, &g);
}

/// Runs `f` on the cpu and on the reference backend with the same inputs and expects equal outputs
/// within `tol` (see tolerance.h); a failure names the output, the worst element and the tolerance.
inline void expect_cpu_matches_reference(const std::function<std::vector<Variable>(const std::vector<Variable>&)>& f,
                                         const std::vector<Array>& inputs, const Tolerance& tol) {
  std::vector<Variable> on_cpu, on_ref;
  for (const auto& a : inputs) {
    on_cpu.emplace_back(a.is_null() ? a : a.to(Device::cpu()));
    on_ref.emplace_back(a.is_null() ? a : a.to(Device::reference()));
  }
  auto yc = f(on_cpu);
  auto yr = f(on_ref);
  ASSERT_EQ(yc.size(), yr.size());
  for (std::size_t i = 0; i < yc.size(); ++i) {
    ASSERT_EQ(yc[i].shape(), yr[i].shape()) << "output " << i;
    ASSERT_EQ(yc[i].dtype(), yr[i].dtype()) << "output " << i;
    EXPECT_TRUE(close_within(yc[i].array(), yr[i].array(), tol))
        << "output " << i << " of shape " << yc[i].shape() << ", " << yc[i].dtype() << ", cpu against reference";
  }
}

/// The same with the tolerance of outputs that are sums of at most `accumulation` terms in the first
/// floating input's dtype (reference_tolerance).
inline void expect_cpu_matches_reference(const std::function<std::vector<Variable>(const std::vector<Variable>&)>& f,
                                         const std::vector<Array>& inputs, int64_t accumulation = 1) {
  Dtype dtype = Dtype::float32;
  for (const auto& a : inputs) {
    if (!a.is_null() && is_floating(a.dtype())) {
      dtype = a.dtype();
      break;
    }
  }
  expect_cpu_matches_reference(f, inputs, reference_tolerance(dtype, accumulation));
}

/// A lone floating-point tolerance would silently become an accumulation length (1e-4 -> 0, the
/// elementwise tolerance): refused at compile time; pass an accumulation, a Tolerance or (rtol, atol).
template <class T>
  requires std::is_floating_point_v<T>
void expect_cpu_matches_reference(const std::function<std::vector<Variable>(const std::vector<Variable>&)>& f,
                                  const std::vector<Array>& inputs, T accumulation) = delete;

/// The same with explicit NumPy-style tolerances: |cpu - reference| <= atol + rtol * |reference|
/// (0, 0 asks for equal results).
inline void expect_cpu_matches_reference(const std::function<std::vector<Variable>(const std::vector<Variable>&)>& f,
                                         const std::vector<Array>& inputs, double rtol, double atol) {
  expect_cpu_matches_reference(f, inputs, Tolerance{rtol, atol, false});
}

/// Expects `fn` to throw E with a message containing every one of `parts`.
template <class E, class Fn>
void expect_error(Fn&& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "message: " << msg << "\nmissing: " << p;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

/// Expects `fn` to throw E with a message containing `part` (a string; a braced list of several
/// picks the overload above, as `part`'s type is deduced).
template <class E, class Fn, class S>
  requires std::is_convertible_v<const S&, std::string>
void expect_error(Fn&& fn, const S& part) {
  expect_error<E>(std::forward<Fn>(fn), std::vector<std::string>{std::string(part)});
}

}  // namespace rensa::test
