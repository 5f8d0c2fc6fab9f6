// bfloat16 matrix products, convolutions (forward, backward data, backward weights, through
// deconvolution_2d too) and pooling on the cpu backend, against float64 on the reference backend of
// the same bf16-rounded inputs. Where the CPU has native bf16 (rensa::native_bf16()) the cpu
// backend runs oneDNN's bf16 kernels; CTest also runs this binary with RENSA_NATIVE_BF16=0
// (test_half_kernels.fallback), which covers the float32 fallback.
//
// The tolerance: with inputs that are exact in bf16, a native kernel multiplies exactly in float32
// and accumulates in float32, so the error is the final rounding to bf16 (at most 2^-9 of |y|, 0.2%)
// plus float32 accumulation (K * 2^-24 of sum |a b| over the K terms, about 6e-8 K times a small
// multiple of max |y| for these random inputs: under 0.1% for the K <= 2000 used here). The
// float32 fallback has the same bound. 1e-2 of the output's scale (its largest magnitude) leaves
// ample room and still catches a wrong tap, a wrong transpose or a dropped term, which are errors
// of the order of the scale.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "rensa/rensa.h"
#include "rensa/testing/gradient_check.h"
#include "tests/unit/test_util.h"

namespace {

using rensa::Array;
using rensa::Conv2dParams;
using rensa::Device;
using rensa::Dtype;
using rensa::MemoryFormat;
using rensa::Pool2dParams;
using rensa::Shape;
using rensa::Variable;
namespace F = rensa::functions;

constexpr double kRel = 1e-2;  // see the file comment

const rensa::KernelTable& cpu_kernels() {
  return rensa::get_backend(Device::cpu()).kernels();
}
const rensa::KernelTable& ref_kernels() {
  return rensa::get_backend(Device::reference()).kernels();
}

// A random bf16 array (values exact in bf16).
Array rand_bf16(const Shape& shape, uint64_t seed) {
  return rensa::test::randn(shape, Dtype::float32, seed).astype(Dtype::bfloat16);
}

// `a`'s values in float64 on the reference backend (exact: bf16 converts exactly).
Array ref64(const Array& a) {
  return a.is_null() ? a : a.astype(Dtype::float64).to(Device::reference());
}

// Expects bf16 `got` within kRel of the largest magnitude of `want` (float64) everywhere.
void expect_close(const Array& got, const Array& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), Dtype::bfloat16) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const auto g = got.astype(Dtype::float64).to_vector<double>();
  const auto w = want.to(Device::cpu()).astype(Dtype::float64).to_vector<double>();
  double scale = 0.0;
  for (double v : w) scale = std::max(scale, std::abs(v));
  const double tol = kRel * scale;
  int bad = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (!(std::abs(g[i] - w[i]) <= tol) && bad++ < 5) {
      ADD_FAILURE() << what << ": element " << i << ": " << g[i] << " vs " << w[i] << " (tolerance " << tol << ")";
    }
  }
}

bool fallback_run() {
  const char* env = std::getenv("RENSA_NATIVE_BF16");
  return env != nullptr && std::strcmp(env, "0") == 0;
}

TEST(HalfKernels, NativeSwitch) {
  const auto& f = rensa::cpu_features();
  const bool has = f.avx512_bf16 || f.amx_bf16;
  EXPECT_EQ(rensa::native_bf16(), has && !fallback_run());
  if (has) {
    EXPECT_TRUE(f.avx512f);
  }
  const std::string bf = rensa::half_compute_path(Dtype::bfloat16), h = rensa::half_compute_path(Dtype::float16);
  EXPECT_EQ(bf.rfind("bfloat16: ", 0), 0u) << bf;
  EXPECT_NE(bf.find(rensa::native_bf16() ? "oneDNN bf16" : "float32 compute"), std::string::npos) << bf;
  EXPECT_EQ(h.rfind("float16: float32 compute", 0), 0u) << h;
  EXPECT_EQ(rensa::half_compute_path(Dtype::float32), "float32: computed in float32");
  // Convolution outputs of bf16 are channels-last exactly when they run natively.
  EXPECT_EQ(cpu_kernels().conv2d_memory_format(Dtype::bfloat16),
            rensa::native_bf16() ? MemoryFormat::channels_last : MemoryFormat::contiguous);
}

// ---- matmul ----------------------------------------------------------------------------------------

