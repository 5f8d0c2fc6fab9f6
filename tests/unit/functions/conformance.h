#pragma once
// The checks every differentiable function gets, from one description of the function: gradients
// (first order, and second where supported) on contiguous, non-contiguous, broadcast and size-0
// inputs, float32 in -> float32 out, and the cpu backend against the reference backend on inputs
// large enough for the threaded loops. A family's test file lists its functions as FunctionCases
// and calls expect_conforms on each.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tests/unit/test_util.h"

namespace rensa::test {

struct FunctionCase {
  std::string name;
  testing::TestFunction f;
  /// Input shapes; every input is floating and drawn uniformly from [lo, hi) unless `make_input`
  /// says otherwise.
  std::vector<Shape> shapes;
  double lo = -2.0, hi = 2.0;
  /// Points where f is not differentiable: inputs are kept at least 0.1 away from them.
  std::vector<double> kinks = {};
  /// Optional custom input i of a given shape (integer labels, SPD matrices, ...); return a null
  /// Array to fall back to the uniform draw.
  std::function<Array(std::size_t i, const Shape& shape, Dtype dtype, uint64_t seed)> make_input = {};
  bool double_backward = true;
  /// Size-0 inputs: axis 0 of every input set to 0 (off when the function needs a nonempty axis 0).
  bool size_zero = true;
  /// Broadcast inputs: each input with a leading axis > 1 is built inside f by broadcasting a
  /// leading axis of 1 (off when f's inputs must not alias, such as in-place-looking updates).
  bool broadcast = true;
  /// Inputs that only take constants (labels, indices): not perturbed.
  std::vector<bool> no_grads = {};
  /// Inputs whose axis 0 is the batch axis, set to 0 in the size-0 check and enlarged in the
  /// cpu-vs-reference check. Empty: those with the first input's rank and leading extent.
  std::vector<bool> batched = {};
  /// Leading axis of the batched inputs in the cpu-vs-reference check (large enough for the
  /// threaded loops; 0: chosen from the first input's shape).
  int64_t big_leading = 0;
  bool float32_keeps_dtype = true;
  testing::CheckOptions options = {};
  /// The length of the longest sum behind one output element in the cpu-vs-reference check (a
  /// matmul's inner dimension, a reduction's size, a convolution's C * kh * kw; 1 for elementwise
  /// functions): it sets that check's tolerance (reference_tolerance in tests/unit/tolerance.h).
  int64_t accumulation = 1;
};

namespace conformance_detail {

inline bool is_constant(const FunctionCase& c, std::size_t i) {
  return i < c.no_grads.size() && c.no_grads[i];
}

inline std::vector<Array> make_inputs(const FunctionCase& c, const std::vector<Shape>& shapes, Dtype dtype,
                                      uint64_t seed) {
  std::vector<Array> xs;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    Array a;
    if (c.make_input) a = c.make_input(i, shapes[i], dtype, seed + i);
    if (a.is_null()) {
      auto v = randu(shapes[i], c.lo, c.hi, Dtype::float64, seed + 17 * i).to_vector<double>();
      for (double& e : v) {
        for (double k : c.kinks) {
          if (std::abs(e - k) < 0.1) e = k + (e < k ? -0.1 : 0.1) + (e - k);
        }
      }
      a = Array::from_vector(v, shapes[i]).astype(dtype);
    }
    xs.push_back(a);
  }
  return xs;
}

inline bool is_batched(const FunctionCase& c, std::size_t i) {
  if (!c.batched.empty()) return i < c.batched.size() && c.batched[i];
  const Shape& s = c.shapes[i];
  const Shape& first = c.shapes[0];
  return !s.empty() && s.size() == first.size() && s[0] == first[0];
}

// The case's shapes with axis 0 of the batched inputs set to n.
inline std::vector<Shape> with_leading(const FunctionCase& c, int64_t n) {
  std::vector<Shape> out = c.shapes;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (is_batched(c, i)) out[i][0] = n;
  }
  return out;
}

inline testing::CheckOptions options_for(const FunctionCase& c) {
  testing::CheckOptions o = c.options;
  o.no_grads = c.no_grads;
  return o;
}

