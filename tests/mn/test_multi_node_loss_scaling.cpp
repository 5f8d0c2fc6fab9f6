// Dynamic loss scaling under the multi-node optimizer: the overflow check runs on the averaged
// gradients, so a non-finite gradient on one rank makes every rank skip the step and halve its
// scale, and the ranks stay identical.
#include <cmath>
#include <limits>
#include <vector>

#include "rensa/mn/multi_node_optimizer.h"
#include "rensa/serializers/npz.h"
#include "tests/mn/train_test_util.h"

namespace rensa::mn::test {
namespace {

struct Model : Link {
  Variable W;
  Model() { W = add_param("W", Array::from_vector<double>({0.5, -1.0, 2.0})); }
};

TEST(MultiNodeLossScaling, EveryRankSkipsWhenOneOverflows) {
  for (const char* name : {"flat", "hierarchical"}) {
    Communicator c = comm(name);
    Model m;
    optimizers::SGD opt(0.1);
    add_multi_node_stage(opt, c);
    opt.setup(m);
    opt.loss_scaling(8);
    auto step = [&](double x1) {
      opt.update([&] {
        const std::vector<double> x{1.0 + c.rank(), x1, -1.0};
        return F::sum(F::mul(m.W, Variable(Array::from_vector<double>(x))));
      });
    };
    step(1.0);
    step(1.0);
    const std::vector<double> before = m.W.array().to_vector<double>();
    // Only the last rank's gradient overflows.
    step(c.rank() == c.size() - 1 ? std::numeric_limits<double>::infinity() : 1.0);
    EXPECT_FALSE(opt.is_safe_to_update()) << name;
    EXPECT_EQ(m.W.array().to_vector<double>(), before) << name;
    EXPECT_EQ(opt.loss_scale(), 2.0) << name;  // 1 -> 2 -> 4, then halved
    step(1.0);
    EXPECT_TRUE(opt.is_safe_to_update()) << name;
    const auto all = allgather_values(m.W.array().to_vector<double>());
    for (const auto& w : all) EXPECT_EQ(w, all[0]) << name;
    const auto scales = allgather_values({*opt.loss_scale()});
    for (const auto& s : scales) EXPECT_EQ(s[0], 2.0 * std::pow(2.0, 1.0 / 8.0)) << name;
  }
}

// Double buffering applies each step's gradients one step later, when the dynamic scale has
// doubled: each must be divided by the scale of its own backward (regression: it was divided by the
// scale of the step applying it, halving every update). Powers of two are exact in float64, so the
// run equals one without loss scaling bit for bit; also across a snapshot taken between two steps.
TEST(MultiNodeLossScaling, DoubleBufferingUnscalesEachGradientByItsOwnScale) {
  Communicator c = comm();
  auto loss = [&](Model& m, int t) {
    const std::vector<double> x{1.0 + c.rank() + t, 0.5 * t, -1.0};
    return F::sum(F::mul(m.W, Variable(Array::from_vector<double>(x))));
  };
  auto make = [&](Model& m, optimizers::SGD& opt, bool scaled) {
    add_multi_node_stage(opt, c, {.double_buffering = true});
    opt.setup(m);
    if (scaled) opt.loss_scaling();
  };
  auto run = [&](bool scaled, bool through_snapshot) {
    Model m;
    optimizers::SGD opt(0.1);
    make(m, opt, scaled);
    for (int t = 0; t < 3; ++t) opt.update([&] { return loss(m, t); });
    if (!through_snapshot) {
      for (int t = 3; t < 5; ++t) opt.update([&] { return loss(m, t); });
      return m.W.array().to_vector<double>();
    }
    serializers::DictionarySerializer s;
    opt.serialize(s);
    Model m2;
    m2.W.array().assign(m.W.array());
    optimizers::SGD again(0.1);
    make(m2, again, scaled);
    serializers::DictionaryDeserializer d(s.target(), "the snapshot");
    again.serialize(d);
    for (int t = 3; t < 5; ++t) again.update([&] { return loss(m2, t); });
    return m2.W.array().to_vector<double>();
  };
  const auto plain = run(false, false);
  EXPECT_EQ(run(true, false), plain);
  EXPECT_EQ(run(true, true), plain);
  EXPECT_EQ(run(false, true), plain);
}

}  // namespace
}  // namespace rensa::mn::test