// out = a @ b in bf16 on the cpu against float64 on the reference backend; a and b are views.
void check_matmul(const Array& a, const Array& b, const std::string& what) {
  std::vector<int64_t> dims(a.shape().begin(), a.shape().end());
  dims.back() = b.shape().back();
  const Shape os(dims);
  Array out = Array::empty(os, Dtype::bfloat16, Device::cpu());
  cpu_kernels().matmul(a, b, out);
  Array want = Array::empty(os, Dtype::float64, Device::reference());
  ref_kernels().matmul(ref64(a), ref64(b), want);
  expect_close(out, want, what);
}

TEST(HalfKernels, Matmul2d) {
  const int64_t sizes[][3] = {{1, 1, 1}, {17, 33, 65}, {64, 784, 100}, {3, 1, 5}, {1, 40, 1}, {2, 2000, 3}};
  for (const auto& s : sizes) {
    const int64_t m = s[0], k = s[1], n = s[2];
    std::ostringstream os;
    os << Shape{m, k} << " @ " << Shape{k, n};
    const std::string what = os.str();
    check_matmul(rand_bf16({m, k}, 1), rand_bf16({k, n}, 2), what);
    check_matmul(rand_bf16({k, m}, 3).transpose(), rand_bf16({k, n}, 4), what + " a transposed");
    check_matmul(rand_bf16({m, k}, 5), rand_bf16({n, k}, 6).transpose(), what + " b transposed");
    check_matmul(rand_bf16({k, m}, 7).transpose(), rand_bf16({n, k}, 8).transpose(), what + " both transposed");
    check_matmul(rensa::testing::make_noncontiguous(rand_bf16({m, k}, 9)),
                 rensa::testing::make_noncontiguous(rand_bf16({k, n}, 10)), what + " non-contiguous");
  }
}

TEST(HalfKernels, MatmulEmpty) {
  Array out = Array::full({4, 3}, 7.0, Dtype::bfloat16, Device::cpu());
  cpu_kernels().matmul(rand_bf16({4, 0}, 1), rand_bf16({0, 3}, 2), out);  // k = 0: zeros
  for (double v : out.astype(Dtype::float64).to_vector<double>()) EXPECT_EQ(v, 0.0);
  Array none = Array::empty({0, 3}, Dtype::bfloat16, Device::cpu());
  cpu_kernels().matmul(rand_bf16({0, 5}, 1), rand_bf16({5, 3}, 2), none);  // m = 0: nothing
  Variable y = F::matmul(rand_bf16({2, 0}, 3), rand_bf16({0, 6}, 4));
  EXPECT_EQ(y.shape(), (Shape{2, 6}));
  EXPECT_EQ(y.dtype(), Dtype::bfloat16);
}

TEST(HalfKernels, MatmulBatched) {
  check_matmul(rand_bf16({4, 17, 33}, 1), rand_bf16({4, 33, 9}, 2), "batched");
  check_matmul(rand_bf16({4, 33, 17}, 3).transpose({0, 2, 1}), rand_bf16({4, 9, 33}, 4).transpose({0, 2, 1}),
               "batched, both transposed");
  // Broadcast batch axes (stride 0), as matmul passes them.
  check_matmul(rand_bf16({17, 33}, 5).broadcast_to({2, 3, 17, 33}), rand_bf16({2, 3, 33, 8}, 6), "a broadcast");
  check_matmul(rand_bf16({2, 1, 5, 7}, 7).broadcast_to({2, 3, 5, 7}),
               rand_bf16({1, 3, 7, 4}, 8).broadcast_to({2, 3, 7, 4}), "both broadcast");
  check_matmul(rand_bf16({3, 1, 1}, 9), rand_bf16({3, 1, 1}, 10), "1x1 batches");
  check_matmul(rand_bf16({1, 4, 6}, 13).broadcast_to({3, 4, 6}), rand_bf16({1, 6, 2}, 14).broadcast_to({3, 6, 2}),
               "both broadcast on the same axis");
  // More axes than the primitive takes.
  check_matmul(rand_bf16({2, 1, 2, 1, 2, 3, 4}, 11), rand_bf16({2, 1, 2, 1, 2, 4, 5}, 12), "seven axes");
}

