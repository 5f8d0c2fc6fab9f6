// embed_id (gather with scatter-add gradient) and links::EmbedID.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "rensa/links/embed_id.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
namespace L = rensa::links;
using rensa::test::expect_cpu_matches_reference;
using rensa::test::expect_error;
using rensa::test::randn;
using rensa::testing::check_backward;
using rensa::testing::check_double_backward;
using rensa::testing::make_noncontiguous;

namespace {

// A function of (ids, W) for the gradient checker; ids are an integer input (no gradient).
rensa::testing::TestFunction embed(std::optional<int64_t> ignore = std::nullopt) {
  return [ignore](const std::vector<Variable>& in) {
    return std::vector<Variable>{F::embed_id(in[0].array(), in[1], ignore)};
  };
}

Shape with_out(Shape s, int64_t out) {
  s.push_back(out);
  return s;
}

}  // namespace

TEST(EmbedId, ForwardPicksRows) {
  Variable W(Array::arange(0.0, 15.0, 1.0, Dtype::float64).reshape({5, 3}));
  Array x = Array::from_vector<int64_t>({0, 2, 4, 2}, {2, 2});
  Variable y = F::embed_id(x, W);
  EXPECT_EQ(y.shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(y.dtype(), Dtype::float64);
  EXPECT_EQ(y.array().to_vector<double>(), (std::vector<double>{0, 1, 2, 6, 7, 8, 12, 13, 14, 6, 7, 8}));
  // int32 ids and an ignored label (zero rows); the ignore label may lie outside [0, in_size).
  Array x32 = Array::from_vector<int32_t>({1, -1, 3});
  Variable y32 = F::embed_id(x32, W, -1);
  EXPECT_EQ(y32.array().to_vector<double>(), (std::vector<double>{3, 4, 5, 0, 0, 0, 9, 10, 11}));
  // An in-range ignore label.
  EXPECT_EQ(F::embed_id(Array::from_vector<int64_t>({1, 3}), W, 3).array().to_vector<double>(),
            (std::vector<double>{3, 4, 5, 0, 0, 0}));
  // 0-d ids give one row; size-0 ids give no rows.
  EXPECT_EQ(F::embed_id(Array::full({}, 4, Dtype::int64), W).shape(), (Shape{3}));
  EXPECT_EQ(F::embed_id(Array::zeros({0, 2}, Dtype::int64), W).shape(), (Shape{0, 2, 3}));
  // Float32 W, non-contiguous W.
  Array w32 = randn({5, 3}, Dtype::float32, 3);
  Variable wn(make_noncontiguous(w32));
  EXPECT_TRUE(array_equal(F::embed_id(x, wn).array(), F::embed_id(x, Variable(w32)).array()));
  // Records nothing when W does not require grad.
  EXPECT_EQ(y.creator(), nullptr);
}

TEST(EmbedId, GradientScatterAddsRows) {
  Variable W(Array::zeros({4, 2}, Dtype::float64), true);
  Array x = Array::from_vector<int64_t>({1, 3, 1, -1, 1});
  Variable y = F::embed_id(x, W, -1);
  Array gy = Array::from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {5, 2});
  y.set_grad(Variable(gy));
  y.backward();
  // Row 1 gets rows 0, 2 and 4 of gy; row 3 gets row 1; rows 0 and 2 nothing; the ignored row is dropped.
  EXPECT_EQ(W.grad().array().to_vector<double>(), (std::vector<double>{0, 0, 1 + 5 + 9, 2 + 6 + 10, 0, 0, 3, 4}));
}

TEST(EmbedId, GradientCheck) {
  const Array W = randn({6, 4}, Dtype::float64, 1);
  const Array x = Array::from_vector<int64_t>({0, 5, 2, 2, 5, 5, 1, 3}, {2, 4});  // repeats accumulate
  const Array gy = randn({2, 4, 4}, Dtype::float64, 2);
  check_backward(embed(), {x, W}, {gy});
  check_backward(embed(), {x, make_noncontiguous(W)}, {make_noncontiguous(gy)});
  check_backward(embed(), {x.astype(Dtype::int32), W}, {gy});
  const Array xi = Array::from_vector<int64_t>({0, -1, 2, 2, -1, 5, 1, 3}, {2, 4});
  check_backward(embed(-1), {xi, W}, {gy});
  check_backward(embed(2), {x, W}, {gy});
  // Size 0.
  check_backward(embed(), {Array::zeros({0}, Dtype::int64), W}, {Array::zeros({0, 4}, Dtype::float64)});
  check_backward(embed(), {Array::zeros({3}, Dtype::int64), Array::zeros({2, 0}, Dtype::float64)},
                 {Array::zeros({3, 0}, Dtype::float64)});
}

TEST(EmbedId, DoubleBackward) {
  const Array W = randn({6, 4}, Dtype::float64, 1);
  const Array x = Array::from_vector<int64_t>({0, 5, 2, 2, -1, 5}, {3, 2});
  const Array gy = randn({3, 2, 4}, Dtype::float64, 2);
  check_double_backward(embed(-1), {x, W}, {gy}, {randn({6, 4}, Dtype::float64, 3)});
  check_double_backward(embed(), {Array::from_vector<int64_t>({1, 1, 4}), make_noncontiguous(W)},
                        {randn({3, 4}, Dtype::float64, 4)});
}

