#pragma once
// --dtype float32|mixed_bf16|mixed16, shared by train_mnist and train_cnn (docs/mixed_precision.md):
// the process's Config::dtype, set before the model is built so its parameters stay float32 and
// its links compute in the 16-bit dtype. float16 gradients underflow without loss scaling, so
// mixed16 turns on the optimizer's dynamic loss scaling.
#include <CLI/CLI.hpp>
#include <string>

#include "rensa/rensa.h"
#include "rensa/training.h"

namespace mixed_precision {

inline void add_flag(CLI::App& app, std::string& dtype) {
  app.add_option("--dtype", dtype, "float32, or the mixed-precision policy mixed_bf16 or mixed16")
      ->check(CLI::IsMember({"float32", "mixed_bf16", "mixed16"}))
      ->capture_default_str();
}

/// Sets Config::dtype to `dtype` for the whole process.
inline void apply(const std::string& dtype) {
  rensa::global_config().dtype = rensa::dtype_from_name(dtype);
}

/// The dtype to load the images in, after apply(): under a policy its 16-bit compute dtype, which
/// the first layer casts them to anyway (so training is the same) at half the memory of float32, as
/// Chainer's datasets follow config.dtype; else float32.
inline rensa::Dtype data_dtype() {
  return rensa::mixed_compute_dtype().value_or(rensa::Dtype::float32);
}

/// Dynamic loss scaling under mixed16.
inline void configure(const std::string& dtype, rensa::optimizers::Optimizer& optimizer) {
  if (dtype == "mixed16") optimizer.loss_scaling();
}

}  // namespace mixed_precision
