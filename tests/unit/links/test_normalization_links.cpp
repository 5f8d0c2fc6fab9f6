// links::BatchNormalization (running and population statistics, test mode) and LayerNormalization.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <optional>
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
std::vector<double> vec(const Array& a) {
  return a.to_vector<double>();
}
}  // namespace

TEST(BatchNormalizationLink, ParametersAndPersistents) {
  L::BatchNormalization bn(3);
  ASSERT_EQ(bn.namedparams().size(), 2u);
  EXPECT_EQ(bn.namedparams()[0].first, "/gamma");
  EXPECT_EQ(bn.namedparams()[1].first, "/beta");
  EXPECT_EQ(vec(bn.gamma().array()), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(vec(bn.beta().array()), (std::vector<double>{0, 0, 0}));
  auto ps = bn.namedpersistents();
  ASSERT_EQ(ps.size(), 3u);
  EXPECT_EQ(ps[0].first, "/avg_mean");
  EXPECT_EQ(ps[1].first, "/avg_var");
  EXPECT_EQ(ps[2].first, "/N");
  EXPECT_EQ(vec(bn.avg_var()), (std::vector<double>{1, 1, 1}));
  L::BatchNormalization bare(3, {.use_gamma = false, .use_beta = false});
  EXPECT_TRUE(bare.namedparams().empty());
  EXPECT_TRUE(bare.gamma().is_null());
}

TEST(BatchNormalizationLink, TrainingUpdatesRunningAverages) {
  L::BatchNormalization bn(2, {.decay = 0.8});
  // Channel 0: 0, 2, 4, 6 (mean 3, biased var 5, unbiased 20/3); channel 1 constant 1.
  Variable x(Array::from_vector<float>({0, 1, 2, 1, 4, 1, 6, 1}, {4, 2}));
  Variable y = bn(x);
  auto m = vec(bn.avg_mean()), v = vec(bn.avg_var());
  EXPECT_NEAR(m[0], 0.2 * 3, 1e-6);
  EXPECT_NEAR(m[1], 0.2 * 1, 1e-6);
  EXPECT_NEAR(v[0], 0.8 + 0.2 * 20.0 / 3, 1e-5);
  EXPECT_NEAR(v[1], 0.8, 1e-6);
  // Batch statistics normalize the output.
  auto r = F::batch_normalization(x, bn.gamma(), bn.beta(), {2e-5});
  EXPECT_TRUE(allclose(y.array(), r.y.array()));
  F::sum(F::square(y)).backward();
  EXPECT_FALSE(bn.gamma().grad().is_null());
  EXPECT_EQ(bn.n_batches(), 0);  // counted in finetune mode only
}

TEST(BatchNormalizationLink, TestModeUsesRunningAverages) {
  L::BatchNormalization bn(2);
  bn.avg_mean().assign(Array::from_vector<float>({1, -1}));
  bn.avg_var().assign(Array::from_vector<float>({4, 0.25}));
  bn.gamma().array().assign(Array::from_vector<float>({2, 1}));
  Variable x(Array::from_vector<float>({3, 0, 1, -1}, {2, 2}));
  Variable y;
  {
    auto test = using_config("train", false);
    y = bn(x);
  }
  auto yv = vec(y.array());
  EXPECT_NEAR(yv[0], 2.0 * 2 / std::sqrt(4 + 2e-5), 1e-5);
  EXPECT_NEAR(yv[1], 1 / std::sqrt(0.25 + 2e-5), 1e-5);
  EXPECT_NEAR(yv[2], 0.0, 1e-6);
  EXPECT_NEAR(yv[3], 0.0, 1e-6);
  EXPECT_EQ(vec(bn.avg_mean()), (std::vector<double>{1, -1}));  // untouched in test mode
}

TEST(BatchNormalizationLink, FinetuneAveragesExactly) {
  L::BatchNormalization bn(3, {.finetune = true});
  std::vector<Array> batches;
  for (int i = 0; i < 4; ++i) batches.push_back(randn({5, 3, 2, 2}, Dtype::float32, 10 + i));
  std::vector<double> mean_sum(3, 0.0), var_sum(3, 0.0);
  for (const auto& b : batches) {
    bn(Variable(b));
    auto r = F::batch_normalization(Variable(b), Variable(), Variable());
    auto m = vec(r.mean), v = vec(r.var);
    for (int c = 0; c < 3; ++c) {
      mean_sum[c] += m[c];
      var_sum[c] += v[c] * 20.0 / 19.0;
    }
  }
  EXPECT_EQ(bn.n_batches(), 4);
  auto m = vec(bn.avg_mean()), v = vec(bn.avg_var());
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(m[c], mean_sum[c] / 4, 1e-5);
    EXPECT_NEAR(v[c], var_sum[c] / 4, 1e-5);
  }
  bn.start_finetuning();
  EXPECT_EQ(bn.n_batches(), 0);
  bn(Variable(batches[0]));  // N = 1: decay 0, the averages are this batch's
  auto r = F::batch_normalization(Variable(batches[0]), Variable(), Variable());
  EXPECT_TRUE(allclose(bn.avg_mean(), r.mean, 1e-5, 1e-6));
}

