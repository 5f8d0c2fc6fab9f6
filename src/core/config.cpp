#include "rensa/core/config.h"

#include "rensa/core/error.h"

namespace rensa {
namespace {
Config& process_config() {
  static Config cfg;
  return cfg;
}
thread_local const Config* tls_config = nullptr;

template <class T>
T value_as(std::string_view key, const ConfigValue& v) {
  if (const T* p = std::get_if<T>(&v)) return *p;
  RENSA_THROW(ValueError, "using_config: wrong kind of value for key '", key, "'");
}
}  // namespace

const Config& config() { return tls_config ? *tls_config : process_config(); }
Config& global_config() { return process_config(); }

Dtype get_dtype(std::optional<Dtype> dtype) {
  const Dtype d = dtype.value_or(config().dtype);
  return is_mixed(d) ? Dtype::float32 : d;
}

std::optional<Dtype> mixed_compute_dtype() {
  switch (config().dtype) {
    case Dtype::mixed16: return Dtype::float16;
    case Dtype::mixed_bf16: return Dtype::bfloat16;
    default: return std::nullopt;
  }
}

ConfigGuard::ConfigGuard(const Config& cfg) : cfg_(cfg), prev_(tls_config) { tls_config = &cfg_; }
ConfigGuard::~ConfigGuard() { tls_config = prev_; }

ConfigGuard using_config(std::string_view key, ConfigValue value) {
  Config cfg = config();
  if (key == "train") cfg.train = value_as<bool>(key, value);
  else if (key == "enable_backprop") cfg.enable_backprop = value_as<bool>(key, value);
  else if (key == "dtype") cfg.dtype = value_as<Dtype>(key, value);
  else if (key == "device") cfg.device = value_as<Device>(key, value);
  else if (key == "seed") cfg.seed = static_cast<uint64_t>(value_as<int64_t>(key, value));
  else if (key == "debug") cfg.debug = value_as<bool>(key, value);
  else if (key == "keep_graph_on_report") cfg.keep_graph_on_report = value_as<bool>(key, value);
  else if (key == "deterministic") {
    RENSA_THROW(ValueError,
                "using_config: there is no 'deterministic' setting: the same seed, thread count and rank count "
                "already give the same bits (docs/porting.md)");
  } else {
    RENSA_THROW(ValueError, "using_config: unknown key '", key,
                "'; valid: train, enable_backprop, dtype, device, seed, debug, keep_graph_on_report");
  }
  return ConfigGuard(cfg);
}

ConfigGuard no_backprop_mode() {
  Config cfg = config();
  cfg.enable_backprop = false;
  return ConfigGuard(cfg);
}

ConfigGuard force_backprop_mode() {
  Config cfg = config();
  cfg.enable_backprop = true;
  return ConfigGuard(cfg);
}

}  // namespace rensa