TEST(HalfKernels, MatmulFunctions) {
  // F::matmul with transposes and F::linear with its backward, against float64 on the reference.
  Array a = rand_bf16({12, 30}, 1), b = rand_bf16({20, 30}, 2), bias = rand_bf16({20}, 3);
  expect_close(F::matmul(a, b, false, true).array(), F::matmul(ref64(a), ref64(b), false, true).array(),
               "matmul transb");
  Variable x(a, true), w(b, true), xb(bias, true);
  Variable y = F::linear(x, w, xb);
  Variable x64(ref64(a), true), w64(ref64(b), true), b64(ref64(bias), true);
  Variable y64 = F::linear(x64, w64, b64);
  expect_close(y.array(), y64.array(), "linear");
  Array gy = rand_bf16(y.shape(), 4);
  y.set_grad(Variable(gy));
  y.backward();
  y64.set_grad(Variable(ref64(gy)));
  y64.backward();
  expect_close(x.grad().array(), x64.grad().array(), "linear gx");
  expect_close(w.grad().array(), w64.grad().array(), "linear gW");
}

TEST(HalfKernels, MatmulErrors) {
  rensa::test::expect_error<rensa::ShapeError>(
      [] {
        F::matmul(rand_bf16({2, 3}, 1), rand_bf16({4, 5}, 2));
      },
      {"matmul", "(2, 3)", "(4, 5)"});
  rensa::test::expect_error<rensa::DtypeError>(
      [] {
        F::matmul(rand_bf16({2, 3}, 1), rensa::test::randn({3, 5}, Dtype::float32));
      },
      {"matmul"});
}

// ---- convolution -----------------------------------------------------------------------------------

struct ConvCase {
  Shape x, w;
  Conv2dParams p;
  bool bias;
};

int64_t out_extent(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t d) {
  return (in + 2 * pad - ((k - 1) * d + 1)) / s + 1;
}

const ConvCase kConvCases[] = {
    {{2, 3, 9, 9}, {8, 3, 3, 3}, {}, true},
    {{2, 16, 8, 7}, {32, 16, 3, 3}, {.stride_y = 2, .stride_x = 2, .pad_y = 1, .pad_x = 1}, true},
    {{1, 8, 10, 11}, {6, 4, 3, 2}, {.pad_y = 2, .pad_x = 1, .dilate_y = 2, .dilate_x = 3, .groups = 2}, false},
    {{3, 32, 6, 6}, {32, 1, 3, 3}, {.pad_y = 1, .pad_x = 1, .groups = 32}, true},  // depthwise
    {{2, 1, 12, 12}, {5, 1, 5, 5}, {.stride_y = 1, .stride_x = 2}, true},
    {{1, 64, 5, 5}, {16, 64, 1, 1}, {}, false},
};

TEST(HalfKernels, Conv2d) {
  for (const ConvCase& c : kConvCases) {
    const Shape ys{c.x[0], c.w[0], out_extent(c.x[2], c.w[2], c.p.stride_y, c.p.pad_y, c.p.dilate_y),
                   out_extent(c.x[3], c.w[3], c.p.stride_x, c.p.pad_x, c.p.dilate_x)};
    Array x = rand_bf16(c.x, 1), w = rand_bf16(c.w, 2), b = c.bias ? rand_bf16({c.w[0]}, 3) : Array();
    Array gy = rand_bf16(ys, 4);
    std::ostringstream name;
    name << "x " << c.x << " W " << c.w << " stride " << c.p.stride_y << "," << c.p.stride_x << " pad " << c.p.pad_y
         << "," << c.p.pad_x << " dilate " << c.p.dilate_y << "," << c.p.dilate_x << " groups " << c.p.groups;
    Array y64 = Array::empty(ys, Dtype::float64, Device::reference());
    ref_kernels().conv2d_forward(ref64(x), ref64(w), ref64(b), y64, c.p);
    Array gx64 = Array::empty(c.x, Dtype::float64, Device::reference());
    ref_kernels().conv2d_backward_data(ref64(gy), ref64(w), gx64, c.p);
    Array gw64 = Array::empty(c.w, Dtype::float64, Device::reference());
    ref_kernels().conv2d_backward_weights(ref64(x), ref64(gy), gw64, c.p);
    for (MemoryFormat in : {MemoryFormat::contiguous, MemoryFormat::channels_last}) {
      for (MemoryFormat out : {MemoryFormat::contiguous, MemoryFormat::channels_last}) {
        const std::string what = name.str() + (in == MemoryFormat::channels_last ? " in NHWC" : " in NCHW") +
                                 (out == MemoryFormat::channels_last ? " out NHWC" : " out NCHW");
        Array y = Array::empty(ys, Dtype::bfloat16, Device::cpu(), out);
        cpu_kernels().conv2d_forward(x.to_memory_format(in), w, b, y, c.p);
        expect_close(y, y64, "forward " + what);
        Array gx = Array::empty(c.x, Dtype::bfloat16, Device::cpu(), out);
        cpu_kernels().conv2d_backward_data(gy.to_memory_format(in), w, gx, c.p);
        expect_close(gx, gx64, "backward data " + what);
        Array gw = Array::empty(c.w, Dtype::bfloat16, Device::cpu());
        cpu_kernels().conv2d_backward_weights(x.to_memory_format(in), gy.to_memory_format(out), gw, c.p);
        expect_close(gw, gw64, "backward weights " + what);
      }
    }
  }
}

