#include <gtest/gtest.h>

#include <cmath>

#include "rensa/rensa.h"

using namespace rensa;

TEST(Array, CreationAndViews) {
  Array a = Array::arange(0, 6, 1, Dtype::float32).reshape({2, 3});
  EXPECT_EQ(a.shape(), (Shape{2, 3}));
  EXPECT_TRUE(a.is_contiguous());
  Array t = a.transpose();
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_TRUE(t.shares_storage(a));
  EXPECT_EQ(t.at<float>({2, 1}), 5.0f);
  Array c = t.copy();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(Array, ReshapeOfTransposedCopiesOnlyWhenNeeded) {
  Array a = Array::arange(24, Dtype::float32).reshape({2, 3, 4});
  Array v = a.transpose({1, 0, 2}).reshape({3, 2, 2, 2});  // splits the contiguous last axis: a view
  EXPECT_TRUE(v.shares_storage(a));
  Array c = a.transpose().reshape({24});
  EXPECT_FALSE(c.shares_storage(a));
  EXPECT_EQ(c.at<float>({1}), 12.0f);
  EXPECT_THROW(a.reshape({5, 5}), ShapeError);
}

TEST(Array, SliceWithSteps) {
  Array a = Array::arange(10, Dtype::int64);
  EXPECT_EQ(a.slice(0, 1, 8, 3).to_vector<int64_t>(), (std::vector<int64_t>{1, 4, 7}));
  EXPECT_EQ(a.slice(0, std::nullopt, std::nullopt, -2).to_vector<int64_t>(), (std::vector<int64_t>{9, 7, 5, 3, 1}));
  EXPECT_EQ(a.slice(0, 20, 30).size(), 0);
  Array b = Array::arange(12, Dtype::int32).reshape({3, 4});
  Array r = b.index({Slice{1, std::nullopt}, NewAxis{}, int64_t{-1}});
  EXPECT_EQ(r.shape(), (Shape{2, 1}));
  EXPECT_EQ(r.to_vector<int32_t>(), (std::vector<int32_t>{7, 11}));
  EXPECT_THROW(b.index({int64_t{3}}), IndexError);
}

TEST(Array, BroadcastSqueezeExpand) {
  Array a = Array::arange(3, Dtype::float64).reshape({3, 1});
  Array b = a.broadcast_to({2, 3, 4});
  EXPECT_EQ(b.strides()[0], 0);
  EXPECT_EQ(b.at<double>({1, 2, 3}), 2.0);
  EXPECT_THROW(a.broadcast_to({2, 2}), ShapeError);
  EXPECT_EQ(a.squeeze().shape(), (Shape{3}));
  EXPECT_EQ(a.expand_dims(0).shape(), (Shape{1, 3, 1}));
  EXPECT_THROW(a.squeeze({0}), ShapeError);
}

TEST(Array, AstypeRoundsHalfToEven) {
  Array a = Array::from_vector<float>({1.0f + 0x1p-11f, 65520.0f, -0.5f});
  Array h = a.astype(Dtype::float16);
  EXPECT_EQ(h.data<Half>()[0].bits, 0x3c00);
  EXPECT_TRUE(std::isinf(static_cast<float>(h.data<Half>()[1])));
  EXPECT_EQ(h.astype(Dtype::float32).to_vector<float>()[2], -0.5f);
  Array i = Array::from_vector<double>({1.7, -1.7}).astype(Dtype::int32);
  EXPECT_EQ(i.to_vector<int32_t>(), (std::vector<int32_t>{1, -1}));
}

TEST(Array, FactoriesAndPrinting) {
  EXPECT_EQ(Array::linspace(0, 1, 5).to_vector<float>(), (std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1}));
  EXPECT_EQ(Array::full({2}, 3.5, Dtype::float64).to_string(), "array([3.5, 3.5])");
  EXPECT_EQ(Array::arange(0, 4, 1, Dtype::float32).reshape({2, 2}).to_string(),
            "array([[0., 1.],\n       [2., 3.]], dtype=float32)");
  EXPECT_EQ(Array::from_vector<int32_t>({1, 20}).to_string(), "array([ 1, 20], dtype=int32)");
  EXPECT_EQ(Array::scalar(2.0, Dtype::float64).to_string(), "array(2.)");
  EXPECT_EQ(Array::zeros({0, 3}).to_string(), "array([], shape=(0, 3), dtype=float32)");
  EXPECT_EQ(Array::from_vector<double>({1.5, 2.25}).to_string(), "array([1.5 , 2.25])");
  EXPECT_THROW(Array::arange(0, 1, 0), ValueError);
}

TEST(Random, SameNumbersEveryRunAndBackend) {
  Generator g1(42), g2(42);
  Array a = random::normal({1000}, 0.0, 1.0, Dtype::float64, Device::cpu(), &g1);
  Array b = random::normal({1000}, 0.0, 1.0, Dtype::float64, Device::reference(), &g2);
  EXPECT_TRUE(array_equal(a, b));
  auto v = a.to_vector<double>();
  double mean = 0, var = 0;
  for (double x : v) mean += x / 1000.0;
  for (double x : v) var += (x - mean) * (x - mean) / 1000.0;
  EXPECT_NEAR(mean, 0.0, 0.1);
  EXPECT_NEAR(var, 1.0, 0.1);
  Generator g3(42);
  Array u = random::uniform({4}, 2.0, 3.0, Dtype::float32, Device::cpu(), &g3);
  for (float x : u.to_vector<float>()) {
    EXPECT_GE(x, 2.0f);
    EXPECT_LT(x, 3.0f);
  }
  // Drawing in two calls gives the same stream as one call.
  Generator g4(7), g5(7);
  Array whole = random::uniform({10}, 0, 1, Dtype::float64, Device::cpu(), &g4);
  Array p1 = random::uniform({4}, 0, 1, Dtype::float64, Device::cpu(), &g5);
  Array p2 = random::uniform({6}, 0, 1, Dtype::float64, Device::cpu(), &g5);
  EXPECT_EQ(whole.to_vector<double>()[5], p2.to_vector<double>()[1]);
}

// Regression: a shape whose byte count overflows used to wrap around to a small allocation.
TEST(Array, EmptyRefusesShapesThatOverflow) {
  try {
    (void)Array::empty({int64_t{1} << 32, int64_t{1} << 32}, Dtype::float32);
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("Array::empty"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(4294967296, 4294967296)"), std::string::npos) << e.what();
  }
  // A zero extent makes the array empty however large the others are.
  Array z = Array::empty({0, int64_t{1} << 40}, Dtype::float64);
  EXPECT_EQ(z.size(), 0);
  EXPECT_EQ(Shape(std::vector<int64_t>{}).size(), 0u);  // regression: no memmove from a null pointer
}
