// The cpu backend's kernels against the reference backend, through the Array API (astype, assign,
// fill) and the kernel tables (unary, binary, reduce, scan, the recurrent cells): every dtype and
// op, strided, transposed, offset and broadcast (stride-0) layouts, size-0 and 0-d arrays, sizes on
// both sides of the parallel threshold, and 1 and 2 threads. Outputs are compared over their whole
// storage, so a kernel that writes outside a strided output view is caught too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "rensa/rensa.h"
#include "tests/unit/test_util.h"

using namespace rensa;

namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

const std::vector<Dtype> kAllDtypes = {Dtype::float32, Dtype::float64, Dtype::float16, Dtype::bfloat16,
                                       Dtype::int32,   Dtype::int64,   Dtype::uint8,   Dtype::bool_};
const std::vector<Dtype> kFloatDtypes = {Dtype::float32, Dtype::float64, Dtype::float16, Dtype::bfloat16};

const KernelTable& cpu_kernels() {
  return get_backend(Device::cpu()).kernels();
}
const KernelTable& ref_kernels() {
  return get_backend(Device::reference()).kernels();
}

// Sizes below and above the 32768-element threshold of the parallel loops.
const Shape kSmall{3, 4, 5};
const Shape kBig{26, 33, 40};  // 34320 elements

// ---- data ----------------------------------------------------------------------------------------

// `n` uniform values in [lo, hi); whole numbers when `integral`.
std::vector<double> draw(int64_t n, double lo, double hi, uint64_t seed, bool integral = false) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& e : v) e = integral ? std::floor(u(rng)) : u(rng);
  return v;
}

// A contiguous cpu array of dtype `d` holding `v` (converted by C++ casts, independently of the kernels).
Array from_doubles(const std::vector<double>& v, const Shape& shape, Dtype d) {
  return dispatch(d, [&]<class T>() {
    std::vector<T> t;
    t.reserve(v.size());
    for (double e : v) {
      if constexpr (std::is_same_v<T, bool>)
        t.push_back(e != 0.0);
      else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
        t.push_back(T(static_cast<float>(e)));
      else
        t.push_back(static_cast<T>(e));
    }
    return Array::from_vector(t, shape);
  });
}

// Typical values of a dtype: small whole numbers for integers (uint8: non-negative), normal for floats.
std::vector<double> typical(Dtype d, int64_t n, uint64_t seed) {
  if (d == Dtype::bool_) return draw(n, 0.0, 2.0, seed, true);
  if (d == Dtype::uint8) return draw(n, 0.0, 16.0, seed, true);
  if (is_integral(d)) return draw(n, -20.0, 20.0, seed, true);
  return draw(n, -3.0, 3.0, seed);
}

// ---- layouts -------------------------------------------------------------------------------------

// A way to lay out an array of shape s: the contiguous base to allocate and the view of it.
struct Layout {
  const char* name;
  std::function<Shape(const Shape&)> base;
  std::function<Array(const Array&, const Shape&)> view;
};

Shape reversed(const Shape& s) {
  Shape r;
  for (std::size_t i = s.size(); i-- > 0;) r.push_back(s[i]);
  return r;
}

const Layout kContiguous{"contiguous", [](const Shape& s) { return s; },
                         [](const Array& a, const Shape&) { return a; }};
const Layout kStrided{"strided",
                      [](const Shape& s) {
                        Shape b = s;
                        if (!b.empty()) b[b.size() - 1] *= 2;
                        return b;
                      },
                      [](const Array& a, const Shape& s) {
                        return s.empty() ? a : a.slice(static_cast<int64_t>(s.size()) - 1, 0, std::nullopt, 2);
                      }};
const Layout kTransposed{"transposed", [](const Shape& s) { return reversed(s); },
                         [](const Array& a, const Shape&) { return a.transpose(); }};
const Layout kOffset{"offset",
                     [](const Shape& s) {
                       Shape b = s;
                       if (!b.empty()) b[0] += 1;
                       return b;
                     },
                     [](const Array& a, const Shape& s) { return s.empty() ? a : a.slice(0, 1, std::nullopt); }};
// Stride 0 along the middle axis.
const Layout kBroadcast{"broadcast",
                        [](const Shape& s) {
                          Shape b = s;
                          if (!b.empty()) b[b.size() / 2] = 1;
                          return b;
                        },
                        [](const Array& a, const Shape& s) { return a.broadcast_to(s); }};
// Stride 0 along every axis.
const Layout kScalar{"scalar", [](const Shape&) { return Shape{}; },
                     [](const Array& a, const Shape& s) { return a.broadcast_to(s); }};

// Negative strides: the first and last axes run backwards.
const Layout kReversed{"reversed", [](const Shape& s) { return s; },
                       [](const Array& a, const Shape& s) {
                         if (s.empty()) return a;
                         return a.slice(0, std::nullopt, std::nullopt, -1)
                             .slice(static_cast<int64_t>(s.size()) - 1, std::nullopt, std::nullopt, -1);
                       }};

const std::vector<const Layout*> kInputLayouts = {&kContiguous, &kStrided,   &kTransposed, &kOffset,
                                                  &kReversed,   &kBroadcast, &kScalar};
const std::vector<const Layout*> kOutputLayouts = {&kContiguous, &kStrided, &kTransposed, &kReversed};

// The same array on the cpu and on the reference backend, in the same layout.
struct Pair {
  Array cpu, ref;
};

Pair make_input(const Layout& layout, const Shape& shape, Dtype d, const std::vector<double>& base_values) {
  const Shape bs = layout.base(shape);
  Array host = from_doubles(base_values, bs, d);
  return {layout.view(host, shape), layout.view(host.to(Device::reference()), shape)};
}

Pair make_input(const Layout& layout, const Shape& shape, Dtype d, uint64_t seed) {
  return make_input(layout, shape, d, typical(d, layout.base(shape).numel(), seed));
}

// Zero-filled outputs (the gaps of strided views stay zero unless a kernel writes out of bounds).
Pair make_output(const Layout& layout, const Shape& shape, Dtype d) {
  const Shape bs = layout.base(shape);
  return {layout.view(Array::zeros(bs, d, Device::cpu()), shape),
          layout.view(Array::zeros(bs, d, Device::reference()), shape)};
}

// A flat view of an array's whole storage.
Array whole(const Array& a) {
  const auto n = static_cast<int64_t>(a.storage()->nbytes() / a.itemsize());
  return Array(a.storage(), Shape{n}, Shape{1}, 0, a.dtype());
}

// Expects the cpu and reference results equal within `tol` (|cpu - reference| <= rtol |reference| +
// atol, atol times the storage's root mean square (at least 1) when normwise; NaNs equal) over
// their whole storage. The default: bit for bit.
void expect_same(const Pair& out, const std::string& what, const test::Tolerance& tol = {}) {
  ASSERT_EQ(out.cpu.shape(), out.ref.shape()) << what;
  ASSERT_EQ(out.cpu.dtype(), out.ref.dtype()) << what;
  EXPECT_TRUE(test::close_within(whole(out.cpu), whole(out.ref), tol)) << what;
}

std::string describe(const char* layout, const Shape& shape, Dtype d) {
  return std::string(layout) + " " + to_string(shape) + " " + std::string(dtype_name(d));
}

// ---- 1 and 2 threads -----------------------------------------------------------------------------

class KernelsThreads : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    saved_ = get_num_threads();
    set_num_threads(GetParam());
  }
  void TearDown() override { set_num_threads(saved_); }

 private:
  int saved_ = 1;
};

std::string unary_name(UnaryOp op) { return std::string(op_name(op)); }
std::string binary_name(BinaryOp op) { return std::string(op_name(op)); }
std::string reduce_name(ReduceOp op) { return std::string(op_name(op)); }

// Parameters exercised per unary op (p0, p1).
std::vector<std::pair<double, double>> unary_params(UnaryOp op) {
  switch (op) {
    case UnaryOp::leaky_relu:
      return {{0.2, 0.0}};
    case UnaryOp::elu:
      return {{1.3, 0.0}};
    case UnaryOp::pow_scalar:
      return {{2.0, 0.0}, {3.0, 0.0}, {0.5, 0.0}, {-1.5, 0.0}, {0.0, 0.0}};
    case UnaryOp::clip:
      return {{-0.5, 0.75}, {1.0, 1.0}};
    case UnaryOp::affine:
      return {{1.5, -0.25}, {-2.0, 3.0}};
    default:
      return {{0.0, 0.0}};
  }
}