TEST(HalfKernels, Conv2dFunctionWithGradients) {
  Array x = rand_bf16({2, 6, 9, 9}, 1), w = rand_bf16({8, 3, 3, 3}, 2), b = rand_bf16({8}, 3);
  const rensa::functions::Conv2dOptions opt{.stride = 2, .pad = 1, .groups = 2};
  Variable vx(x, true), vw(w, true), vb(b, true);
  Variable y = F::convolution_2d(vx, vw, vb, opt);
  EXPECT_EQ(y.array().is_channels_last() && !y.array().is_contiguous(), rensa::native_bf16());
  Variable vx64(ref64(x), true), vw64(ref64(w), true), vb64(ref64(b), true);
  Variable y64 = F::convolution_2d(vx64, vw64, vb64, opt);
  expect_close(y.array(), y64.array(), "convolution_2d");
  Array gy = rand_bf16(y.shape(), 4);
  y.set_grad(Variable(gy));
  y.backward();
  y64.set_grad(Variable(ref64(gy)));
  y64.backward();
  expect_close(vx.grad().array(), vx64.grad().array(), "convolution_2d gx");
  expect_close(vw.grad().array(), vw64.grad().array(), "convolution_2d gW");
  expect_close(vb.grad().array(), vb64.grad().array(), "convolution_2d gb");
}

TEST(HalfKernels, Deconvolution2d) {
  for (MemoryFormat in : {MemoryFormat::contiguous, MemoryFormat::channels_last}) {
    Array x = rand_bf16({2, 8, 5, 6}, 1).to_memory_format(in), w = rand_bf16({8, 3, 3, 3}, 2), b = rand_bf16({6}, 3);
    const rensa::functions::Deconv2dOptions opt{.stride = 2, .pad = 1, .groups = 2};
    Variable vx(x, true), vw(w, true), vb(b, true);
    Variable y = F::deconvolution_2d(vx, vw, vb, opt);
    Variable vx64(ref64(x), true), vw64(ref64(w), true), vb64(ref64(b), true);
    Variable y64 = F::deconvolution_2d(vx64, vw64, vb64, opt);
    expect_close(y.array(), y64.array(), "deconvolution_2d");
    Array gy = rand_bf16(y.shape(), 4);
    y.set_grad(Variable(gy));
    y.backward();
    y64.set_grad(Variable(ref64(gy)));
    y64.backward();
    expect_close(vx.grad().array(), vx64.grad().array(), "deconvolution_2d gx");
    expect_close(vw.grad().array(), vw64.grad().array(), "deconvolution_2d gW");
    expect_close(vb.grad().array(), vb64.grad().array(), "deconvolution_2d gb");
  }
}

TEST(HalfKernels, Conv2dErrors) {
  rensa::test::expect_error<rensa::ShapeError>(
      [] {
        F::convolution_2d(rand_bf16({2, 3, 5, 5}, 1), rand_bf16({4, 2, 3, 3}, 2));
      },
      {"convolution_2d", "(2, 3, 5, 5)", "(4, 2, 3, 3)"});
  rensa::test::expect_error<rensa::DtypeError>(
      [] {
        F::convolution_2d(rand_bf16({2, 3, 5, 5}, 1), rensa::test::randn({4, 3, 3, 3}, Dtype::float32));
      },
      {"convolution_2d"});
}

// ---- pooling ---------------------------------------------------------------------------------------

