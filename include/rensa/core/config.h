#pragma once
/// \file
/// The one configuration of rensa and the RAII guards that override it for the calling thread.

#include <cstdint>
#include <optional>
#include <string_view>
#include <variant>

#include "rensa/core/device.h"
#include "rensa/core/dtype.h"

namespace rensa {

/// Process-wide settings. Read them through config(); change them for a scope with using_config().
struct Config {
  /// Training mode (dropout active, batch statistics); false in evaluation.
  bool train = true;
  /// Record the graph for backward. Off inside no_backprop_mode().
  bool enable_backprop = true;
  /// Default dtype of parameters (read through get_dtype()), or a mixed-precision policy: under
  /// Dtype::mixed16 / Dtype::mixed_bf16 parameters are float32 and the links of
  /// docs/mixed_precision.md compute in float16 / bfloat16 (mixed_compute_dtype()).
  Dtype dtype = Dtype::float32;
  /// Default device of created arrays.
  Device device = Device::cpu();
  /// Seed of each thread's default generator. There is no "deterministic" setting: the same seed,
  /// thread count and rank count give the same bits (no kernel adds in an order that depends on
  /// timing), so there is nothing to switch on.
  uint64_t seed = 0;
  /// Debug mode: every function's outputs and gradients are checked for NaN, and the first one
  /// throws naming the function and where it was applied (docs/profiling.md).
  bool debug = false;
  /// A Variable reported with report(key, variable) is kept with its graph (Trainer::
  /// observed_variables) instead of only its value, for extensions that read the graph (DumpGraph).
  bool keep_graph_on_report = false;
};

/// The settings in force on the calling thread: the innermost guard's, or the process defaults.
const Config& config();
/// The process defaults, for setting at start-up before other threads start; guards override them.
Config& global_config();

/// Chainer's get_dtype: `dtype` (by default the config's) as the dtype of new parameters. A mixed
/// policy gives float32, the dtype its parameters keep.
Dtype get_dtype(std::optional<Dtype> dtype = std::nullopt);
/// The dtype links compute in under the config's mixed policy (float16 for mixed16, bfloat16 for
/// mixed_bf16); nullopt under a plain dtype.
std::optional<Dtype> mixed_compute_dtype();

/// A value for using_config: bool, integer, Dtype or Device, matching the key.
using ConfigValue = std::variant<bool, int64_t, Dtype, Device>;

/// Restores the previous settings of the calling thread when it goes out of scope. Not copyable or
/// movable: create it as a local variable.
class [[nodiscard]] ConfigGuard {
 public:
  /// Makes a copy of `cfg` the calling thread's settings until the guard is destroyed.
  explicit ConfigGuard(const Config& cfg);
  ~ConfigGuard();
  ConfigGuard(const ConfigGuard&) = delete;
  ConfigGuard& operator=(const ConfigGuard&) = delete;

 private:
  Config cfg_;
  const Config* prev_;
};

/// Sets `key` ("train", "enable_backprop", "dtype", "device", "seed", "debug",
/// "keep_graph_on_report") for the calling thread until the guard dies. ValueError for an unknown
/// key (valid keys listed; "deterministic" says why there is none) or a value of the wrong kind.
ConfigGuard using_config(std::string_view key, ConfigValue value);
/// Disables graph recording until the guard dies.
ConfigGuard no_backprop_mode();
/// Enables graph recording until the guard dies (inside a no_backprop_mode scope).
ConfigGuard force_backprop_mode();

}  // namespace rensa
