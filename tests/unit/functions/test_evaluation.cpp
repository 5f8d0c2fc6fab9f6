#include <vector>

#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::expect_cpu_matches_reference;
using rensa::test::expect_error;
using rensa::test::randn;
using rensa::testing::make_noncontiguous;

TEST(Accuracy, HandBuiltCaseWithIgnoredLabels) {
  // argmax per row: 2, 0, 1, 1, 0.
  Array y = Array::from_vector<float>({0.1f, 0.2f, 0.7f,  //
                                       0.9f, 0.0f, 0.1f,  //
                                       0.2f, 0.5f, 0.3f,  //
                                       0.3f, 0.4f, 0.3f,  //
                                       0.6f, 0.2f, 0.2f},
                                      {5, 3});
  // Hits at rows 0 and 2, a miss at row 3, rows 1 and 4 ignored: 2 / 3.
  Array t = Array::from_vector<int32_t>({2, -1, 1, 0, -1});
  Variable acc = F::accuracy(Variable(y, true), t);
  EXPECT_EQ(acc.shape(), Shape{});
  EXPECT_EQ(acc.dtype(), Dtype::float32);
  EXPECT_FALSE(acc.creator());
  EXPECT_NEAR(acc.array().item<double>(), 2.0 / 3.0, 1e-6);
  // No label ignored: hits at rows 0, 1 and 2 of 5.
  Array t2 = Array::from_vector<int64_t>({2, 0, 1, 0, 1});
  EXPECT_NEAR(F::accuracy(Variable(y), t2).array().item<double>(), 3.0 / 5.0, 1e-6);
  // A custom ignore label.
  Array t3 = Array::from_vector<int64_t>({2, 5, 1, 0, 5});
  EXPECT_NEAR(F::accuracy(Variable(y), t3, 5).array().item<double>(), 2.0 / 3.0, 1e-6);
}

TEST(Accuracy, AllIgnoredOrEmptyGivesZero) {
  Array y = randn({3, 4});
  Variable acc = F::accuracy(Variable(y), Array::full({3}, -1.0, Dtype::int64));
  EXPECT_EQ(acc.dtype(), Dtype::float64);
  EXPECT_EQ(acc.array().item<double>(), 0.0);
  EXPECT_EQ(F::accuracy(Variable(Array::zeros({0, 4})), Array::zeros({0}, Dtype::int64)).array().item<double>(), 0.0);
}

TEST(Accuracy, SpatialAndNonContiguous) {
  // y (2, 3, 2): argmax over axis 1 for each (n, d).
  Array y = Array::from_vector<double>({1, 0,  //
                                        0, 5,  //
                                        2, 1,  //
                                        0, 0,  //
                                        3, 1,  //
                                        1, 2},
                                       {2, 3, 2});
  // Argmax: n=0: d0 -> 2, d1 -> 1; n=1: d0 -> 1, d1 -> 2.
  Array t = Array::from_vector<int64_t>({2, 0, 1, 2}, {2, 2});
  EXPECT_NEAR(F::accuracy(Variable(y), t).array().item<double>(), 0.75, 1e-12);
  EXPECT_NEAR(F::accuracy(Variable(make_noncontiguous(y)), make_noncontiguous(t)).array().item<double>(), 0.75, 1e-12);
}

TEST(Accuracy, CpuMatchesReference) {
  std::vector<int64_t> tv(40000);
  for (std::size_t i = 0; i < tv.size(); ++i) tv[i] = (i % 11 == 0) ? -1 : static_cast<int64_t>(i % 3);
  Array t = Array::from_vector(tv);
  auto f = [t](const std::vector<Variable>& v) {
    return std::vector<Variable>{F::accuracy(v[0], t.to(v[0].device()))};
  };
  expect_cpu_matches_reference(f, {randn({40000, 3}, Dtype::float32, 5)});
  expect_cpu_matches_reference(f, {make_noncontiguous(randn({40000, 3}, Dtype::float32, 6))});
}

TEST(Accuracy, Errors) {
  Variable y(randn({3, 4}));
  expect_error<ShapeError>([&] { F::accuracy(y, Array::zeros({4}, Dtype::int64)); }, {"accuracy", "(3, 4)", "(4,)"});
  expect_error<ShapeError>([&] { F::accuracy(Variable(randn({3})), Array::zeros({3}, Dtype::int64)); },
                           {"accuracy", "(3,)"});
  expect_error<DtypeError>([&] { F::accuracy(y, Array::zeros({3}, Dtype::float32)); }, {"accuracy", "float32", "(3,)"});
  expect_error<DtypeError>(
      [&] {
        F::accuracy(Variable(Array::zeros({3, 4}, Dtype::int32)), Array::zeros({3}, Dtype::int64));
      },
      {"accuracy", "int32", "(3, 4)"});
}