// Finite values with the special ones in front.
std::vector<double> with_specials(int64_t n, uint64_t seed) {
  auto v = draw(n, -4.0, 4.0, seed);
  const double specials[] = {0.0, -0.0, kInf, -kInf, kNan, 1.0, -1.0, 0.5, 100.0, -100.0, 1e-30, 700.0, -700.0};
  for (std::size_t i = 0; i < std::size(specials) && i < v.size(); ++i) v[i] = specials[i];
  return v;
}

}  // namespace

// ---- copy / astype / assign ----------------------------------------------------------------------

TEST(Kernels, AstypeEveryDtypePairAndLayout) {
  for (Dtype src : kAllDtypes) {
    for (Dtype dst : kAllDtypes) {
      // Values every destination represents (no out-of-range float-to-integer casts).
      const bool nonnegative = src == Dtype::uint8 || dst == Dtype::uint8;
      for (const Layout* layout : kInputLayouts) {
        for (const Shape& shape : {kSmall, Shape{}, Shape{2, 0, 3}}) {
          const int64_t n = layout->base(shape).numel();
          Pair in = make_input(*layout, shape, src, draw(n, nonnegative ? 0.0 : -100.0, 200.0, 7));
          Pair out{in.cpu.astype(dst), in.ref.astype(dst)};
          EXPECT_EQ(out.cpu.dtype(), dst);
          EXPECT_TRUE(out.cpu.is_contiguous());
          expect_same(out, "astype " + describe(layout->name, shape, src) + " -> " + std::string(dtype_name(dst)));
        }
      }
    }
  }
}

TEST(Kernels, AssignIntoViews) {
  // copy with a strided/transposed destination and a broadcast source, converting dtypes.
  for (Dtype src : {Dtype::float64, Dtype::float16, Dtype::int32, Dtype::bool_}) {
    for (Dtype dst : {Dtype::float32, Dtype::bfloat16, Dtype::int64, Dtype::uint8}) {
      for (const Layout* out_layout : kOutputLayouts) {
        for (const Layout* in_layout : {&kContiguous, &kBroadcast, &kScalar, &kTransposed}) {
          for (const Shape& shape : {kSmall, Shape{2, 0, 3}}) {
            Pair in = make_input(*in_layout, shape, src, draw(in_layout->base(shape).numel(), 0.0, 120.0, 9));
            Pair out = make_output(*out_layout, shape, dst);
            out.cpu.assign(in.cpu);
            out.ref.assign(in.ref);
            expect_same(
                out, "assign " + describe(in_layout->name, shape, src) + " into " + describe(out_layout->name, shape, dst));
          }
        }
      }
    }
  }
}

TEST(Kernels, SixteenBitRoundingAndBool) {
  for (Device dev : {Device::cpu(), Device::reference()}) {
    SCOPED_TRACE(to_string(dev));
    auto convert = [&](const std::vector<double>& v, Dtype from, Dtype to) {
      return from_doubles(v, Shape{static_cast<int64_t>(v.size())}, from).to(dev).astype(to).to_vector<double>();
    };
    const double e11 = std::ldexp(1.0, -11), e10 = std::ldexp(1.0, -10);
    // float16: ties to even, overflow to inf at 65520, subnormals, NaN and signed zero kept.
    const std::vector<double> h_in = {1.0 + e11,
                                      1.0 + 3 * e11,
                                      65504.0,
                                      65519.0,
                                      65520.0,
                                      -70000.0,
                                      std::ldexp(1.0, -24),
                                      std::ldexp(1.0, -25),
                                      std::ldexp(1.5, -25),
                                      0.1,
                                      -0.0,
                                      kInf};
    const std::vector<double> h_out = {
        1.0, 1.0 + 2 * e10,        65504.0,         65504.0, kInf, -kInf, std::ldexp(1.0, -24),
        0.0, std::ldexp(1.0, -24), 0.0999755859375, -0.0,    kInf};
    for (Dtype from : {Dtype::float32, Dtype::float64}) {
      EXPECT_EQ(convert(h_in, from, Dtype::float16), h_out) << dtype_name(from);
    }
    // From float64 the result is rounded once: just above a tie rounds up (not to the tie's even).
    const std::vector<double> above_tie = {1.0 + e11 + std::ldexp(1.0, -40), -(1.0 + e11 + std::ldexp(1.0, -40))};
    EXPECT_EQ(convert(above_tie, Dtype::float64, Dtype::float16), (std::vector<double>{1.0 + e10, -(1.0 + e10)}));
    const double e8 = std::ldexp(1.0, -8), e7 = std::ldexp(1.0, -7);
    const std::vector<double> b_in = {1.0 + e8, 1.0 + 3 * e8, 1.0 + e8 + std::ldexp(1.0, -40), 3.0e38, 0.1, -2.5};
    const std::vector<double> b_out = {1.0, 1.0 + 2 * e7, 1.0 + e7, 3.00405527047391e38, 0.10009765625, -2.5};
    EXPECT_EQ(convert(b_in, Dtype::float64, Dtype::bfloat16), b_out);
    // Large integers round once too: 2^25 + 2^17 + 1 is just above a bfloat16 tie.
    EXPECT_EQ(convert({33685505.0}, Dtype::int32, Dtype::bfloat16), (std::vector<double>{33816576.0}));
    EXPECT_EQ(convert({33685505.0}, Dtype::int64, Dtype::bfloat16), (std::vector<double>{33816576.0}));
    EXPECT_TRUE(std::isnan(convert({kNan}, Dtype::float64, Dtype::float16)[0]));
    EXPECT_TRUE(std::isnan(convert({kNan}, Dtype::float32, Dtype::bfloat16)[0]));
    EXPECT_TRUE(std::signbit(convert({-0.0}, Dtype::float64, Dtype::bfloat16)[0]));
    // bool: nonzero (NaN included) is true; true converts to 1.
    EXPECT_EQ(convert({0.0, -0.0, 0.5, -3.0, kNan, kInf}, Dtype::float64, Dtype::bool_),
              (std::vector<double>{0, 0, 1, 1, 1, 1}));
    EXPECT_EQ(convert({0.0, 0.001}, Dtype::float16, Dtype::bool_), (std::vector<double>{0, 1}));
    EXPECT_EQ(convert({1, 0, 1}, Dtype::bool_, Dtype::float32), (std::vector<double>{1, 0, 1}));
    EXPECT_EQ(convert({1, 0}, Dtype::bool_, Dtype::bfloat16), (std::vector<double>{1, 0}));
    EXPECT_EQ(convert({256, 3, 0}, Dtype::int32, Dtype::bool_), (std::vector<double>{1, 1, 0}));
    // Float to integer truncates toward zero.
    EXPECT_EQ(convert({2.7, -2.7, 0.5, -0.5}, Dtype::float64, Dtype::int32), (std::vector<double>{2, -2, 0, 0}));
    EXPECT_EQ(convert({2.7, 255.9}, Dtype::float32, Dtype::uint8), (std::vector<double>{2, 255}));
    EXPECT_EQ(convert({-1.0e10}, Dtype::float64, Dtype::int64), (std::vector<double>{-1.0e10}));
  }
}

// ---- fill ----------------------------------------------------------------------------------------

TEST(Kernels, FillEveryDtypeAndLayout) {
  const double tie_plus = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  for (Dtype d : kAllDtypes) {
    std::vector<double> vals = {1.5, 0.0, 7.0, tie_plus};
    if (d != Dtype::uint8) vals.push_back(-2.25);
    if (is_floating(d)) vals.insert(vals.end(), {kNan, -kInf, 1e-30});
    for (double v : vals) {
      for (const Layout* layout : kOutputLayouts) {
        for (const Shape& shape : {kSmall, Shape{}, Shape{4, 0}}) {
          Pair out = make_output(*layout, shape, d);
          out.cpu.fill(v);
          out.ref.fill(v);
          expect_same(out, "fill " + std::to_string(v) + " " + describe(layout->name, shape, d));
        }
      }
    }
  }
  // Known values.
  Array h = Array::empty({3}, Dtype::float16);
  h.fill(tie_plus);
  EXPECT_EQ(h.to_vector<double>(), (std::vector<double>(3, 1.0 + std::ldexp(1.0, -10))));
  Array b = Array::zeros({2, 6}, Dtype::int32).slice(1, 1, std::nullopt, 2);
  b.fill(-3.9);
  EXPECT_EQ(b.to_vector<int>(), (std::vector<int>(6, -3)));
}

