#include "rensa/extensions/value_observation.h"

#include "rensa/core/error.h"
#include "rensa/training/trainer.h"

namespace rensa::extensions {

ObserveValue::ObserveValue(std::string key, std::function<double(training::Trainer&)> fn, training::Trigger trigger)
    : key_(std::move(key)), fn_(std::move(fn)), trigger_(std::move(trigger)) {
  RENSA_CHECK(!key_.empty(), ValueError, "observe_value: empty observation key");
  RENSA_CHECK(fn_ != nullptr, ValueError, "observe_value: null function for '", key_, "'");
}

void ObserveValue::operator()(training::Trainer& trainer) { trainer.observation()[key_] = fn_(trainer); }

ObserveValue observe_value(std::string key, std::function<double(training::Trainer&)> fn, training::Trigger trigger) {
  return ObserveValue(std::move(key), std::move(fn), std::move(trigger));
}

ObserveValue observe_lr(std::string optimizer_name, std::string key, training::Trigger trigger) {
  return ObserveValue(
      std::move(key),
      [name = std::move(optimizer_name)](training::Trainer& trainer) {
        return trainer.updater().get_optimizer(name).lr();
      },
      std::move(trigger));
}

ObserveValue observe_lr(optimizers::Optimizer& optimizer, std::string key, training::Trigger trigger) {
  return ObserveValue(
      std::move(key), [&optimizer](training::Trainer&) { return optimizer.lr(); }, std::move(trigger));
}

}  // namespace rensa::extensions