// Random output gradients of f's outputs at xs (for check_double_backward).
inline std::vector<Array> output_grads(const FunctionCase& c, const std::vector<Array>& xs) {
  std::vector<Variable> vs(xs.begin(), xs.end());
  std::vector<Array> gys;
  uint64_t seed = 101;
  for (const auto& y : c.f(vs)) gys.push_back(randn(y.shape(), y.dtype(), seed++));
  return gys;
}

}  // namespace conformance_detail

/// Runs every check on `c`; failures are reported with the case's name and the variant.
inline void expect_conforms(const FunctionCase& c) {
  namespace cd = conformance_detail;
  SCOPED_TRACE(c.name);
  const auto opts = cd::options_for(c);
  const auto xs = cd::make_inputs(c, c.shapes, Dtype::float64, 1);
  {
    SCOPED_TRACE("contiguous");
    EXPECT_NO_THROW(testing::check_backward(c.f, xs, {}, opts));
  }
  {
    SCOPED_TRACE("non-contiguous");
    std::vector<Array> nc;
    for (const auto& x : xs) nc.push_back(testing::make_noncontiguous(x));
    EXPECT_NO_THROW(testing::check_backward(c.f, nc, {}, opts));
  }
  if (c.broadcast) {
    SCOPED_TRACE("broadcast");
    std::vector<Shape> small = c.shapes;
    bool any = false;
    for (std::size_t i = 0; i < small.size(); ++i) {
      if (!cd::is_constant(c, i) && !small[i].empty() && small[i][0] > 1) {
        small[i][0] = 1;
        any = true;
      }
    }
    if (any) {
      const auto shapes = c.shapes;
      testing::TestFunction fb = [&c, shapes](const std::vector<Variable>& v) {
        std::vector<Variable> full;
        for (std::size_t i = 0; i < v.size(); ++i) full.push_back(functions::broadcast_to(v[i], shapes[i]));
        return c.f(full);
      };
      EXPECT_NO_THROW(testing::check_backward(fb, cd::make_inputs(c, small, Dtype::float64, 3), {}, opts));
    }
  }
  if (c.size_zero) {
    SCOPED_TRACE("size 0");
    const auto empty = cd::make_inputs(c, cd::with_leading(c, 0), Dtype::float64, 5);
    EXPECT_NO_THROW(testing::check_backward(c.f, empty, {}, opts));
  }
  if (c.double_backward) {
    SCOPED_TRACE("double backward");
    EXPECT_NO_THROW(testing::check_double_backward(c.f, xs, cd::output_grads(c, xs), {}, opts));
  }
  if (c.float32_keeps_dtype) {
    SCOPED_TRACE("float32");
    const auto x32 = cd::make_inputs(c, c.shapes, Dtype::float32, 7);
    std::vector<Variable> vs(x32.begin(), x32.end());
    for (const auto& y : c.f(vs)) {
      if (is_floating(y.dtype())) {
        EXPECT_EQ(y.dtype(), Dtype::float32);
      }
    }
  }
  {
    SCOPED_TRACE("cpu against reference");
    int64_t lead = c.big_leading;
    if (lead == 0) {
      int64_t rest = 1;
      if (!c.shapes.empty()) {
        for (std::size_t d = 1; d < c.shapes[0].size(); ++d) rest *= std::max<int64_t>(c.shapes[0][d], 1);
      }
      lead = std::max<int64_t>(2, 70000 / rest + 1);
    }
    const auto big = cd::make_inputs(c, cd::with_leading(c, lead), Dtype::float32, 9);
    expect_cpu_matches_reference(c.f, big, c.accumulation);
  }
}

/// A FunctionCase's f from a function of one variable.
inline testing::TestFunction unary_fn(std::function<Variable(const Variable&)> f) {
  return [f](const std::vector<Variable>& v) { return std::vector<Variable>{f(v[0])}; };
}

/// A FunctionCase's f from a function of two variables.
inline testing::TestFunction binary_fn(std::function<Variable(const Variable&, const Variable&)> f) {
  return [f](const std::vector<Variable>& v) { return std::vector<Variable>{f(v[0], v[1])}; };
}

}  // namespace rensa::test