TEST(HalfKernels, Pooling) {
  const Pool2dParams params[] = {{.ksize_y = 2, .ksize_x = 2, .stride_y = 2, .stride_x = 2},
                                 {.ksize_y = 3, .ksize_x = 3, .stride_y = 2, .stride_x = 2, .pad_y = 1, .pad_x = 1}};
  for (const Pool2dParams& p : params) {
    for (MemoryFormat fmt : {MemoryFormat::contiguous, MemoryFormat::channels_last}) {
      const std::string what =
          std::string(fmt == MemoryFormat::channels_last ? "NHWC" : "NCHW") + " ksize " + std::to_string(p.ksize_y);
      const Shape xs{2, 5, 9, 8};
      const Shape ys{2, 5, (xs[2] + 2 * p.pad_y - p.ksize_y) / p.stride_y + 1,
                     (xs[3] + 2 * p.pad_x - p.ksize_x) / p.stride_x + 1};
      Array x = rand_bf16(xs, 1).to_memory_format(fmt), gy = rand_bf16(ys, 2).to_memory_format(fmt);
      // Max: values are copied, so cpu and reference agree exactly.
      Array y = Array::empty(ys, Dtype::bfloat16, Device::cpu(), fmt),
            yr = Array::empty(ys, Dtype::bfloat16, Device::reference());
      Array idx = Array::empty(ys, Dtype::int32, Device::cpu(), fmt),
            idxr = Array::empty(ys, Dtype::int32, Device::reference());
      cpu_kernels().max_pool2d_forward(x, y, idx, p);
      ref_kernels().max_pool2d_forward(x.to(Device::reference()), yr, idxr, p);
      EXPECT_TRUE(rensa::array_equal(y, yr.to(Device::cpu()))) << "max forward " << what;
      Array gx = Array::empty(xs, Dtype::bfloat16, Device::cpu(), fmt);
      cpu_kernels().max_pool2d_backward(gy, idx, gx);
      Array gx64 = Array::empty(xs, Dtype::float64, Device::reference());
      ref_kernels().max_pool2d_backward(ref64(gy), idxr, gx64);
      expect_close(gx, gx64, "max backward " + what);
      // Average: accumulated in float32, rounded once.
      Array ya = Array::empty(ys, Dtype::bfloat16, Device::cpu(), fmt),
            ya64 = Array::empty(ys, Dtype::float64, Device::reference());
      cpu_kernels().avg_pool2d_forward(x, ya, p);
      ref_kernels().avg_pool2d_forward(ref64(x), ya64, p);
      expect_close(ya, ya64, "average forward " + what);
      Array ga = Array::empty(xs, Dtype::bfloat16, Device::cpu(), fmt),
            ga64 = Array::empty(xs, Dtype::float64, Device::reference());
      cpu_kernels().avg_pool2d_backward(gy, ga, p);
      ref_kernels().avg_pool2d_backward(ref64(gy), ga64, p);
      expect_close(ga, ga64, "average backward " + what);
    }
  }
}