// ---- unary ---------------------------------------------------------------------------------------

TEST(Kernels, UnaryEveryOpDtypeAndLayout) {
  for (UnaryOp op : kUnaryOps) {
    for (const auto& [p0, p1] : unary_params(op)) {
      for (Dtype d : kFloatDtypes) {
        for (const Layout* in_layout : kInputLayouts) {
          for (const Shape& shape : {kSmall, Shape{}, Shape{0, 3}}) {
            const Layout* out_layout = in_layout == &kTransposed ? &kStrided : &kContiguous;
            Pair in = make_input(*in_layout, shape, d, with_specials(in_layout->base(shape).numel(), 11));
            Pair out = make_output(*out_layout, shape, d);
            cpu_kernels().unary(op, in.cpu, out.cpu, p0, p1);
            ref_kernels().unary(op, in.ref, out.ref, p0, p1);
            expect_same(out,
                        unary_name(op) + "(" + std::to_string(p0) + ", " + std::to_string(p1) + ") " +
                            describe(in_layout->name, shape, d) + " -> " + out_layout->name,
                        test::kernel_tolerance(d));
          }
        }
      }
    }
  }
}

TEST(Kernels, UnaryKnownValues) {
  const std::vector<double> x = {-2.0, -0.5, 0.0, 0.5, 2.0};
  auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  auto sp = [](double v) { return std::log1p(std::exp(v)); };
  struct Case {
    UnaryOp op;
    double p0, p1;
    std::vector<double> expected;
    double rtol = 0.0;  // relative to max(|expected|, 1); 0: 1e-15 absolute
  };
  constexpr double kEuler = 0.57721566490153286061;
  auto ndtr = [](double v) { return 0.5 * std::erfc(-v / std::sqrt(2.0)); };
  auto erfcx = [](double v) { return std::exp(v * v) * std::erfc(v); };
  const double erfinv_half = 0.47693627620446987338;  // erfinv(0.5)
  const std::vector<Case> cases = {
      {UnaryOp::neg, 0, 0, {2, 0.5, 0, -0.5, -2}},
      {UnaryOp::exp, 0, 0, {std::exp(-2.0), std::exp(-0.5), 1, std::exp(0.5), std::exp(2.0)}},
      {UnaryOp::log, 0, 0, {kNan, kNan, -kInf, std::log(0.5), std::log(2.0)}},
      {UnaryOp::sqrt, 0, 0, {kNan, kNan, 0, std::sqrt(0.5), std::sqrt(2.0)}},
      {UnaryOp::abs, 0, 0, {2, 0.5, 0, 0.5, 2}},
      {UnaryOp::sign, 0, 0, {-1, -1, 0, 1, 1}},
      {UnaryOp::square, 0, 0, {4, 0.25, 0, 0.25, 4}},
      {UnaryOp::reciprocal, 0, 0, {-0.5, -2, kInf, 2, 0.5}},
      {UnaryOp::sin, 0, 0, {std::sin(-2.0), std::sin(-0.5), 0, std::sin(0.5), std::sin(2.0)}},
      {UnaryOp::cos, 0, 0, {std::cos(-2.0), std::cos(-0.5), 1, std::cos(0.5), std::cos(2.0)}},
      {UnaryOp::relu, 0, 0, {0, 0, 0, 0.5, 2}},
      {UnaryOp::sigmoid, 0, 0, {sig(-2), sig(-0.5), 0.5, sig(0.5), sig(2)}},
      {UnaryOp::tanh, 0, 0, {std::tanh(-2.0), std::tanh(-0.5), 0, std::tanh(0.5), std::tanh(2.0)}},
      {UnaryOp::softplus, 0, 0, {sp(-2), sp(-0.5), std::log(2.0), sp(0.5), sp(2)}},
      {UnaryOp::leaky_relu, 0.1, 0, {-0.2, -0.05, 0, 0.5, 2}},
      {UnaryOp::elu, 2.0, 0, {2 * std::expm1(-2.0), 2 * std::expm1(-0.5), 0, 0.5, 2}},
      {UnaryOp::pow_scalar, 3.0, 0, {-8, -0.125, 0, 0.125, 8}},
      {UnaryOp::clip, -1.0, 1.0, {-1, -0.5, 0, 0.5, 1}},
      {UnaryOp::affine, 2.0, 1.0, {-3, 0, 1, 2, 5}},
      {UnaryOp::finite_or_zero, 0, 0, {-2, -0.5, 0, 0.5, 2}},
      {UnaryOp::tan, 0, 0, {std::tan(-2.0), std::tan(-0.5), 0, std::tan(0.5), std::tan(2.0)}},
      {UnaryOp::arcsin, 0, 0, {kNan, -std::asin(0.5), 0, std::asin(0.5), kNan}},
      {UnaryOp::arccos, 0, 0, {kNan, 2 * std::acos(-1.0) / 3, std::acos(-1.0) / 2, std::acos(-1.0) / 3, kNan}},
      {UnaryOp::arctan, 0, 0, {-std::atan(2.0), -std::atan(0.5), 0, std::atan(0.5), std::atan(2.0)}},
      {UnaryOp::sinh, 0, 0, {std::sinh(-2.0), std::sinh(-0.5), 0, std::sinh(0.5), std::sinh(2.0)}},
      {UnaryOp::cosh, 0, 0, {std::cosh(2.0), std::cosh(0.5), 1, std::cosh(0.5), std::cosh(2.0)}},
      {UnaryOp::arctanh, 0, 0, {kNan, -0.5 * std::log(3.0), 0, 0.5 * std::log(3.0), kNan}},
      {UnaryOp::expm1, 0, 0, {std::exp(-2.0) - 1, std::exp(-0.5) - 1, 0, std::exp(0.5) - 1, std::exp(2.0) - 1}, 1e-15},
      {UnaryOp::log1p, 0, 0, {kNan, std::log(0.5), 0, std::log(1.5), std::log(3.0)}},
      {UnaryOp::log2, 0, 0, {kNan, kNan, -kInf, -1, 1}},
      {UnaryOp::log10, 0, 0, {kNan, kNan, -kInf, std::log(0.5) / std::log(10.0), std::log(2.0) / std::log(10.0)}},
      {UnaryOp::rsqrt, 0, 0, {kNan, kNan, kInf, std::sqrt(2.0), std::sqrt(0.5)}},
      {UnaryOp::floor, 0, 0, {-2, -1, 0, 0, 2}},
      {UnaryOp::ceil, 0, 0, {-2, 0, 0, 1, 2}},
      {UnaryOp::fix, 0, 0, {-2, 0, 0, 0, 2}},
      {UnaryOp::erf, 0, 0, {-std::erf(2.0), -std::erf(0.5), 0, std::erf(0.5), std::erf(2.0)}},
      {UnaryOp::erfc, 0, 0, {1 + std::erf(2.0), 1 + std::erf(0.5), 1, 1 - std::erf(0.5), 1 - std::erf(2.0)}},
      {UnaryOp::erfcx, 0, 0, {erfcx(-2), erfcx(-0.5), 1, erfcx(0.5), erfcx(2)}, 1e-14},
      {UnaryOp::erfinv, 0, 0, {kNan, -erfinv_half, 0, erfinv_half, kNan}, 1e-15},
      {UnaryOp::erfcinv, 0, 0, {kNan, kNan, kInf, erfinv_half, -kInf}, 1e-15},
      {UnaryOp::ndtr, 0, 0, {ndtr(-2), ndtr(-0.5), 0.5, ndtr(0.5), ndtr(2)}, 1e-15},
      {UnaryOp::ndtri, 0, 0, {kNan, kNan, -kInf, 0, kNan}},
      {UnaryOp::log_ndtr, 0, 0, {std::log(ndtr(-2)), std::log(ndtr(-0.5)), -std::log(2.0), std::log(ndtr(0.5)),
                                 std::log(ndtr(2))}, 1e-14},
      // lgamma(-0.5) = log(2 sqrt(pi)), lgamma(0.5) = log(sqrt(pi)); digamma(0.5) = -gamma - 2 log 2.
      {UnaryOp::lgamma, 0, 0, {kInf, std::log(2 * std::sqrt(std::acos(-1.0))), kInf, 0.5 * std::log(std::acos(-1.0)), 0},
       1e-15},
      {UnaryOp::digamma, 0, 0, {kNan, 2 - kEuler - 2 * std::log(2.0), -kInf, -kEuler - 2 * std::log(2.0), 1 - kEuler},
       1e-14},
  };
  ASSERT_EQ(cases.size(), std::size(kUnaryOps));
  for (Device dev : {Device::cpu(), Device::reference()}) {
    Array in = Array::from_vector(x).to(dev);
    for (const auto& c : cases) {
      Array out = Array::empty(in.shape(), Dtype::float64, dev);
      get_backend(dev).kernels().unary(c.op, in, out, c.p0, c.p1);
      const auto got = out.to_vector<double>();
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (std::isnan(c.expected[i])) {
          EXPECT_TRUE(std::isnan(got[i])) << unary_name(c.op) << " " << i;
        } else if (std::isinf(c.expected[i])) {
          EXPECT_EQ(got[i], c.expected[i]) << unary_name(c.op) << " " << i;
        } else {
          const double tol = c.rtol == 0.0 ? 1e-15 : c.rtol * std::max(std::abs(c.expected[i]), 1.0);
          EXPECT_NEAR(got[i], c.expected[i], tol) << unary_name(c.op) << " " << i << " on " << to_string(dev);
        }
      }
    }
    // Saturation without overflow or NaN.
    Array ext = Array::from_vector<double>({-1000.0, 1000.0, kNan, kInf, -kInf}).to(dev);
    Array out = Array::empty(ext.shape(), Dtype::float64, dev);
    get_backend(dev).kernels().unary(UnaryOp::sigmoid, ext, out, 0, 0);
    auto s = out.to_vector<double>();
    EXPECT_EQ(s[0], 0.0);
    EXPECT_EQ(s[1], 1.0);
    get_backend(dev).kernels().unary(UnaryOp::softplus, ext, out, 0, 0);
    s = out.to_vector<double>();
    EXPECT_EQ(s[0], 0.0);
    EXPECT_EQ(s[1], 1000.0);
    get_backend(dev).kernels().unary(UnaryOp::finite_or_zero, ext, out, 0, 0);
    EXPECT_EQ(out.to_vector<double>(), (std::vector<double>{-1000.0, 1000.0, 0, 0, 0}));
  }
}

