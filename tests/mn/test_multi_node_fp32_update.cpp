// use_fp32_update under the multi-node optimizer: the stage averages the 16-bit gradients before
// the rules run, so each rank's float32 master follows a float32 update fed the averaged gradient,
// and every rank holds the same masters and parameters.
#include <memory>
#include <vector>

#include "rensa/mn/multi_node_optimizer.h"
#include "tests/mn/train_test_util.h"

namespace rensa::mn::test {
namespace {

struct Model : Link {
  Variable W;
  explicit Model(Dtype dtype) { W = add_param("W", Array::from_vector<double>({0.5, -1.0, 2.0, 0.25}).astype(dtype)); }
};

TEST(MultiNodeFp32Update, MastersFollowTheAveragedGradientOnEveryRank) {
  for (const Dtype dtype : {Dtype::bfloat16, Dtype::float16}) {
    Communicator c = comm("flat");
    Model m(dtype), ref(Dtype::float32);
    auto opt = create_multi_node_optimizer(std::make_unique<optimizers::Adam>(0.01), c);
    opt->setup(m);
    opt->use_fp32_update();
    optimizers::Adam ref_opt(0.01);
    ref_opt.setup(ref);
    for (int step = 1; step <= 3; ++step) {
      opt->update([&] {
        const std::vector<double> x{1.0 + c.rank(), -0.3 * step, 0.001 * (c.rank() + 1), 2.0};
        return F::sum(F::mul(m.W, Variable(Array::from_vector<double>(x).astype(dtype))));
      });
      // The gradient the rules saw: averaged over the ranks, still 16-bit.
      ASSERT_EQ(m.W.grad().dtype(), dtype);
      ref.W.set_grad(Variable(m.W.grad().array().astype(Dtype::float32)));
      ref_opt.update();
      const Array* master = opt->rule(m.W)->fp32_param();
      ASSERT_NE(master, nullptr);
      EXPECT_TRUE(array_equal(*master, ref.W.array())) << dtype << " step " << step;
      EXPECT_TRUE(array_equal(m.W.array(), master->astype(dtype))) << dtype << " step " << step;
      const auto masters = allgather_values(master->to_vector<double>());
      const auto params = allgather_values(m.W.array().to_vector<double>());
      for (const auto& v : masters) EXPECT_EQ(v, masters[0]) << dtype;
      for (const auto& v : params) EXPECT_EQ(v, params[0]) << dtype;
    }
  }
}

}  // namespace
}  // namespace rensa::mn::test