// The 16-bit pooling kernels read and write 16-bit storage and sum in float32: each result is the
// float32 kernel's on the widened inputs, rounded once, bit for bit (overlapping windows, padding,
// both layouts, both 16-bit dtypes). Mismatched input and output dtypes are refused.
TEST(HalfKernels, PoolingSumsInFloat32AndRoundsOnce) {
  const Pool2dParams params[] = {{.ksize_y = 2, .ksize_x = 2, .stride_y = 2, .stride_x = 2},
                                 {.ksize_y = 3, .ksize_x = 3, .stride_y = 2, .stride_x = 2, .pad_y = 1, .pad_x = 1},
                                 {.ksize_y = 3, .ksize_x = 2, .stride_y = 1, .stride_x = 1, .pad_y = 1}};
  for (Dtype half : {Dtype::bfloat16, Dtype::float16}) {
    for (const Pool2dParams& p : params) {
      for (MemoryFormat fmt : {MemoryFormat::contiguous, MemoryFormat::channels_last}) {
        const std::string what = std::string(rensa::dtype_name(half)) + " " +
                                 (fmt == MemoryFormat::channels_last ? "NHWC" : "NCHW") + " ksize " +
                                 std::to_string(p.ksize_y) + "x" + std::to_string(p.ksize_x);
        const Shape xs{3, 300, 7, 6};  // 300 channels: more than a pixel's stack buffer holds
        const Shape ys{3, 300, (xs[2] + 2 * p.pad_y - p.ksize_y) / p.stride_y + 1,
                       (xs[3] + 2 * p.pad_x - p.ksize_x) / p.stride_x + 1};
        const Array x = rensa::test::randn(xs, Dtype::float32, 11).astype(half).to_memory_format(fmt);
        const Array gy = rensa::test::randn(ys, Dtype::float32, 12).astype(half).to_memory_format(fmt);
        const Array x32 = x.astype(Dtype::float32), gy32 = gy.astype(Dtype::float32);
        auto empty = [&](const Shape& s, Dtype d) { return Array::empty(s, d, Device::cpu(), fmt); };
        auto expect_rounded = [&](const Array& got, const Array& f32, const std::string& op) {
          EXPECT_TRUE(rensa::array_equal(got, f32.astype(half))) << op << " " << what;
        };
        Array ya = empty(ys, half), ya32 = empty(ys, Dtype::float32);
        cpu_kernels().avg_pool2d_forward(x, ya, p);
        cpu_kernels().avg_pool2d_forward(x32, ya32, p);
        expect_rounded(ya, ya32, "average forward");
        Array ga = empty(xs, half), ga32 = empty(xs, Dtype::float32);
        cpu_kernels().avg_pool2d_backward(gy, ga, p);
        cpu_kernels().avg_pool2d_backward(gy32, ga32, p);
        expect_rounded(ga, ga32, "average backward");
        Array ym = empty(ys, half), idx = empty(ys, Dtype::int32);
        cpu_kernels().max_pool2d_forward(x, ym, idx, p);
        Array gm = empty(xs, half), gm32 = empty(xs, Dtype::float32);
        cpu_kernels().max_pool2d_backward(gy, idx, gm);
        cpu_kernels().max_pool2d_backward(gy32, idx, gm32);
        expect_rounded(gm, gm32, "max backward");
      }
    }
  }
  const Pool2dParams p{.ksize_y = 2, .ksize_x = 2, .stride_y = 2, .stride_x = 2};
  Array y32 = Array::empty({1, 2, 2, 2}, Dtype::float32, Device::cpu());
  rensa::test::expect_error<rensa::DtypeError>(
      [&] { cpu_kernels().avg_pool2d_forward(rand_bf16({1, 2, 4, 4}, 1), y32, p); },
      {"avg_pool2d_forward", "bfloat16", "float32", "differ"});
  Array gx32 = Array::empty({1, 2, 4, 4}, Dtype::float32, Device::cpu());
  rensa::test::expect_error<rensa::DtypeError>(
      [&] { cpu_kernels().avg_pool2d_backward(rand_bf16({1, 2, 2, 2}, 2), gx32, p); }, {"avg_pool2d_backward"});
}

// Max pooling of 16-bit floats compares them as they are: ties keep the first maximum, a NaN wins
// over numbers, exactly as on the reference backend, in both layouts.
TEST(HalfKernels, MaxPoolingTiesAndNaN) {
  const Pool2dParams p{.ksize_y = 3, .ksize_x = 2, .stride_y = 1, .stride_x = 2, .pad_y = 1, .pad_x = 0};
  const Shape xs{2, 3, 6, 8}, ys{2, 3, 6, 4};
  for (Dtype dt : {Dtype::bfloat16, Dtype::float16}) {
    // Few distinct values (many ties), a NaN in a few windows.
    Array base = rensa::test::randu(xs, -2.0, 2.0, Dtype::float64, 3);
    std::vector<double> v = base.to_vector<double>();
    for (double& e : v) e = std::round(e);
    v[5] = v[77] = v[200] = NAN;
    Array x = Array::from_vector(v, xs).astype(dt);
    for (MemoryFormat fmt : {MemoryFormat::contiguous, MemoryFormat::channels_last}) {
      Array y = Array::empty(ys, dt, Device::cpu(), fmt), idx = Array::empty(ys, Dtype::int32, Device::cpu(), fmt);
      Array yr = Array::empty(ys, dt, Device::reference()), idxr = Array::empty(ys, Dtype::int32, Device::reference());
      cpu_kernels().max_pool2d_forward(x.to_memory_format(fmt), y, idx, p);
      ref_kernels().max_pool2d_forward(x.to(Device::reference()), yr, idxr, p);
      EXPECT_TRUE(rensa::array_equal(idx, idxr.to(Device::cpu())))
          << dt << (fmt == MemoryFormat::channels_last ? " NHWC" : " NCHW");
      const auto a = y.astype(Dtype::float64).to_vector<double>(),
                 r = yr.to(Device::cpu()).astype(Dtype::float64).to_vector<double>();
      for (std::size_t i = 0; i < a.size(); ++i) {
        EXPECT_TRUE(a[i] == r[i] || (std::isnan(a[i]) && std::isnan(r[i])))
            << dt << " element " << i << ": " << a[i] << " vs " << r[i];
      }
    }
  }
}