TEST(Kernels, UnaryRejectsIntegers) {
  for (Dtype d : {Dtype::int32, Dtype::int64, Dtype::uint8, Dtype::bool_}) {
    for (Device dev : {Device::cpu(), Device::reference()}) {
      Array x = Array::zeros({3}, d, dev), y = Array::zeros({3}, d, dev);
      EXPECT_THROW(get_backend(dev).kernels().unary(UnaryOp::exp, x, y, 0, 0), DtypeError) << dtype_name(d);
    }
  }
}

// ---- binary --------------------------------------------------------------------------------------

namespace {
// Operands for op in dtype d: exponents of integer pow are small and non-negative; divisors of
// floats avoid 0 except in the special values; integer divisors include 0.
std::pair<std::vector<double>, std::vector<double>> binary_values(BinaryOp op, Dtype d, int64_t na, int64_t nb,
                                                                  uint64_t seed) {
  if (op == BinaryOp::pow && is_integral(d)) {
    return {draw(na, d == Dtype::uint8 ? 0.0 : -3.0, 4.0, seed, true), draw(nb, 0.0, 5.0, seed + 1, true)};
  }
  if (op == BinaryOp::pow) return {draw(na, 0.1, 3.0, seed), draw(nb, -2.0, 2.0, seed + 1)};
  // polygamma's order is whole; zeta's exponent above 1; negative x reach both reflections.
  if (op == BinaryOp::polygamma) return {draw(na, 0.0, 4.0, seed, true), draw(nb, -3.0, 5.0, seed + 1)};
  if (op == BinaryOp::zeta) return {draw(na, 1.0, 6.0, seed), draw(nb, -3.0, 5.0, seed + 1)};
  auto a = typical(d, na, seed), b = typical(d, nb, seed + 1);
  if (is_floating(d)) {
    const double specials[] = {kNan, kInf, -kInf, 0.0, 2.0};
    for (std::size_t i = 0; i < std::size(specials); ++i) {
      if (i < a.size()) a[i] = specials[i];
      if (i + 2 < b.size()) b[i + 2] = specials[i];
    }
  }
  // Equal pairs for the comparisons.
  for (std::size_t i = 7; i < std::min(a.size(), b.size()); i += 5) b[i] = a[i];
  return {a, b};
}
}  // namespace

TEST(Kernels, BinaryEveryOpDtypeAndLayout) {
  struct Layouts {
    const Layout* a;
    const Layout* b;
    const Layout* out;
  };
  const std::vector<Layouts> combos = {
      {&kContiguous, &kContiguous, &kContiguous}, {&kStrided, &kTransposed, &kContiguous},
      {&kContiguous, &kScalar, &kContiguous},     {&kScalar, &kContiguous, &kStrided},
      {&kBroadcast, &kContiguous, &kContiguous},  {&kBroadcast, &kOffset, &kTransposed},
      {&kTransposed, &kTransposed, &kTransposed}, {&kOffset, &kStrided, &kStrided},
      {&kReversed, &kBroadcast, &kReversed},      {&kContiguous, &kReversed, &kContiguous},
  };
  for (BinaryOp op : kBinaryOps) {
    const bool cmp = op >= BinaryOp::eq;
    for (Dtype d : is_floating_only(op) ? kFloatDtypes : kAllDtypes) {
      for (const auto& c : combos) {
        for (const Shape& shape : {kSmall, Shape{}, Shape{2, 0, 3}}) {
          auto [va, vb] = binary_values(op, d, c.a->base(shape).numel(), c.b->base(shape).numel(), 13);
          Pair a = make_input(*c.a, shape, d, va), b = make_input(*c.b, shape, d, vb);
          for (Dtype od : cmp ? std::vector<Dtype>{d, Dtype::bool_} : std::vector<Dtype>{d}) {
            if (cmp && od == d && d == Dtype::bool_ && c.out != &kContiguous) continue;
            Pair out = make_output(*c.out, shape, od);
            cpu_kernels().binary(op, a.cpu, b.cpu, out.cpu);
            ref_kernels().binary(op, a.ref, b.ref, out.ref);
            expect_same(out,
                        binary_name(op) + " " + describe(c.a->name, shape, d) + " with " + c.b->name + " -> " +
                            c.out->name + " " + std::string(dtype_name(od)),
                        test::kernel_tolerance(od));
          }
        }
      }
    }
  }
}

