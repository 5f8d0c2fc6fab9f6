#include <cmath>
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

namespace {

std::vector<double> vals(const Variable& v) { return v.array().to_vector<double>(); }

void expect_same(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i << ": " << got[i];
    } else {
      EXPECT_NEAR(got[i], want[i], 1e-6) << "element " << i;
    }
  }
}

const Variable scores(Array::from_vector<float>({0.1f, 0.7f, 0.2f, 0.8f, 0.1f, 0.1f, 0.2f, 0.3f, 0.5f, 0.6f, 0.3f,
                                                 0.1f, 0.1f, 0.2f, 0.7f},
                                                {5, 3}));
const Array truth = Array::from_vector<int32_t>({1, 0, 1, 2, -1});

}  // namespace

// Values from Chainer 7.8.1 on the same inputs.
TEST(ClassificationSummary, MatchesChainer) {
  const double nan = std::nan("");
  auto s = F::classification_summary(scores, truth);
  expect_same(vals(s.precision), {0.5, 1.0, 0.0});
  expect_same(vals(s.recall), {1.0, 0.5, 0.0});
  expect_same(vals(s.fbeta_score), {2.0 / 3, 2.0 / 3, nan});
  EXPECT_EQ(s.support.dtype(), Dtype::int32);
  expect_same(vals(s.support), {1, 2, 1});
  EXPECT_EQ(s.precision.dtype(), Dtype::float32);
  auto s2 = F::classification_summary(scores, truth, 4, 2.0);
  expect_same(vals(s2.precision), {0.5, 1.0, 0.0, nan});
  expect_same(vals(s2.fbeta_score), {0.8333333333333334, 0.5555555555555556, nan, nan});
  expect_same(vals(s2.support), {1, 2, 1, 0});
  expect_same(vals(F::precision(scores, truth).first), {0.5, 1.0, 0.0});
  expect_same(vals(F::recall(scores, truth).first), {1.0, 0.5, 0.0});
  expect_same(vals(F::f1_score(scores, truth).first), {2.0 / 3, 2.0 / 3, nan});
  // Another ignore_label: every label counts.
  const Array t2 = Array::from_vector<int32_t>({1, 0, 1, 2, 0});
  auto [p, support] = F::precision(scores, t2, std::nullopt, 5);
  expect_same(vals(p), {0.5, 1.0, 0.0});
  expect_same(vals(support), {2, 2, 1});
}

TEST(BinaryAccuracy, MatchesChainer) {
  const Variable y(Array::from_vector<float>({0.5f, -1.0f, 2.0f, -0.1f, -3.0f, 0.2f}, {3, 2}));
  expect_same(vals(F::binary_accuracy(y, Array::from_vector<int32_t>({1, 0, 1, -1, 0, 0}, {3, 2}))), {0.8});
  expect_same(vals(F::binary_accuracy(y, Array::full({3, 2}, -1.0, Dtype::int32))), {0.0});
  expect_same(vals(F::binary_accuracy(Variable(Array::zeros({0})), Array::zeros({0}, Dtype::int64))), {0.0});
}

TEST(R2Score, MatchesChainer) {
  const Variable pred(Array::from_vector<float>({1.0f, 2.0f, 2.0f, 3.5f, 3.0f, 1.0f}, {3, 2}));
  const Variable truth2(Array::from_vector<float>({1.5f, 2.0f, 2.0f, 3.0f, 2.5f, 2.0f}, {3, 2}));
  expect_same(vals(F::r2_score(pred, truth2)), {-0.4375});
  expect_same(vals(F::r2_score(pred, truth2, "raw_values")), {0.0, -0.875});
  // One sample: the total sum of squares is 0, and Chainer gives 0.
  expect_same(vals(F::r2_score(F::get_item(pred, {Slice{0, 1}}), F::get_item(truth2, {Slice{0, 1}}))), {0.0});
  const Variable p1(Array::from_vector<double>({1.0, 2.0, 3.0})), t1(Array::from_vector<double>({1.0, 2.0, 4.0}));
  expect_same(vals(F::r2_score(p1, t1)), {1.0 - 3.0 / 14.0});
  // Regression: float64 inputs keep float64 when averaged (the mean was rounded to float32).
  const Variable p2(Array::from_vector<double>({1, 2, 3, 5, 2, 2}, {3, 2}));
  const Variable t2(Array::from_vector<double>({1.1, 2.2, 2.9, 4.7, 2.3, 1.9}, {3, 2}));
  const Variable r2 = F::r2_score(p2, t2);
  EXPECT_EQ(r2.dtype(), Dtype::float64);
  EXPECT_NEAR(r2.array().item<double>(), 0.9524523137887031, 1e-15);
}

TEST(ClassificationMetrics, Errors) {
  expect_error<IndexError>([] { F::classification_summary(scores, truth, 2); },
                           {"classification_summary", "label 2 at 3", "[0, 2)"});
  expect_error<ValueError>([] { F::classification_summary(scores, truth, std::nullopt, 0.0); },
                           {"classification_summary", "beta", "0"});
  expect_error<ShapeError>([] { F::precision(scores, Array::from_vector<int32_t>({1, 0})); }, {"classification_summary"});
  expect_error<DtypeError>([] { F::recall(scores, Array::zeros({5})); }, {"classification_summary", "int32 or int64"});
  expect_error<ShapeError>([] { F::binary_accuracy(scores, Array::zeros({5}, Dtype::int32)); },
                           {"binary_accuracy", "(5, 3)", "(5,)"});
  const Variable a(randn({3, 2})), b(randn({3, 3}));
  expect_error<ShapeError>([&] { F::r2_score(a, b); }, {"r2_score", "(3, 2)", "(3, 3)"});
  expect_error<ShapeError>([&] { F::r2_score(Variable(randn({2, 2, 2})), Variable(randn({2, 2, 2}))); },
                           {"r2_score", "(N,) or (N, K)"});
  expect_error<ValueError>([&] { F::r2_score(a, a, "variance_weighted"); },
                           {"r2_score", "unknown multioutput 'variance_weighted'"});
}
