// A large-batch recipe in a real training loop (LARS, LAMB or RMSprop warm-up, under a warm-up then
// cosine ChainedShift): a run resumed from an .npz snapshot mid-warm-up or mid-decay ends bit for
// bit where the uninterrupted run ends, with the same learning rate.

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rensa/datasets/tuple_dataset.h"
#include "rensa/extensions/chained_shift.h"
#include "rensa/extensions/snapshot.h"
#include "rensa/functions/activation.h"
#include "rensa/iterators/serial_iterator.h"
#include "rensa/links/classifier.h"
#include "rensa/links/linear.h"
#include "rensa/optimizers/lamb.h"
#include "rensa/optimizers/lars.h"
#include "rensa/optimizers/rmsprop_warmup.h"
#include "rensa/training/trainer.h"
#include "tests/unit/test_util.h"
#include "tests/unit/training/training_test_util.h"

namespace {

namespace E = rensa::extensions;
namespace O = rensa::optimizers;
using rensa::testing_training::TempDir;

using MakeOptimizer = std::function<std::unique_ptr<O::Optimizer>()>;

std::shared_ptr<rensa::datasets::TupleDataset> data() {
  const rensa::Array x = rensa::test::randn({40, 3}, rensa::Dtype::float32, 3);
  std::vector<int32_t> t;
  for (float v : x.to_vector<float>()) {
    if (t.size() < 40) t.push_back(v > 0 ? 1 : 0);
  }
  return std::make_shared<rensa::datasets::TupleDataset>(
      std::vector<rensa::Array>{x, rensa::Array::from_vector(t, {40})});
}

struct Run {
  std::shared_ptr<rensa::Sequential> net = std::make_shared<rensa::Sequential>();
  std::unique_ptr<rensa::links::Classifier> model;
  std::unique_ptr<O::Optimizer> optimizer;
  rensa::iterators::SerialIterator iter;
  std::unique_ptr<rensa::training::StandardUpdater> updater;
  std::unique_ptr<rensa::training::Trainer> trainer;

  // The resumed run starts from other weights and another shuffle: only the snapshot makes it equal.
  Run(const std::string& out, const MakeOptimizer& make, uint64_t seed)
      : optimizer(make()), iter(data(), 8, {.seed = seed}) {
    net->add(std::make_shared<rensa::links::Linear>(3, 6, rensa::links::LinearOptions{.seed = seed}));
    net->add([](const rensa::Variable& x) { return rensa::functions::relu(x); });
    net->add(std::make_shared<rensa::links::Linear>(6, 2, rensa::links::LinearOptions{.seed = seed + 1}));
    model = std::make_unique<rensa::links::Classifier>(net);
    optimizer->setup(*model);
    updater = std::make_unique<rensa::training::StandardUpdater>(iter, *optimizer);
    trainer = std::make_unique<rensa::training::Trainer>(*updater, rensa::training::Trigger{24, "iteration"}, out);
    trainer->extend(E::warmup_then("lr", 8, 0.25, std::make_shared<E::CosineShift>("lr", 12, 0.01)));
    trainer->extend(E::snapshot(), {6, "iteration"});
  }

  std::vector<rensa::Array> params() const {
    std::vector<rensa::Array> out;
    for (const auto& [path, p] : model->namedparams()) out.push_back(p.array().copy());
    return out;
  }
};

void expect_resume_is_exact(const MakeOptimizer& make) {
  TempDir full_dir("lb_full");
  Run full(full_dir.path(), make, 1);
  full.trainer->run();
  const auto expected = full.params();
  for (int64_t from : {6, 12, 18}) {  // mid-warm-up, just after it, mid-decay
    SCOPED_TRACE("resumed from iteration " + std::to_string(from));
    TempDir dir("lb_resumed");
    Run resumed(dir.path(), make, 77);
    resumed.trainer->resume(full_dir / ("snapshot_iter_" + std::to_string(from)));
    resumed.trainer->run();
    const auto got = resumed.params();
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(rensa::array_equal(got[i], expected[i])) << i;
    EXPECT_EQ(resumed.optimizer->hyperparam("lr"), full.optimizer->hyperparam("lr"));
  }
}

TEST(LargeBatchResume, Lars) {
  expect_resume_is_exact([] { return std::make_unique<O::LARS>(2.0, 0.9, 1e-4, 0.01); });
}

TEST(LargeBatchResume, Lamb) {
  expect_resume_is_exact([] { return std::make_unique<O::LAMB>(0.05, 0.9, 0.999, 1e-6, 0.01); });
}

TEST(LargeBatchResume, RmspropWarmup) {
  expect_resume_is_exact([] { return std::make_unique<O::RMSpropWarmup>(0.1, 10, 2); });
}

}  // namespace