TEST(Kernels, BinaryKnownValues) {
  const std::vector<double> a = {6.0, -7.0, 2.0, kNan, 3.0}, b = {4.0, 2.0, 2.0, 1.0, kNan};
  struct Case {
    BinaryOp op;
    std::vector<double> expected;
    bool rounded = false;  // a transcendental value: compared within the dtype's precision
  };
  const std::vector<Case> cases = {
      {BinaryOp::add, {10, -5, 4, kNan, kNan}},
      {BinaryOp::sub, {2, -9, 0, kNan, kNan}},
      {BinaryOp::mul, {24, -14, 4, kNan, kNan}},
      {BinaryOp::div, {1.5, -3.5, 1, kNan, kNan}},
      {BinaryOp::pow, {1296, 49, 4, kNan, kNan}},
      {BinaryOp::maximum, {6, 2, 2, kNan, kNan}},
      {BinaryOp::minimum, {4, -7, 2, kNan, kNan}},
      {BinaryOp::relu_grad, {6, -7, 2, kNan, 0}},
      {BinaryOp::arctan2, {std::atan2(6.0, 4.0), std::atan2(-7.0, 2.0), std::atan(1.0), kNan, kNan}, true},
      {BinaryOp::fmod, {2, -1, 0, kNan, kNan}},
      // polygamma(6, 4) = -6! zeta(7, 4); polygamma(2, 2) = -2 (zeta(3) - 1); negative orders are NaN.
      {BinaryOp::polygamma, {-0.05726160798855055, kNan, -0.4041138063191886, kNan, kNan}, true},
      // zeta(6, 4) = pi^6 / 945 - 1 - 2^-6 - 3^-6; zeta(2, 2) = pi^2 / 6 - 1; NaN below 1.
      {BinaryOp::zeta, {0.0003463198719662865, kNan, 0.6449340668482264, kNan, kNan}, true},
      {BinaryOp::eq, {0, 0, 1, 0, 0}},
      {BinaryOp::ne, {1, 1, 0, 1, 1}},
      {BinaryOp::lt, {0, 1, 0, 0, 0}},
      {BinaryOp::le, {0, 1, 1, 0, 0}},
      {BinaryOp::gt, {1, 0, 0, 0, 0}},
      {BinaryOp::ge, {1, 0, 1, 0, 0}},
  };
  ASSERT_EQ(cases.size(), std::size(kBinaryOps));
  for (Device dev : {Device::cpu(), Device::reference()}) {
    for (Dtype d : {Dtype::float64, Dtype::float32, Dtype::float16}) {
      Array x = from_doubles(a, {5}, d).to(dev), y = from_doubles(b, {5}, d).to(dev);
      for (const auto& c : cases) {
        for (Dtype od : c.op >= BinaryOp::eq ? std::vector<Dtype>{d, Dtype::bool_} : std::vector<Dtype>{d}) {
          Array out = Array::empty({5}, od, dev);
          get_backend(dev).kernels().binary(c.op, x, y, out);
          const auto got = out.to_vector<double>();
          for (std::size_t i = 0; i < got.size(); ++i) {
            if (std::isnan(c.expected[i])) {
              EXPECT_TRUE(std::isnan(got[i])) << binary_name(c.op) << " " << i;
            } else if (c.rounded) {
              const double rtol = d == Dtype::float64 ? 1e-14 : d == Dtype::float32 ? 1e-6 : 1e-3;
              EXPECT_NEAR(got[i], c.expected[i], rtol * std::abs(c.expected[i]))
                  << binary_name(c.op) << " " << i << " " << dtype_name(d) << " on " << to_string(dev);
            } else {
              EXPECT_EQ(got[i], c.expected[i])
                  << binary_name(c.op) << " " << i << " " << dtype_name(d) << " on " << to_string(dev);
            }
          }
        }
      }
    }
    // Integers: division floors and x / 0 is 0; uint8 wraps; bool ops are logical.
    auto run = [&](BinaryOp op, Dtype d, const std::vector<double>& x, const std::vector<double>& y) {
      const Shape s{static_cast<int64_t>(x.size())};
      Array out = Array::empty(s, d, dev);
      get_backend(dev).kernels().binary(op, from_doubles(x, s, d).to(dev), from_doubles(y, s, d).to(dev), out);
      return out.to_vector<double>();
    };
    EXPECT_EQ(run(BinaryOp::div, Dtype::int32, {7, -7, 7, -7, 5, 0}, {2, 2, -2, -2, 0, 3}),
              (std::vector<double>{3, -4, -4, 3, 0, 0}));
    EXPECT_EQ(run(BinaryOp::div, Dtype::int64, {-9, 9}, {4, -1}), (std::vector<double>{-3, -9}));
    EXPECT_EQ(run(BinaryOp::div, Dtype::uint8, {255, 9}, {2, 0}), (std::vector<double>{127, 0}));
    EXPECT_EQ(run(BinaryOp::sub, Dtype::uint8, {3}, {5}), (std::vector<double>{254}));
    EXPECT_EQ(run(BinaryOp::pow, Dtype::int32, {3, -2, 5}, {4, 3, 0}), (std::vector<double>{81, -8, 1}));
    EXPECT_EQ(run(BinaryOp::maximum, Dtype::int64, {3, -2}, {-4, 7}), (std::vector<double>{3, 7}));
    EXPECT_EQ(run(BinaryOp::add, Dtype::bool_, {0, 1, 1}, {0, 0, 1}), (std::vector<double>{0, 1, 1}));
    EXPECT_EQ(run(BinaryOp::mul, Dtype::bool_, {0, 1, 1}, {1, 0, 1}), (std::vector<double>{0, 0, 1}));
    EXPECT_EQ(run(BinaryOp::div, Dtype::bool_, {1, 1, 0}, {1, 0, 0}), (std::vector<double>{1, 0, 0}));
  }
}

TEST(Kernels, FloatingBinaryOpsRejectIntegers) {
  for (BinaryOp op : kBinaryOps) {
    if (!is_floating_only(op)) continue;
    for (Dtype d : {Dtype::int32, Dtype::int64, Dtype::uint8, Dtype::bool_}) {
      for (Device dev : {Device::cpu(), Device::reference()}) {
        Array a = Array::ones({3}, d, dev), out = Array::empty({3}, d, dev);
        EXPECT_THROW(get_backend(dev).kernels().binary(op, a, a, out), DtypeError) << binary_name(op) << " " << dtype_name(d);
      }
    }
  }
}

TEST(Kernels, BinaryRejectsMismatchedOutputDtype) {
  Array a = Array::ones({3}), b = Array::ones({3}), out = Array::empty({3}, Dtype::float64);
  EXPECT_THROW(cpu_kernels().binary(BinaryOp::add, a, b, out), DtypeError);
}

// ---- scan ----------------------------------------------------------------------------------------

TEST(Kernels, ScanEveryOpAxisAndLayout) {
  for (ScanOp op : {ScanOp::sum, ScanOp::prod, ScanOp::linear}) {
    for (Dtype d : kFloatDtypes) {
      for (const Layout* layout : {&kContiguous, &kTransposed, &kStrided, &kBroadcast, &kReversed}) {
        for (const Shape& shape : {kSmall, Shape{2, 0, 3}, Shape{1, 1, 1}}) {
          for (int64_t axis = 0; axis < 3; ++axis) {
            for (bool reverse : {false, true}) {
              // Values near 1 keep long products finite.
              const int64_t n = layout->base(shape).numel();
              Pair x = make_input(*layout, shape, d, draw(n, 0.5, 1.5, 21));
              Pair a = op == ScanOp::linear ? make_input(kTransposed, shape, d, draw(shape.numel(), -1.0, 1.0, 22))
                                            : Pair{};
              Pair out = make_output(layout == &kTransposed ? kStrided : kContiguous, shape, d);
              cpu_kernels().scan(op, x.cpu, a.cpu, axis, reverse, out.cpu);
              ref_kernels().scan(op, x.ref, a.ref, axis, reverse, out.ref);
              expect_same(out,
                          "scan " + std::to_string(static_cast<int>(op)) + " axis " + std::to_string(axis) +
                              (reverse ? " reversed " : " ") + describe(layout->name, shape, d),
                          test::kernel_tolerance(d, shape[static_cast<std::size_t>(axis)]));
            }
          }
        }
      }
    }
  }
}

