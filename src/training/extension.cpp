#include "rensa/training/extension.h"

#include "rensa/core/error.h"

namespace rensa::training {

LambdaExtension::LambdaExtension(std::function<void(Trainer&)> fn, std::string name, Trigger trigger, int priority)
    : fn_(std::move(fn)), default_name_(std::move(name)), trigger_(std::move(trigger)), priority_(priority) {
  RENSA_CHECK(fn_ != nullptr, ValueError, "LambdaExtension: null function for extension '", default_name_, "'");
  RENSA_CHECK(!default_name_.empty(), ValueError, "LambdaExtension: empty name");
}

LambdaExtension make_extension(std::function<void(Trainer&)> fn, std::string name, Trigger trigger, int priority) {
  return LambdaExtension(std::move(fn), std::move(name), std::move(trigger), priority);
}

}  // namespace rensa::training