TEST(BatchNormalizationLink, SaveAndLoadStatistics) {
  L::BatchNormalization a(2, {.finetune = true}), b(2);
  a(Variable(randn({4, 2}, Dtype::float32, 40)));
  a(Variable(randn({4, 2}, Dtype::float32, 41)));
  const std::string path = ::testing::TempDir() + "bn_stats.npz";
  serializers::save_npz(path, a);
  serializers::load_npz(path, b);
  EXPECT_EQ(vec(b.avg_mean()), vec(a.avg_mean()));
  EXPECT_EQ(vec(b.avg_var()), vec(a.avg_var()));
  EXPECT_EQ(b.n_batches(), 2);
}

TEST(BatchNormalizationLink, Errors) {
  expect_error<ValueError>([] { L::BatchNormalization(-1); }, {"BatchNormalization", "size"});
  expect_error<ValueError>([] { L::BatchNormalization(3, {.decay = 1.5}); }, {"BatchNormalization", "decay"});
  expect_error<ValueError>([] { L::BatchNormalization(3, {.eps = 0}); }, {"BatchNormalization", "eps"});
  L::BatchNormalization bn(3);
  expect_error<ShapeError>([&] { bn(Variable(randn({4, 2}, Dtype::float32))); }, {"BatchNormalization", "(4, 2)"});
}

TEST(BatchNormalizationLink, GhostBatchesAreKWorkersAveraged) {
  // One link with ghost batches of 2 against K = 3 links with one sub-batch each: outputs are the
  // sub-batches' own, and the running averages the mean of the K links' (over two steps).
  auto dtype_guard = using_config("dtype", Dtype::float64);
  L::BatchNormalization ghost(2, {.decay = 0.7, .ghost_batch_size = 2});
  std::vector<std::unique_ptr<L::BatchNormalization>> workers;
  for (int k = 0; k < 3; ++k)
    workers.push_back(std::make_unique<L::BatchNormalization>(2, L::BatchNormalizationOptions{.decay = 0.7}));
  for (int step = 0; step < 2; ++step) {
    const Array x = randn({6, 2, 2}, Dtype::float64, 60 + step);
    const Array y = ghost(Variable(x)).array();
    std::vector<double> mean(2, 0.0), var(2, 0.0);
    for (int k = 0; k < 3; ++k) {
      const Array yk = (*workers[k])(Variable(x.slice(0, 2 * k, 2 * k + 2).copy())).array();
      EXPECT_TRUE(allclose(y.slice(0, 2 * k, 2 * k + 2), yk, 1e-12, 1e-12));
      for (int c = 0; c < 2; ++c) {
        mean[c] += vec(workers[k]->avg_mean())[c] / 3;
        var[c] += vec(workers[k]->avg_var())[c] / 3;
      }
    }
    for (int c = 0; c < 2; ++c) {
      EXPECT_NEAR(vec(ghost.avg_mean())[c], mean[c], 1e-12);
      EXPECT_NEAR(vec(ghost.avg_var())[c], var[c], 1e-12);
    }
  }
  // Test mode ignores the sub-batches: any batch size.
  auto test = using_config("train", false);
  EXPECT_EQ(ghost(Variable(randn({5, 2}, Dtype::float64, 62))).shape(), (Shape{5, 2}));
}

