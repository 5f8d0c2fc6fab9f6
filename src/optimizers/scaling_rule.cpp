// The learning-rate scaling rule.
#include "rensa/optimizers/scaling_rule.h"

#include <cmath>
#include <string>

#include "rensa/core/error.h"

namespace rensa::optimizers {

double scaled_learning_rate(double base_lr, int64_t base_batchsize, int64_t batchsize, int64_t n_ranks,
                            ScalingRule rule) {
  RENSA_CHECK(std::isfinite(base_lr) && base_lr > 0.0, ValueError,
              "scaled_learning_rate: base_lr must be positive and finite, got ", base_lr);
  RENSA_CHECK(base_batchsize >= 1, ValueError, "scaled_learning_rate: base_batchsize must be positive, got ",
              base_batchsize);
  RENSA_CHECK(batchsize >= 1, ValueError, "scaled_learning_rate: batchsize (per rank) must be positive, got ",
              batchsize);
  RENSA_CHECK(n_ranks >= 1, ValueError, "scaled_learning_rate: n_ranks must be positive, got ", n_ranks);
  const double k = static_cast<double>(batchsize) * static_cast<double>(n_ranks) / static_cast<double>(base_batchsize);
  return base_lr * (rule == ScalingRule::sqrt ? std::sqrt(k) : k);
}

ScalingRule scaling_rule_from_name(std::string_view name) {
  if (name == "linear") return ScalingRule::linear;
  if (name == "sqrt") return ScalingRule::sqrt;
  RENSA_THROW(ValueError, "scaling_rule_from_name: unknown scaling rule '", std::string(name),
              "'; valid names: linear, sqrt");
}

}  // namespace rensa::optimizers
