#pragma once
// The optimizers ported after the first eight, with the hyperparameters the optimizer tests use:
// shared by the snapshot, fp32-update and reference-backend tests.
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rensa/training.h"

namespace rensa::test {

using OptimizerFactory = std::function<std::unique_ptr<optimizers::Optimizer>()>;

inline std::vector<std::pair<std::string, OptimizerFactory>> ported_optimizers() {
  namespace O = optimizers;
  return {
      {"AdaDelta", [] { return std::make_unique<O::AdaDelta>(0.9, 1e-4); }},
      {"CorrectedMomentumSGD", [] { return std::make_unique<O::CorrectedMomentumSGD>(0.1, 0.8); }},
      {"MSVAG", [] { return std::make_unique<O::MSVAG>(0.2, 0.8, 0.9, 0.01); }},
      {"RMSpropGraves", [] { return std::make_unique<O::RMSpropGraves>(0.01, 0.9, 0.8, 1e-3); }},
      {"SMORMS3", [] { return std::make_unique<O::SMORMS3>(0.05); }},
      {"AdaBound", [] { return std::make_unique<O::AdaBound>(0.01, 0.9, 0.99, 0.05, 0.1); }},
      {"AMSBound", [] { return std::make_unique<O::AMSBound>(0.01, 0.9, 0.99, 0.05, 0.1); }},
  };
}

}  // namespace rensa::test
