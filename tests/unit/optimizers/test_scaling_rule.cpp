// The learning-rate scaling rule: linear and square-root scaling of the global batch, and errors.
#include <cmath>
#include <limits>

#include "rensa/optimizers/scaling_rule.h"
#include "tests/unit/test_util.h"

namespace rensa {
namespace {

namespace O = optimizers;
using test::expect_error;

TEST(ScalingRule, LinearScalesWithTheGlobalBatch) {
  EXPECT_DOUBLE_EQ(O::scaled_learning_rate(0.1, 256, 256), 0.1);
  EXPECT_DOUBLE_EQ(O::scaled_learning_rate(0.1, 256, 8192), 3.2);  // Goyal et al.: x32
  // 32 per rank on 8 ranks is a global batch of 256.
  EXPECT_DOUBLE_EQ(O::scaled_learning_rate(0.1, 256, 32, 8), 0.1);
  EXPECT_DOUBLE_EQ(O::scaled_learning_rate(0.05, 100, 3200, 1, O::ScalingRule::linear), 1.6);
  EXPECT_DOUBLE_EQ(O::scaled_learning_rate(0.1, 200, 100), 0.05);  // smaller batches scale down
}

TEST(ScalingRule, SquareRoot) {
  EXPECT_DOUBLE_EQ(O::scaled_learning_rate(0.001, 100, 400, 1, O::ScalingRule::sqrt), 0.002);
  EXPECT_DOUBLE_EQ(O::scaled_learning_rate(0.001, 100, 100, 16, O::ScalingRule::sqrt), 0.004);
  EXPECT_EQ(O::scaling_rule_from_name("sqrt"), O::ScalingRule::sqrt);
  EXPECT_EQ(O::scaling_rule_from_name("linear"), O::ScalingRule::linear);
}

TEST(ScalingRule, Errors) {
  expect_error<ValueError>([] { O::scaled_learning_rate(0.0, 100, 100); }, {"scaled_learning_rate", "base_lr", "0"});
  expect_error<ValueError>([] { O::scaled_learning_rate(-0.1, 100, 100); }, {"scaled_learning_rate", "-0.1"});
  expect_error<ValueError>([] { O::scaled_learning_rate(std::numeric_limits<double>::infinity(), 100, 100); },
                           {"scaled_learning_rate", "base_lr", "inf"});
  expect_error<ValueError>([] { O::scaled_learning_rate(0.1, 0, 100); },
                           {"scaled_learning_rate", "base_batchsize", "0"});
  expect_error<ValueError>([] { O::scaled_learning_rate(0.1, 100, -5); }, {"scaled_learning_rate", "batchsize", "-5"});
  expect_error<ValueError>([] { O::scaled_learning_rate(0.1, 100, 100, 0); }, {"scaled_learning_rate", "n_ranks", "0"});
  expect_error<ValueError>([] { O::scaling_rule_from_name("cubic"); }, {"scaling_rule_from_name", "cubic", "sqrt"});
}

}  // namespace
}  // namespace rensa
