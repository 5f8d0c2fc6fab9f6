// links::DecorrelatedBatchNormalization: persistents named as Chainer's, running and population
// statistics, test mode, .npz round trip, and Chainer 7.8.1's own file and outputs
// (tests/fixtures/README.md: how they were written).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "rensa/links/normalization.h"
#include "rensa/serializers/npz.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
namespace L = rensa::links;
using rensa::test::expect_error;
using rensa::test::randn;

namespace {

// x.flat[k] = ((a k^2 + b k) mod m) / 7 - 2, as the fixture's script.
Array modular(const Shape& shape, int64_t a, int64_t b, int64_t m) {
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto k = static_cast<int64_t>(i);
    v[i] = static_cast<double>((a * k * k + b * k) % m) / 7.0 - 2.0;
  }
  return Array::from_vector(v, shape);
}

std::vector<double> vec(const Array& a) {
  return a.astype(Dtype::float64).to_vector<double>();
}

TEST(DecorrelatedBatchNormalizationLink, PersistentsAsChainer) {
  L::DecorrelatedBatchNormalization dbn(6, 2);
  EXPECT_TRUE(dbn.namedparams().empty());
  std::map<std::string, Shape> shapes;
  for (const auto& [path, a] : dbn.namedpersistents()) shapes[path] = a->shape();
  EXPECT_EQ(shapes, (std::map<std::string, Shape>{{"/avg_mean", {2, 3}}, {"/avg_projection", {2, 3, 3}}, {"/N", {}}}));
  EXPECT_EQ(dbn.avg_mean().dtype(), Dtype::float32);
  EXPECT_EQ(vec(dbn.avg_mean()), std::vector<double>(6, 0.0));
  EXPECT_EQ(vec(dbn.avg_projection()), (std::vector<double>{1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(dbn.n_batches(), 0);
  EXPECT_EQ(L::DecorrelatedBatchNormalization(32).groups(), 16);
  EXPECT_EQ(L::DecorrelatedBatchNormalization(4, 1, 0.9, 2e-5, Dtype::float64).avg_projection().dtype(),
            Dtype::float64);
}

TEST(DecorrelatedBatchNormalizationLink, TrainingUpdatesRunningStatistics) {
  L::DecorrelatedBatchNormalization dbn(4, 2, 0.7, 2e-5, Dtype::float64);
  const Array x = randn({6, 4, 3}, Dtype::float64, 21);
  const Variable y = dbn(Variable(x));
  Array rm = Array::zeros({2, 2}, Dtype::float64), rp;
  const Variable expected = F::decorrelated_batch_normalization(Variable(x), 2, 2e-5, &rm, &rp, 0.7);
  EXPECT_EQ(vec(y.array()), vec(expected.array()));
  EXPECT_EQ(vec(dbn.avg_mean()), vec(rm));
  EXPECT_EQ(vec(dbn.avg_projection()), vec(rp));
  EXPECT_EQ(dbn.n_batches(), 0);  // only finetune mode counts
}

TEST(DecorrelatedBatchNormalizationLink, TestModeUsesTheAverages) {
  L::DecorrelatedBatchNormalization dbn(4, 2);
  dbn.avg_mean().assign(Array::from_vector<float>({1, -1, 0.5, 2}, {2, 2}));
  dbn.avg_projection().assign(Array::from_vector<float>({2, 0, 1, 1, 0.5, 0, 0, 0.5}, {2, 2, 2}));
  const Array x = randn({3, 4}, Dtype::float32, 22);
  Variable y;
  {
    auto test = using_config("train", false);
    y = dbn(Variable(x));
  }
  const auto xv = vec(x), yv = vec(y.array());
  for (int n = 0; n < 3; ++n) {
    const double* r = &xv[static_cast<std::size_t>(n * 4)];
    const std::vector<double> want = {2 * (r[0] - 1), (r[0] - 1) + (r[1] + 1), 0.5 * (r[2] - 0.5), 0.5 * (r[3] - 2)};
    for (int c = 0; c < 4; ++c) EXPECT_NEAR(yv[static_cast<std::size_t>(n * 4 + c)], want[c], 1e-6);
  }
  EXPECT_EQ(vec(dbn.avg_mean()), (std::vector<double>{1, -1, 0.5, 2}));  // untouched in test mode
}

TEST(DecorrelatedBatchNormalizationLink, FinetuneAveragesExactly) {
  L::DecorrelatedBatchNormalization dbn(4, 2, 0.9, 2e-5, Dtype::float64);
  dbn.set_finetune(true);
  const Array a = randn({5, 4}, Dtype::float64, 30), b = randn({5, 4}, Dtype::float64, 31);
  dbn(Variable(a));
  dbn(Variable(b));
  EXPECT_EQ(dbn.n_batches(), 2);
  Array ma = Array::zeros({2, 2}, Dtype::float64), pa, mb = ma.copy(), pb;
  F::decorrelated_batch_normalization(Variable(a), 2, 2e-5, &ma, &pa, 0.0);
  F::decorrelated_batch_normalization(Variable(b), 2, 2e-5, &mb, &pb, 0.0);
  const auto m = vec(dbn.avg_mean()), p = vec(dbn.avg_projection());
  const auto m1 = vec(ma), m2 = vec(mb), p1 = vec(pa), p2 = vec(pb);
  for (std::size_t i = 0; i < m.size(); ++i) EXPECT_NEAR(m[i], 0.5 * (m1[i] + m2[i]), 1e-14);
  for (std::size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(p[i], 0.5 * (p1[i] + p2[i]), 1e-13);
  dbn.start_finetuning();
  EXPECT_EQ(dbn.n_batches(), 0);
  dbn(Variable(a));  // N = 1: decay 0, the averages are this batch's
  EXPECT_EQ(vec(dbn.avg_projection()), p1);
}

TEST(DecorrelatedBatchNormalizationLink, NpzRoundTripWithChainersKeys) {
  L::DecorrelatedBatchNormalization a(6, 3), b(6, 3);
  a.set_finetune(true);
  a(Variable(randn({7, 6}, Dtype::float32, 40)));
  const std::string path = ::testing::TempDir() + "dbn_stats.npz";
  serializers::save_npz(path, a);
  std::map<std::string, Shape> keys;
  for (const auto& [key, arr] : serializers::read_npz(path)) keys[key] = arr.shape();
  EXPECT_EQ(keys, (std::map<std::string, Shape>{{"avg_mean", {3, 2}}, {"avg_projection", {3, 2, 2}}, {"N", {}}}));
  serializers::load_npz(path, b);
  EXPECT_EQ(vec(b.avg_mean()), vec(a.avg_mean()));
  EXPECT_EQ(vec(b.avg_projection()), vec(a.avg_projection()));
  EXPECT_EQ(b.n_batches(), 1);
}

TEST(DecorrelatedBatchNormalizationLink, ChainersFileAndOutputs) {
  // Chainer's L.DecorrelatedBatchNormalization(6, groups=2) after two finetune forwards.
  const std::string dir = RENSA_TEST_FIXTURES_DIR;
  const Array x1 = modular({5, 6, 2}, 5, 11, 31).astype(Dtype::float32);
  const Array x2 = modular({5, 6, 2}, 3, 17, 37).astype(Dtype::float32);
  L::DecorrelatedBatchNormalization ours(6, 2), loaded(6, 2);
  ours.set_finetune(true);
  ours(Variable(x1));
  ours(Variable(x2));
  serializers::load_npz(dir + "/chainer_decorrelated_batch_normalization.npz", loaded);
  EXPECT_EQ(loaded.n_batches(), 2);
  EXPECT_TRUE(allclose(ours.avg_mean(), loaded.avg_mean(), 1e-5, 1e-6));
  EXPECT_TRUE(allclose(ours.avg_projection(), loaded.avg_projection(), 1e-5, 1e-5))
      << "rensa: " << ours.avg_projection() << "\nChainer: " << loaded.avg_projection();
  Variable y;
  {
    auto test = using_config("train", false);
    y = loaded(Variable(x1));
  }
  const Array want = serializers::read_npz(dir + "/chainer_decorrelated_batch_normalization_outputs.npz").at("y");
  EXPECT_TRUE(allclose(y.array(), want, 1e-5, 1e-5)) << "rensa: " << y.array() << "\nChainer: " << want;
}

TEST(DecorrelatedBatchNormalizationLink, Errors) {
  expect_error<ShapeError>([] { L::DecorrelatedBatchNormalization(6, 4); },
                           {"DecorrelatedBatchNormalization", "size 6", "groups 4"});
  expect_error<ValueError>([] { L::DecorrelatedBatchNormalization(6, 0); },
                           {"DecorrelatedBatchNormalization", "groups"});
  expect_error<ValueError>([] { L::DecorrelatedBatchNormalization(6, 2, 1.5); },
                           {"DecorrelatedBatchNormalization", "decay"});
  expect_error<ValueError>([] { L::DecorrelatedBatchNormalization(6, 2, 0.9, 0.0); },
                           {"DecorrelatedBatchNormalization", "eps"});
  expect_error<DtypeError>([] { L::DecorrelatedBatchNormalization(6, 2, 0.9, 2e-5, Dtype::int32); },
                           {"DecorrelatedBatchNormalization", "int32"});
  L::DecorrelatedBatchNormalization dbn(6, 2);
  expect_error<ShapeError>(
      [&] {
        dbn(Variable(randn({4, 4}, Dtype::float32)));
      },
      {"DecorrelatedBatchNormalization", "(4, 4)", "6 channels"});
}

}  // namespace
