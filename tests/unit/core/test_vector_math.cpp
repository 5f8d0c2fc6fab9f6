// The vectorizable float exp, sigmoid and tanh of the LSTM cell (src/backends/common/vector_math.h)
// against libm in double, over a dense sweep of [-100, 100] and the special values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "src/backends/common/vector_math.h"

namespace vm = rensa::backends::vmath;

namespace {

// Every float step of 1/1024 over [lo, hi], plus values near 0 down to the smallest normal.
template <class F>
void sweep(double lo, double hi, F&& check) {
  for (double x = lo; x <= hi; x += 1.0 / 1024.0) check(static_cast<float>(x));
  for (float x = 1e-3f; x > std::numeric_limits<float>::min(); x *= 0.5f) {
    check(x);
    check(-x);
  }
  check(0.0f);
}

TEST(VectorMath, ExpWithinTwoUlpWhereRepresentable) {
  double worst = 0;
  sweep(-87.0, 88.0, [&](float x) {
    const double want = std::exp(static_cast<double>(x));
    const double ulp = std::nextafter(static_cast<float>(want), std::numeric_limits<float>::infinity()) -
                       static_cast<float>(want);
    worst = std::max(worst, std::abs(vm::exp(x) - want) / ulp);
  });
  EXPECT_LE(worst, 2.0);
}

TEST(VectorMath, ExpSaturatesAndKeepsNan) {
  EXPECT_EQ(vm::exp(-1000.0f), vm::exp(-87.3f));
  EXPECT_LT(vm::exp(-1000.0f), 1e-37f);
  EXPECT_GT(vm::exp(1000.0f), 1e38f);
  EXPECT_TRUE(std::isfinite(vm::exp(std::numeric_limits<float>::infinity())));
  EXPECT_TRUE(std::isnan(vm::exp(std::numeric_limits<float>::quiet_NaN())));
}

TEST(VectorMath, SigmoidAndTanhAccurate) {
  double worst_abs = 0, worst_rel = 0;
  auto track = [&](double got, double want) {
    worst_abs = std::max(worst_abs, std::abs(got - want));
    if (want != 0) worst_rel = std::max(worst_rel, std::abs(got - want) / std::abs(want));
  };
  sweep(-100.0, 100.0, [&](float x) {
    const double d = x;
    track(vm::sigmoid(x), d >= 0 ? 1 / (1 + std::exp(-d)) : std::exp(d) / (1 + std::exp(d)));
    track(vm::tanh(x), std::tanh(d));
  });
  EXPECT_LE(worst_abs, 2e-7);
  // Below x = -87 sigmoid saturates at e^-87.3, far below any float32 gradient that matters.
  worst_rel = 0;
  sweep(-87.0, 100.0, [&](float x) {
    const double d = x;
    track(vm::sigmoid(x), d >= 0 ? 1 / (1 + std::exp(-d)) : std::exp(d) / (1 + std::exp(d)));
    track(vm::tanh(x), std::tanh(d));
  });
  EXPECT_LE(worst_rel, 4e-7);
}

TEST(VectorMath, SpecialValues) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(vm::sigmoid(inf), 1.0f);
  EXPECT_EQ(vm::sigmoid(-inf), vm::exp(-87.3f) / (1.0f + vm::exp(-87.3f)));
  EXPECT_EQ(vm::tanh(inf), 1.0f);
  EXPECT_EQ(vm::tanh(-inf), -1.0f);
  EXPECT_EQ(vm::tanh(0.0f), 0.0f);
  EXPECT_EQ(vm::sigmoid(0.0f), 0.5f);
  EXPECT_TRUE(std::isnan(vm::sigmoid(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(vm::tanh(std::numeric_limits<float>::quiet_NaN())));
  // Odd and symmetric exactly.
  for (float x : {0.1f, 0.349f, 0.351f, 3.0f, 20.0f}) {
    EXPECT_EQ(vm::tanh(-x), -vm::tanh(x));
    EXPECT_FLOAT_EQ(vm::sigmoid(-x) + vm::sigmoid(x), 1.0f);
  }
}

}  // namespace
