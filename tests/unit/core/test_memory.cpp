// The graph is freed after backward: a training loop's resident memory stays flat.
#include <gtest/gtest.h>

#include <fstream>

#include "rensa/rensa.h"

using namespace rensa;
namespace F = rensa::functions;

namespace {

long resident_kib() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return resident * 4;  // pages of 4 KiB
}

struct Model {
  Variable w{random::normal({8}, 0.0, 0.1, Dtype::float32), true};
  Variable b{Array::zeros({8}), true};
};

void train_step(Model& m, const Array& x, const Array& t) {
  Variable h = F::tanh(x * m.w + m.b);
  Variable loss = F::mean(F::square(h - t));
  loss.backward();
  auto guard = no_backprop_mode();
  for (Variable* p : {&m.w, &m.b}) {
    p->array().assign((*p - p->grad() * 0.01).array());
    p->cleargrad();
  }
}

}  // namespace

TEST(Memory, TrainingLoopStaysFlat) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's quarantine holds freed memory, so resident memory grows by design";
#endif
  Model m;
  Array x = random::normal({16, 8}, 0.0, 1.0, Dtype::float32);
  Array t = random::uniform({16, 8}, -0.5, 0.5, Dtype::float32);
  for (int i = 0; i < 1000; ++i) train_step(m, x, t);  // warm up allocator caches
  const long before = resident_kib();
  for (int i = 0; i < 10000; ++i) train_step(m, x, t);
  const long after = resident_kib();
  // A leak of one small object per step would add several MiB over 10,000 steps.
  EXPECT_LT(after - before, 512) << "resident memory grew from " << before << " KiB to " << after << " KiB";
}

TEST(Memory, GraphIsFreedWithItsOutput) {
  Variable x(Array::ones({4}), true);
  std::weak_ptr<FunctionNode> node;
  {
    Variable y = F::sum(F::exp(x) * 2.0);
    node = y.creator();
    EXPECT_FALSE(node.expired());
  }
  EXPECT_TRUE(node.expired());
}

TEST(Memory, BackwardReleasesSavedArrays) {
  Variable x(Array::ones({1000}), true);
  Variable h = F::exp(x);  // exp keeps its output for backward
  std::weak_ptr<detail::Storage> saved = h.array().storage();
  Variable y = F::sum(h);
  h = Variable();
  EXPECT_FALSE(saved.expired());
  y.backward();
  EXPECT_TRUE(saved.expired());
}