TEST(Kernels, ScanKnownValues) {
  for (Device dev : {Device::cpu(), Device::reference()}) {
    const Array x = Array::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3}).to(dev);
    const Array a = Array::from_vector<double>({2, 2, 2, 0.5, 0.5, 0.5}, {2, 3}).to(dev);
    auto run = [&](ScanOp op, int64_t axis, bool reverse) {
      Array out = Array::empty({2, 3}, Dtype::float64, dev);
      get_backend(dev).kernels().scan(op, x, op == ScanOp::linear ? a : Array(), axis, reverse, out);
      return out.to_vector<double>();
    };
    EXPECT_EQ(run(ScanOp::sum, 1, false), (std::vector<double>{1, 3, 6, 4, 9, 15}));
    EXPECT_EQ(run(ScanOp::sum, 0, false), (std::vector<double>{1, 2, 3, 5, 7, 9}));
    EXPECT_EQ(run(ScanOp::sum, 1, true), (std::vector<double>{6, 5, 3, 15, 11, 6}));
    EXPECT_EQ(run(ScanOp::prod, 1, false), (std::vector<double>{1, 2, 6, 4, 20, 120}));
    EXPECT_EQ(run(ScanOp::prod, 0, true), (std::vector<double>{4, 10, 18, 4, 5, 6}));
    // out[i] = x[i] + a[i] * out[i - 1]: 1, 2 + 2 * 1, 3 + 2 * 4; 4, 5 + 0.5 * 4, 6 + 0.5 * 7.
    EXPECT_EQ(run(ScanOp::linear, 1, false), (std::vector<double>{1, 4, 11, 4, 7, 9.5}));
    // From the end: 3, 2 + 2 * 3, 1 + 2 * 8; 6, 5 + 0.5 * 6, 4 + 0.5 * 8.
    EXPECT_EQ(run(ScanOp::linear, 1, true), (std::vector<double>{17, 8, 3, 8, 8, 6}));
  }
}

// ---- reduce --------------------------------------------------------------------------------------

namespace {
const std::vector<Shape>& reduce_axes() {
  static const std::vector<Shape> list = {{}, {0}, {1}, {2}, {0, 1}, {1, 2}, {0, 2}, {0, 1, 2}};
  return list;
}

Dtype reduce_out_dtype(ReduceOp op, Dtype d) {
  if (op == ReduceOp::argmax || op == ReduceOp::argmin) return Dtype::int64;
  if ((op == ReduceOp::sum || op == ReduceOp::prod) && is_integral(d)) return Dtype::int64;
  return d;
}

std::vector<double> reduce_values(ReduceOp op, Dtype d, int64_t n, uint64_t seed, bool with_nan) {
  std::vector<double> v;
  if (op == ReduceOp::prod) {
    // Products of many factors stay finite (and exact for integers).
    v = is_integral(d) ? draw(n, 0.0, 2.0, seed, true) : draw(n, 0.95, 1.05, seed);
    if (d != Dtype::uint8 && d != Dtype::bool_) {
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (is_integral(d))
          v[i] = v[i] == 0 ? -1.0 : 1.0;
        else if (i % 3 == 0)
          v[i] = -v[i];
      }
    }
    return v;
  }
  v = typical(d, n, seed);
  if (with_nan && is_floating(d)) {
    for (std::size_t i = 3; i < v.size(); i += 17) v[i] = kNan;
    if (v.size() > 1) v[1] = -kInf;
  }
  return v;
}

void run_reduce(ReduceOp op, const Pair& x, const Shape& axes, const Layout& out_layout, const std::string& what) {
  Shape kept = x.cpu.shape();
  for (int64_t a : axes) kept[static_cast<std::size_t>(a)] = 1;
  Pair out = make_output(out_layout, kept, reduce_out_dtype(op, x.cpu.dtype()));
  cpu_kernels().reduce(op, x.cpu, axes, out.cpu);
  ref_kernels().reduce(op, x.ref, axes, out.ref);
  // The length of each reduction: the input's elements per output element.
  const int64_t n = out.cpu.size() == 0 ? 1 : x.cpu.size() / out.cpu.size();
  expect_same(out, what, test::double_accumulated_tolerance(out.cpu.dtype(), n));
}
}  // namespace

TEST(Kernels, ReduceEveryOpDtypeAxesAndLayout) {
  for (ReduceOp op : kReduceOps) {
    const bool arg = op == ReduceOp::argmax || op == ReduceOp::argmin;
    for (Dtype d : kAllDtypes) {
      for (const Layout* layout : kInputLayouts) {
        for (const Shape& axes : reduce_axes()) {
          if (arg && axes.size() != 1) continue;
          Pair x = make_input(*layout, kSmall, d, reduce_values(op, d, layout->base(kSmall).numel(), 17, true));
          const std::string what =
              reduce_name(op) + " over " + to_string(axes) + " of " + describe(layout->name, kSmall, d);
          run_reduce(op, x, axes, kContiguous, what);
          run_reduce(op, x, axes, kTransposed, what + " into a transposed output");
        }
      }
    }
  }
}

TEST(Kernels, ReduceSizeZero) {
  for (ReduceOp op : kReduceOps) {
    const bool needs_elements = op != ReduceOp::sum && op != ReduceOp::prod;
    for (Dtype d : {Dtype::float32, Dtype::int32, Dtype::float16}) {
      for (const Shape& shape : {Shape{3, 0, 4}, Shape{0, 5, 6}}) {
        for (const Shape& axes : reduce_axes()) {
          if ((op == ReduceOp::argmax || op == ReduceOp::argmin) && axes.size() != 1) continue;
          Pair x = make_input(kContiguous, shape, d, 1);
          bool reduces_empty = false;
          bool result_empty = false;
          for (std::size_t i = 0; i < shape.size(); ++i) {
            const bool reduced = std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end();
            if (shape[i] == 0 && reduced) reduces_empty = true;
            if (shape[i] == 0 && !reduced) result_empty = true;
          }
          const std::string what = reduce_name(op) + " over " + to_string(axes) + " of " + describe("", shape, d);
          if (needs_elements && reduces_empty && !result_empty) {
            Shape kept = shape;
            for (int64_t a : axes) kept[static_cast<std::size_t>(a)] = 1;
            Pair out = make_output(kContiguous, kept, reduce_out_dtype(op, d));
            EXPECT_THROW(cpu_kernels().reduce(op, x.cpu, axes, out.cpu), ValueError) << what;
            EXPECT_THROW(ref_kernels().reduce(op, x.ref, axes, out.ref), ValueError) << what;
          } else {
            run_reduce(op, x, axes, kContiguous, what);
          }
        }
      }
    }
  }
  // Known: sum over an empty axis is 0, prod is 1.
  for (Device dev : {Device::cpu(), Device::reference()}) {
    Array x = Array::zeros({2, 0}, Dtype::float32, dev);
    Array out = Array::empty({2, 1}, Dtype::float32, dev);
    get_backend(dev).kernels().reduce(ReduceOp::sum, x, Shape{1}, out);
    EXPECT_EQ(out.to_vector<double>(), (std::vector<double>{0, 0}));
    get_backend(dev).kernels().reduce(ReduceOp::prod, x, Shape{1}, out);
    EXPECT_EQ(out.to_vector<double>(), (std::vector<double>{1, 1}));
  }
}

TEST(Kernels, ReduceKnownValues) {
  const std::vector<double> v = {3, -1, 4, 1, -5, 9, 2, 6, 9, 3, 5, 9};  // (3, 4)
  for (Device dev : {Device::cpu(), Device::reference()}) {
    for (Dtype d : {Dtype::float64, Dtype::int32, Dtype::float16}) {
      SCOPED_TRACE(to_string(dev) + " " + std::string(dtype_name(d)));
      Array x = from_doubles(v, {3, 4}, d).to(dev);
      auto reduce = [&](ReduceOp op, const Shape& axes) {
        Shape kept = x.shape();
        for (int64_t a : axes) kept[static_cast<std::size_t>(a)] = 1;
        Array out = Array::empty(kept, reduce_out_dtype(op, d), dev);
        get_backend(dev).kernels().reduce(op, x, axes, out);
        return out.to_vector<double>();
      };
      EXPECT_EQ(reduce(ReduceOp::sum, {0, 1}), (std::vector<double>{45}));
      EXPECT_EQ(reduce(ReduceOp::sum, {0}), (std::vector<double>{7, 11, 11, 16}));
      EXPECT_EQ(reduce(ReduceOp::prod, {1}), (std::vector<double>{-12, -540, 1215}));
      EXPECT_EQ(reduce(ReduceOp::max, {1}), (std::vector<double>{4, 9, 9}));
      EXPECT_EQ(reduce(ReduceOp::min, {0}), (std::vector<double>{-5, -1, 2, 1}));
      EXPECT_EQ(reduce(ReduceOp::argmax, {1}), (std::vector<double>{2, 1, 0}));  // ties: first occurrence
      EXPECT_EQ(reduce(ReduceOp::argmin, {1}), (std::vector<double>{1, 0, 1}));
      EXPECT_EQ(reduce(ReduceOp::argmax, {0}), (std::vector<double>{2, 1, 2, 2}));
      EXPECT_EQ(reduce(ReduceOp::argmin, {0}), (std::vector<double>{1, 0, 1, 0}));
      EXPECT_EQ(reduce(ReduceOp::sum, {}), v);
    }
  }
}