TEST(BatchNormalizationLink, GhostFinetuneCountsForwards) {
  auto dtype_guard = using_config("dtype", Dtype::float64);
  L::BatchNormalization bn(2, {.finetune = true, .ghost_batch_size = 2});
  const Array x = randn({4, 2}, Dtype::float64, 63);
  bn(Variable(x));
  EXPECT_EQ(bn.n_batches(), 1);
  // The mean of the two sub-batches' means and unbiased (2 / 1) variances.
  const auto r = F::batch_normalization(Variable(x), Variable(), Variable(), {.ghost_batch_size = 2});
  const auto m = vec(r.mean), v = vec(r.var);
  for (int c = 0; c < 2; ++c) {
    EXPECT_NEAR(vec(bn.avg_mean())[c], (m[c] + m[2 + c]) / 2, 1e-12);
    EXPECT_NEAR(vec(bn.avg_var())[c], (v[c] + v[2 + c]), 1e-12);
  }
}

TEST(BatchNormalizationLink, GhostErrors) {
  expect_error<ValueError>([] { L::BatchNormalization(3, {.ghost_batch_size = 0}); },
                           {"BatchNormalization", "ghost_batch_size must be positive, got 0"});
  expect_error<ValueError>([] { L::BatchNormalization(3, {.ghost_batch_size = -4}); },
                           {"BatchNormalization", "ghost_batch_size must be positive, got -4"});
  expect_error<ValueError>([] { L::BatchRenormalization(3, 1.0, 0.0, {.ghost_batch_size = 2}); },
                           {"BatchRenormalization", "ghost_batch_size"});
  L::BatchNormalization bn(3, {.ghost_batch_size = 4});
  expect_error<ShapeError>(
      [&] {
        bn(Variable(randn({10, 3}, Dtype::float32)));
      },
      {"batch_normalization", "(10, 3)", "ghost_batch_size 4"});
  expect_error<ValueError>([&] { bn.set_ghost_batch_size(0); }, {"BatchNormalization", "ghost_batch_size", "0"});
  L::BatchRenormalization renorm(3);
  renorm.set_ghost_batch_size(2);
  expect_error<ValueError>(
      [&] {
        renorm(Variable(randn({4, 3}, Dtype::float32)));
      },
      {"BatchRenormalization", "ghost_batch_size"});
}

TEST(BatchNormalizationLink, GhostSetOnABuiltLink) {
  auto dtype_guard = using_config("dtype", Dtype::float64);
  L::BatchNormalization set(2), built(2, {.ghost_batch_size = 2});
  EXPECT_FALSE(set.ghost_batch_size().has_value());
  set.set_ghost_batch_size(2);
  EXPECT_EQ(set.ghost_batch_size(), std::optional<int64_t>(2));
  const Variable x(randn({4, 2}, Dtype::float64, 64));
  EXPECT_TRUE(allclose(set(x).array(), built(x).array(), 0.0, 0.0));
  EXPECT_EQ(vec(set.avg_var()), vec(built.avg_var()));
  set.set_ghost_batch_size(std::nullopt);  // the whole batch again
  L::BatchNormalization plain(2);
  EXPECT_TRUE(allclose(set(x).array(), plain(x).array(), 0.0, 0.0));
}

TEST(LayerNormalizationLink, LazyAndForward) {
  L::LayerNormalization ln;
  EXPECT_TRUE(ln.gamma().array().is_null());
  Variable x(randn({3, 4}, Dtype::float32, 30));
  Variable y = ln(x);
  EXPECT_EQ(ln.gamma().shape(), (Shape{4}));
  EXPECT_TRUE(allclose(y.array(), F::layer_normalization(x, Variable(), Variable()).array(), 1e-5, 1e-6));
  L::LayerNormalization sized(4);
  EXPECT_EQ(sized.namedparams().size(), 2u);
  EXPECT_EQ(sized.beta().shape(), (Shape{4}));
  expect_error<ShapeError>([&] { sized(Variable(randn({3, 5}, Dtype::float32))); }, {"layer_normalization"});
}