// ---- conversions -----------------------------------------------------------------------------------

// float32 -> bfloat16 rounds to nearest even and keeps NaN a NaN, in the vectorized cast too.
TEST(HalfKernels, CastToBfloat16) {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          1.00390625f,
                          1.01171875f,
                          1.0078125f,
                          3.4e38f,
                          -3.4e38f,
                          1e-40f,
                          -1e-40f,
                          INFINITY,
                          -INFINITY,
                          NAN,
                          -NAN,
                          std::bit_cast<float>(0x7f800001u),
                          std::bit_cast<float>(0xffffffffu),
                          std::bit_cast<float>(0x7f7fffffu),
                          std::bit_cast<float>(0x3f808000u),
                          std::bit_cast<float>(0x3f818000u),
                          std::bit_cast<float>(0x3f808001u)};
  for (int i = 0; i < 5000; ++i) v.push_back(std::bit_cast<float>(static_cast<uint32_t>(i) * 2654435761u));
  Array f = Array::from_vector(v, Shape{static_cast<int64_t>(v.size())});
  Array b = f.astype(Dtype::bfloat16);
  const auto* bits = static_cast<const uint16_t*>(b.raw_data());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const uint16_t want = rensa::BFloat16(v[i]).bits;
    if (std::isnan(v[i])) {
      EXPECT_TRUE(std::isnan(rensa::detail::bfloat16_bits_to_float(bits[i]))) << i;
    } else {
      EXPECT_EQ(bits[i], want) << "element " << i << " = " << v[i];
    }
  }
}

// The float16 conversions (branch-free, so casts vectorize) against the integer formulas they
// replaced: every half to float, and floats over every exponent with many mantissas (ties, the
// subnormal and overflow boundaries, NaN and infinity among them), through the scalar type and
// through the array cast. The two were also compared on all 2^32 floats when written.
uint16_t float_to_half_reference(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (x > 0x7f800000u ? 0x200u : 0u));
  if (x >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (x < 0x38800000u) {
    if (x < 0x33000000u) return static_cast<uint16_t>(sign);
    const uint32_t mant = (x & 0x7fffffu) | 0x800000u, shift = 126u - (x >> 23);
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = (x - 0x38000000u) >> 13;
  const uint32_t rem = x & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float half_to_float_reference(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = static_cast<float>(mant) * (1.0f / 16777216.0f);
    return mant == 0 ? std::bit_cast<float>(sign) : (sign ? -v : v);
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

TEST(HalfKernels, Float16Conversions) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto b = static_cast<uint16_t>(h);
    ASSERT_EQ(std::bit_cast<uint32_t>(rensa::detail::half_bits_to_float(b)),
              std::bit_cast<uint32_t>(half_to_float_reference(b)))
        << std::hex << h;
  }
  std::vector<float> v;
  for (uint32_t e = 0; e < 512; ++e) {  // sign and exponent
    for (uint32_t m : {0u, 1u, 0xfffu, 0x1000u, 0x1001u, 0x2000u, 0x3000u, 0x7fffffu, 0x400000u, 0x7fe000u}) {
      v.push_back(std::bit_cast<float>((e << 23) | m));
    }
    for (uint32_t k = 0; k < 64; ++k) v.push_back(std::bit_cast<float>((e << 23) | ((k * 2654435761u) & 0x7fffffu)));
  }
  for (float f : v) {
    ASSERT_EQ(rensa::detail::float_to_half_bits(f), float_to_half_reference(f))
        << std::hex << std::bit_cast<uint32_t>(f);
  }
  Array h = Array::from_vector(v, Shape{static_cast<int64_t>(v.size())}).astype(Dtype::float16);
  const auto* bits = static_cast<const uint16_t*>(h.raw_data());
  for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(bits[i], float_to_half_reference(v[i])) << i;
}

}  // namespace