TEST(Kernels, ManyDimensionsAndUnitAxes) {
  const Shape shape{2, 1, 3, 2, 1, 2, 3};  // 7 axes: more than Shape keeps inline
  for (const Layout* layout : kInputLayouts) {
    const std::string where = describe(layout->name, shape, Dtype::float32);
    Pair x = make_input(*layout, shape, Dtype::float32, 31);
    Pair y = make_input(kTransposed, shape, Dtype::float32, 32);
    expect_same({x.cpu.astype(Dtype::float64), x.ref.astype(Dtype::float64)}, "astype " + where);
    Pair u = make_output(kReversed, shape, Dtype::float32);
    cpu_kernels().unary(UnaryOp::exp, x.cpu, u.cpu, 0, 0);
    ref_kernels().unary(UnaryOp::exp, x.ref, u.ref, 0, 0);
    expect_same(u, "exp " + where, test::kernel_tolerance(Dtype::float32));
    Pair b = make_output(kStrided, shape, Dtype::float32);
    cpu_kernels().binary(BinaryOp::sub, x.cpu, y.cpu, b.cpu);
    ref_kernels().binary(BinaryOp::sub, x.ref, y.ref, b.ref);
    expect_same(b, "sub " + where, test::kernel_tolerance(Dtype::float32));
    for (const Shape& axes :
         {Shape{}, Shape{1}, Shape{1, 4}, Shape{0, 2, 6}, Shape{3, 5}, Shape{0, 1, 2, 3, 4, 5, 6}}) {
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::max}) {
        run_reduce(op, x, axes, kContiguous, reduce_name(op) + " over " + to_string(axes) + " of " + where);
        run_reduce(op, x, axes, kTransposed, reduce_name(op) + " over " + to_string(axes) + " of " + where);
      }
    }
    for (int64_t axis : {1, 2, 6}) {
      run_reduce(ReduceOp::argmax, x, {axis}, kContiguous, "argmax over " + std::to_string(axis) + " of " + where);
      run_reduce(ReduceOp::argmin, x, {axis}, kReversed, "argmin over " + std::to_string(axis) + " of " + where);
    }
  }
}

// ---- above the parallel threshold, with 1 and 2 threads ------------------------------------------

TEST_P(KernelsThreads, Astype) {
  const std::vector<std::pair<Dtype, Dtype>> pairs = {
      {Dtype::float64, Dtype::float16}, {Dtype::float32, Dtype::bfloat16}, {Dtype::float16, Dtype::float32},
      {Dtype::int32, Dtype::float32},   {Dtype::float32, Dtype::int64},    {Dtype::uint8, Dtype::float64},
      {Dtype::bool_, Dtype::float32},   {Dtype::float64, Dtype::bool_},    {Dtype::int64, Dtype::int32},
      {Dtype::float32, Dtype::float32}};
  for (const auto& [src, dst] : pairs) {
    for (const Layout* layout : {&kContiguous, &kStrided, &kTransposed, &kReversed, &kBroadcast}) {
      Pair in = make_input(*layout, kBig, src, draw(layout->base(kBig).numel(), 0.0, 200.0, 8));
      expect_same({in.cpu.astype(dst), in.ref.astype(dst)}, "astype " + describe(layout->name, kBig, src) + " -> " + std::string(dtype_name(dst)));
    }
  }
}

TEST_P(KernelsThreads, AssignAndFill) {
  for (Dtype d : {Dtype::float32, Dtype::float16, Dtype::int64, Dtype::bool_}) {
    for (const Layout* out_layout : kOutputLayouts) {
      for (const Layout* in_layout : {&kBroadcast, &kTransposed}) {
        Pair in = make_input(*in_layout, kBig, Dtype::float64, draw(in_layout->base(kBig).numel(), 0.0, 50.0, 9));
        Pair out = make_output(*out_layout, kBig, d);
        out.cpu.assign(in.cpu);
        out.ref.assign(in.ref);
        expect_same(out, "assign " + describe(in_layout->name, kBig, Dtype::float64) + " into " +
                        describe(out_layout->name, kBig, d));
      }
      Pair out = make_output(*out_layout, kBig, d);
      out.cpu.fill(1.5);
      out.ref.fill(1.5);
      expect_same(out, "fill " + describe(out_layout->name, kBig, d));
    }
  }
}

TEST_P(KernelsThreads, Unary) {
  auto run = [](UnaryOp op, double p0, double p1, Dtype d, const Layout& in_layout, const Layout& out_layout) {
    Pair in = make_input(in_layout, kBig, d, with_specials(in_layout.base(kBig).numel(), 11));
    Pair out = make_output(out_layout, kBig, d);
    cpu_kernels().unary(op, in.cpu, out.cpu, p0, p1);
    ref_kernels().unary(op, in.ref, out.ref, p0, p1);
    expect_same(out, unary_name(op) + " " + describe(in_layout.name, kBig, d) + " -> " + out_layout.name,
                test::kernel_tolerance(d));
  };
  for (UnaryOp op : kUnaryOps) {
    const auto [p0, p1] = unary_params(op)[0];
    run(op, p0, p1, Dtype::float32, kContiguous, kContiguous);
  }
  for (UnaryOp op : {UnaryOp::exp, UnaryOp::abs, UnaryOp::clip, UnaryOp::affine}) {
    const auto [p0, p1] = unary_params(op)[0];
    run(op, p0, p1, Dtype::float16, kContiguous, kContiguous);
    run(op, p0, p1, Dtype::bfloat16, kStrided, kContiguous);
    run(op, p0, p1, Dtype::float64, kTransposed, kStrided);
    run(op, p0, p1, Dtype::float32, kBroadcast, kTransposed);
  }
}

TEST_P(KernelsThreads, Scan) {
  // The other axes' runs are split among threads once they hold kParallelGrain / n scans.
  for (ScanOp op : {ScanOp::sum, ScanOp::prod, ScanOp::linear}) {
    for (const Layout* layout : {&kContiguous, &kTransposed}) {
      for (int64_t axis = 0; axis < 3; ++axis) {
        Pair x = make_input(*layout, kBig, Dtype::float32, draw(kBig.numel(), 0.5, 1.5, 31));
        Pair a = make_input(kContiguous, kBig, Dtype::float32, draw(kBig.numel(), -1.0, 1.0, 32));
        Pair out = make_output(kContiguous, kBig, Dtype::float32);
        cpu_kernels().scan(op, x.cpu, a.cpu, axis, axis == 1, out.cpu);
        ref_kernels().scan(op, x.ref, a.ref, axis, axis == 1, out.ref);
        expect_same(out, "scan axis " + std::to_string(axis) + " " + layout->name,
                    test::kernel_tolerance(Dtype::float32, kBig[static_cast<std::size_t>(axis)]));
      }
    }
  }
}

