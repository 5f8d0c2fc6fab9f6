// training::recompute_batch_norm_statistics: population statistics of batch normalization over one
// pass of data.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "rensa/datasets/tuple_dataset.h"
#include "rensa/functions/array_ops.h"
#include "rensa/functions/normalization.h"
#include "rensa/iterators/serial_iterator.h"
#include "rensa/links/convolution_2d.h"
#include "rensa/links/normalization.h"
#include "rensa/training/batch_norm_statistics.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
namespace L = rensa::links;
using rensa::test::expect_error;
using rensa::test::randn;

TEST(BatchNormStatistics, RecomputeOverOnePass) {
  // A model conv -> bn; the population statistics must be those of the conv outputs over the data.
  auto conv = std::make_shared<L::Convolution2D>(1, 2, 3, L::Convolution2DOptions{.seed = 5});
  auto bn = std::make_shared<L::BatchNormalization>(2);
  struct Net : Chain {
    L::Convolution2D* c;
    L::BatchNormalization* b;
    Variable forward(const Variable& x) override { return (*b)((*c)(x)); }
    using Chain::forward;
  } net;
  net.add_link("conv", conv);
  net.add_link("bn", bn);
  net.c = conv.get();
  net.b = bn.get();
  Array data = randn({12, 1, 5, 5}, Dtype::float32, 20);
  Array labels = Array::zeros({12}, Dtype::int32);
  auto ds = std::make_shared<datasets::TupleDataset>(std::vector<Array>{data, labels});
  iterators::SerialIterator it(ds, 4, {.repeat = false, .shuffle = false});
  // Some training steps first move the running averages away.
  bn->forward(Variable(randn({3, 2, 2, 2}, Dtype::float32, 21)));
  const int64_t n = rensa::training::recompute_batch_norm_statistics(net, it);
  EXPECT_EQ(n, 3);
  EXPECT_FALSE(bn->finetune());
  EXPECT_EQ(bn->n_batches(), 3);
  // Expected: the mean of the per-batch conv statistics (equal batches: the population mean).
  Variable h = (*conv)(Variable(data));
  auto full = F::batch_normalization(h, Variable(), Variable());
  EXPECT_TRUE(allclose(bn->avg_mean(), full.mean, 1e-4, 1e-5));
  std::vector<double> var_mean(2, 0.0);
  for (int k = 0; k < 3; ++k) {
    auto part = F::batch_normalization(F::get_item(h, {Slice{4 * k, 4 * k + 4, 1}}), Variable(), Variable());
    auto v = part.var.to_vector<double>();
    for (int c = 0; c < 2; ++c) var_mean[c] += v[c] * 36.0 / 35.0 / 3;
  }
  auto v = bn->avg_var().to_vector<double>();
  for (int c = 0; c < 2; ++c) EXPECT_NEAR(v[c], var_mean[c], 1e-4);
  // No graph was recorded for the parameters.
  EXPECT_TRUE(conv->W().grad().is_null());
  // A repeating iterator stops at the end of the epoch (and the links name still works).
  iterators::SerialIterator rep(ds, 5, {.repeat = true, .shuffle = false});
  EXPECT_EQ(L::recompute_batch_norm_statistics(net, rep), 3);
}

TEST(BatchNormStatistics, ErrorRestoresFinetune) {
  L::BatchNormalization bn(2);
  Array data = randn({4, 2}, Dtype::float32, 30);
  auto ds = std::make_shared<datasets::TupleDataset>(std::vector<Array>{data});
  iterators::SerialIterator it(ds, 2, {.repeat = false, .shuffle = false});
  expect_error<IndexError>([&] { rensa::training::recompute_batch_norm_statistics(bn, it, 1); },
                           {"recompute_batch_norm_statistics", "column 1"});
  EXPECT_FALSE(bn.finetune());
}