TEST(EmbedId, CpuMatchesReference) {
  const Array x = Array::from_vector<int64_t>({0, 5, 2, 2, 5, 5, 1, 3}, {2, 4});
  expect_cpu_matches_reference(embed(), {x, randn({6, 300}, Dtype::float32, 1)});
  // Gradient on both devices: W's row 5 adds the gradients of its 3 occurrences.
  expect_cpu_matches_reference(
      [](const std::vector<Variable>& in) {
        Variable W(in[1].array(), true);
        Variable y = F::embed_id(in[0].array(), W);
        F::sum(y * y).backward();
        return std::vector<Variable>{W.grad()};
      },
      {x, randn({6, 5}, Dtype::float32, 2)}, 3);
}

TEST(EmbedId, HalfPrecisionAccumulates) {
  Variable W(Array::zeros({2, 1}, Dtype::float16), true);
  Array x = Array::zeros({3000}, Dtype::int64);
  Variable y = F::embed_id(x, W);
  y.set_grad(Variable(Array::ones({3000, 1}, Dtype::float16)));
  y.backward();
  // Summed in float and rounded once: exact 3000 (a float16 running sum would stall at 2048).
  EXPECT_EQ(W.grad().array().to_vector<double>(), (std::vector<double>{3000.0, 0.0}));
}

TEST(EmbedId, Errors) {
  Variable W(randn({5, 3}, Dtype::float64));
  expect_error<IndexError>([&] { F::embed_id(Array::from_vector<int64_t>({1, 5}), W); },
                           {"embed_id", "id 5", "[0, 5)", "(2,)", "(5, 3)"});
  expect_error<IndexError>([&] { F::embed_id(Array::from_vector<int64_t>({-1}), W); }, {"embed_id", "id -1"});
  expect_error<IndexError>([&] { F::embed_id(Array::from_vector<int64_t>({-2}), W, -1); }, {"embed_id", "id -2"});
  expect_error<DtypeError>([&] { F::embed_id(Array::zeros({2}, Dtype::float32), W); },
                           {"embed_id", "float32", "(2,)"});
  expect_error<DtypeError>(
      [&] { F::embed_id(Array::zeros({2}, Dtype::int64), Variable(Array::zeros({5, 3}, Dtype::int32))); },
      {"embed_id", "int32"});
  expect_error<ShapeError>([&] { F::embed_id(Array::zeros({2}, Dtype::int64), Variable(Array::zeros({5}))); },
                           {"embed_id", "(5,)", "(2,)"});
  expect_error<DeviceError>(
      [&] { F::embed_id(Array::zeros({2}, Dtype::int64, Device::reference()), W); }, {"embed_id", "reference"});
  expect_error<ValueError>([&] { F::embed_id(Array(), W); }, {"embed_id", "null"});
}

TEST(EmbedIdLink, ParametersForwardAndGradient) {
  L::EmbedID e(10, 4, {.ignore_label = -1, .seed = 2});
  EXPECT_EQ(e.W().shape(), (Shape{10, 4}));
  EXPECT_EQ(e.W().dtype(), Dtype::float32);
  ASSERT_EQ(e.namedparams().size(), 1u);
  EXPECT_EQ(e.namedparams()[0].first, "/W");
  EXPECT_EQ(e.ignore_label(), -1);
  Array x = Array::from_vector<int32_t>({3, -1, 9, 3}, {2, 2});
  Variable y = e(Variable(x));
  EXPECT_EQ(y.shape(), with_out({2, 2}, 4));
  EXPECT_TRUE(array_equal(y.array(), F::embed_id(x, e.W(), -1).array()));
  F::sum(y).backward();
  const auto g = e.W().grad().array().to_vector<float>();
  for (int64_t r = 0; r < 10; ++r) {
    for (int64_t c = 0; c < 4; ++c) {
      const float want = r == 3 ? 2.0f : (r == 9 ? 1.0f : 0.0f);
      EXPECT_EQ(g[static_cast<std::size_t>(r * 4 + c)], want) << r << "," << c;
    }
  }
  // Seeded: reproducible; the default initializer is Normal(1.0).
  L::EmbedID same(10, 4, {.seed = 2});
  EXPECT_TRUE(array_equal(same.W().array(), e.W().array()));
  L::EmbedID big(1000, 100, {.seed = 5});
  const auto w = big.W().array().to_vector<double>();
  double sum = 0, sq = 0;
  for (double v : w) sum += v;
  const double mean = sum / static_cast<double>(w.size());
  for (double v : w) sq += (v - mean) * (v - mean);
  EXPECT_NEAR(mean, 0.0, 5.0 / std::sqrt(static_cast<double>(w.size())));
  EXPECT_NEAR(std::sqrt(sq / static_cast<double>(w.size())), 1.0, 0.02);
  // Custom initializer and the config dtype.
  auto guard = using_config("dtype", Dtype::float64);
  L::EmbedID c(3, 2, {.initialW = std::make_shared<initializers::Constant>(0.5)});
  EXPECT_EQ(c.W().dtype(), Dtype::float64);
  EXPECT_EQ(c.W().array().to_vector<double>(), (std::vector<double>(6, 0.5)));
  expect_error<ValueError>([] { L::EmbedID(-1, 2); }, {"EmbedID", "-1"});
}