TEST_P(KernelsThreads, Binary) {
  auto run = [](BinaryOp op, Dtype d, const Layout& la, const Layout& lb, const Shape& shape, Dtype od) {
    auto [va, vb] = binary_values(op, d, la.base(shape).numel(), lb.base(shape).numel(), 13);
    Pair a = make_input(la, shape, d, va), b = make_input(lb, shape, d, vb);
    Pair out = make_output(kContiguous, shape, od);
    cpu_kernels().binary(op, a.cpu, b.cpu, out.cpu);
    ref_kernels().binary(op, a.ref, b.ref, out.ref);
    expect_same(out,
                binary_name(op) + " " + describe(la.name, shape, d) + " with " + lb.name + " -> " +
                    std::string(dtype_name(od)),
                test::kernel_tolerance(od));
  };
  for (BinaryOp op : kBinaryOps) run(op, Dtype::float32, kContiguous, kContiguous, kBig, Dtype::float32);
  for (BinaryOp op : {BinaryOp::add, BinaryOp::mul, BinaryOp::div, BinaryOp::maximum, BinaryOp::lt}) {
    run(op, Dtype::float32, kStrided, kTransposed, kBig, Dtype::float32);
    run(op, Dtype::float32, kBroadcast, kContiguous, kBig, Dtype::float32);
    run(op, Dtype::float64, kContiguous, kScalar, kBig, Dtype::float64);
    run(op, Dtype::float16, kScalar, kOffset, kBig, Dtype::float16);
  }
  for (Dtype d : {Dtype::int32, Dtype::bool_, Dtype::uint8}) {
    run(BinaryOp::add, d, kContiguous, kBroadcast, kBig, d);
    run(BinaryOp::div, d, kTransposed, kContiguous, kBig, d);
    run(BinaryOp::eq, d, kContiguous, kStrided, kBig, Dtype::bool_);
  }
  // One long run, split among the threads.
  run(BinaryOp::add, Dtype::float32, kContiguous, kContiguous, {70001}, Dtype::float32);
  run(BinaryOp::mul, Dtype::float64, kContiguous, kScalar, {70001}, Dtype::float64);
  run(BinaryOp::ge, Dtype::float32, kScalar, kContiguous, {70001}, Dtype::bool_);
}

TEST_P(KernelsThreads, Reduce) {
  for (ReduceOp op : kReduceOps) {
    const bool arg = op == ReduceOp::argmax || op == ReduceOp::argmin;
    for (Dtype d : {Dtype::float32, Dtype::int32}) {
      Pair x = make_input(kContiguous, kBig, d, reduce_values(op, d, kBig.numel(), 19, false));
      for (const Shape& axes : reduce_axes()) {
        if (arg && axes.size() != 1) continue;
        run_reduce(op, x, axes, kContiguous,
                   reduce_name(op) + " over " + to_string(axes) + " of " + describe("contiguous", kBig, d));
      }
    }
  }
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::argmin}) {
    const bool arg = op == ReduceOp::argmin;
    for (const Layout* layout : {&kStrided, &kTransposed, &kReversed, &kBroadcast}) {
      Pair x = make_input(*layout, kBig, Dtype::float64,
                          reduce_values(op, Dtype::float64, layout->base(kBig).numel(), 20, true));
      for (const Shape& axes : reduce_axes()) {
        if (arg && axes.size() != 1) continue;
        run_reduce(
            op, x, axes, kContiguous,
            reduce_name(op) + " over " + to_string(axes) + " of " + describe(layout->name, kBig, Dtype::float64));
      }
    }
  }
  Pair b = make_input(kContiguous, kBig, Dtype::bool_, 23);
  for (const Shape& axes : {Shape{0}, Shape{2}, Shape{0, 1, 2}})
    run_reduce(ReduceOp::sum, b, axes, kContiguous, "sum of bool");
  Pair t = make_input(kContiguous, kBig, Dtype::float32, 24);
  run_reduce(ReduceOp::sum, t, {1}, kTransposed, "sum into a transposed output");
  run_reduce(ReduceOp::argmax, t, {0}, kTransposed, "argmax into a transposed output");
  // One long reduction and a wide one over the leading axis.
  for (ReduceOp op : kReduceOps) {
    Pair x = make_input(kContiguous, {70000}, Dtype::float32, reduce_values(op, Dtype::float32, 70000, 21, false));
    run_reduce(op, x, {0}, kContiguous, reduce_name(op) + " of (70000,)");
    Pair w = make_input(kStrided, {50, 1000}, Dtype::float32, reduce_values(op, Dtype::float32, 100000, 22, false));
    run_reduce(op, w, {0}, kContiguous, reduce_name(op) + " over the rows of a strided (50, 1000)");
  }
}

// The fused LSTM and GRU cells in both gate layouts (Chainer's interleaved one and the n_step
// networks' blocks), with and without r and each optional gradient, in every floating dtype, below
// and above the threaded loops' threshold: the forward's outputs, and the backward's from the same
// saved activations (the cpu forward's), each within the tolerance of an elementwise formula.
TEST_P(KernelsThreads, RnnCells) {
  uint64_t seed = 40;
  auto input = [&](const Shape& s, Dtype d) { return make_input(kContiguous, s, d, ++seed); };
  auto output = [](const Shape& s, Dtype d) { return make_output(kContiguous, s, d); };
  auto expect_close = [](const Pair& p, Dtype d, const std::string& what) {
    EXPECT_TRUE(test::close_within(p.cpu, p.ref.to(Device::cpu()), test::reference_tolerance(d))) << what;
  };
  for (Dtype d : kFloatDtypes) {
    for (const auto& [B, H] : {std::pair<int64_t, int64_t>{5, 3}, {300, 40}}) {  // 300 x 4 x 40 = 48000
      if (B > 5 && d != Dtype::float32) continue;  // the threaded rows: one dtype is enough
      const std::string where = std::string(dtype_name(d)) + " B " + std::to_string(B) + " H " + std::to_string(H);
      for (const LstmGates& g : {LstmGates{}, LstmGates{1, 2 * H, 0, H, 3 * H}}) {
        const std::string layout = g.unit_stride == 4 ? " interleaved" : " blocks";
        for (bool with_r : {false, true}) {
          const std::string what = "lstm " + where + layout + (with_r ? " with r" : "");
          const Pair x = input({B, 4 * H}, d), r = with_r ? input({B, 4 * H}, d) : Pair{}, cp = input({B, H}, d);
          const Pair act = output({B, 4 * H}, d), c = output({B, H}, d), h = output({B, H}, d);
          cpu_kernels().lstm_forward(x.cpu, r.cpu, cp.cpu, act.cpu, c.cpu, h.cpu, g);
          ref_kernels().lstm_forward(x.ref, r.ref, cp.ref, act.ref, c.ref, h.ref, g);
          expect_close(act, d, what + ": act");
          expect_close(c, d, what + ": c");
          expect_close(h, d, what + ": h");
          const Pair saved{act.cpu, act.cpu.to(Device::reference())}, cell{c.cpu, c.cpu.to(Device::reference())};
          for (const auto& [with_gc, with_gh] : {std::pair{true, true}, {true, false}, {false, true}}) {
            const std::string grads = std::string(with_gc ? " gc" : "") + (with_gh ? " gh" : "");
            const Pair gc = with_gc ? input({B, H}, d) : Pair{}, gh = with_gh ? input({B, H}, d) : Pair{};
            const Pair gx = output({B, 4 * H}, d), gcp = output({B, H}, d);
            cpu_kernels().lstm_backward(saved.cpu, cp.cpu, cell.cpu, gc.cpu, gh.cpu, gx.cpu, gcp.cpu, g);
            ref_kernels().lstm_backward(saved.ref, cp.ref, cell.ref, gc.ref, gh.ref, gx.ref, gcp.ref, g);
            expect_close(gx, d, what + grads + ": gx");
            expect_close(gcp, d, what + grads + ": gc_prev");
          }
        }
      }
      const std::string what = "gru " + where;
      const Pair x = input({B, 3 * H}, d), r = input({B, 3 * H}, d), hp = input({B, H}, d);
      const Pair act = output({B, 3 * H}, d), h = output({B, H}, d);
      cpu_kernels().gru_forward(x.cpu, r.cpu, hp.cpu, act.cpu, h.cpu);
      ref_kernels().gru_forward(x.ref, r.ref, hp.ref, act.ref, h.ref);
      expect_close(act, d, what + ": act");
      expect_close(h, d, what + ": h");
      const Pair saved{act.cpu, act.cpu.to(Device::reference())}, gh = input({B, H}, d);
      const Pair gx = output({B, 3 * H}, d), gr = output({B, 3 * H}, d), ghp = output({B, H}, d);
      cpu_kernels().gru_backward(saved.cpu, r.cpu, hp.cpu, gh.cpu, gx.cpu, gr.cpu, ghp.cpu);
      ref_kernels().gru_backward(saved.ref, r.ref, hp.ref, gh.ref, gx.ref, gr.ref, ghp.ref);
      expect_close(gx, d, what + ": gx");
      expect_close(gr, d, what + ": gr");
      expect_close(ghp, d, what + ": gh_prev");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, KernelsThreads, ::testing::Values(1, 2),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "thread";
                         });
