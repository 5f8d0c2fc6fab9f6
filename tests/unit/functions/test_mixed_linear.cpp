// linear's mixed form (16-bit x, float32 W and b), what Linear runs under a mixed policy: the output
// equals casting W and b first; the gradients of W and b are float32 products never rounded to 16
// bits; both backends and both backward forms (the kernel and, for double backprop, the composite)
// agree.
#include <vector>

#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::randn;

namespace {

struct Out {
  Array y, gx, gW, gb;
};

Out run(const Array& x, const Array& W, const Array& b, const Array& gy, bool cast_first,
        bool double_backprop = false) {
  Variable vx(x, true), vW(W, true), vb(b, true);
  const Variable y = cast_first ? F::linear(vx, F::cast(vW, x.dtype()), F::cast(vb, x.dtype())) : F::linear(vx, vW, vb);
  const std::vector<Variable> g = grad({y}, {vx, vW, vb}, {Variable(gy)}, {.enable_double_backprop = double_backprop});
  return {y.array(), g[0].array(), g[1].array(), g[2].array()};
}

double max_rel_error(const Array& got, const Array& want) {
  const std::vector<double> a = got.to(Device::cpu()).to_vector<double>(),
                            b = want.to(Device::cpu()).to_vector<double>();
  double scale = 0.0, err = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, std::abs(b[i]));
    err = std::max(err, std::abs(a[i] - b[i]));
  }
  return scale > 0 ? err / scale : err;
}

TEST(MixedLinear, MatchesCastFirstWithFloat32ParameterGradients) {
  for (Device dev : {Device::cpu(), Device::reference()}) {
    for (Dtype dt : {Dtype::bfloat16, Dtype::float16}) {
      const Array x = randn({64, 48}, dt, 1, dev), gy = randn({64, 40}, dt, 2, dev);
      const Array W = randn({40, 48}, Dtype::float32, 3, dev), b = randn({40}, Dtype::float32, 4, dev);
      const Out mixed = run(x, W, b, gy, false), first = run(x, W, b, gy, true);
      const std::string what = std::string(dtype_name(dt)) + " on " + (dev == Device::cpu() ? "cpu" : "reference");
      EXPECT_EQ(mixed.y.dtype(), dt) << what;
      EXPECT_EQ(mixed.gx.dtype(), dt) << what;
      EXPECT_EQ(mixed.gW.dtype(), Dtype::float32) << what;
      EXPECT_EQ(mixed.gb.dtype(), Dtype::float32) << what;
      // The forward and gx are the cast-first computation's.
      EXPECT_TRUE(allclose(mixed.y, first.y, 0.0, 0.0)) << what;
      EXPECT_TRUE(allclose(mixed.gx, first.gx, 0.0, 0.0)) << what;
      // gW = gy^T x and gb = sum gy in float64 from the same 16-bit values: the mixed form is float32
      // accurate, the cast-first form rounds them to 16 bits.
      const Array gW64 =
          F::matmul(Variable(gy.astype(Dtype::float64)), Variable(x.astype(Dtype::float64)), true, false).array();
      const Array gb64 = F::sum(Variable(gy.astype(Dtype::float64)), Shape{0}).array();
      EXPECT_LT(max_rel_error(mixed.gW, gW64), 1e-5) << what;
      EXPECT_LT(max_rel_error(mixed.gb, gb64), 1e-5) << what;
      EXPECT_GT(max_rel_error(first.gW, gW64), 1e-4) << what << ": the test should tell the forms apart";
    }
  }
}

TEST(MixedLinear, DoubleBackpropFormAgreesAndHigherRankInputs) {
  const Array x = randn({8, 3, 4}, Dtype::bfloat16, 11), gy = randn({8, 5}, Dtype::bfloat16, 12);
  const Array W = randn({5, 12}, Dtype::float32, 13), b = randn({5}, Dtype::float32, 14);
  const Out kernel = run(x, W, b, gy, false), composite = run(x, W, b, gy, false, true);
  EXPECT_EQ(kernel.gx.shape(), x.shape());
  EXPECT_TRUE(allclose(kernel.gx, composite.gx, 1e-2, 1e-2));
  EXPECT_EQ(composite.gW.dtype(), Dtype::float32);
  // The composite rounds gW through bfloat16: equal within its precision.
  EXPECT_TRUE(allclose(kernel.gW, composite.gW, 1e-2, 1e-2));
  EXPECT_TRUE(allclose(kernel.gb, composite.gb, 1e-2, 1e-2));
}

TEST(MixedLinear, OtherDtypeMixesAreRefused) {
  const Variable x(randn({4, 3}, Dtype::float32, 21)), W64(randn({2, 3}, Dtype::float64, 22));
  rensa::test::expect_error<DtypeError>([&] { F::linear(x, W64); }, {"linear"});
  const Variable xh(randn({4, 3}, Dtype::bfloat16, 23)), W32(randn({2, 3}, Dtype::float32, 24));
  const Variable bh(randn({2}, Dtype::bfloat16, 25));
  rensa::test::expect_error<DtypeError>([&] { F::linear(xh, W32, bh); }, {"linear"});
}

}  // namespace
