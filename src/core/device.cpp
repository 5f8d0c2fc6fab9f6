#include "rensa/core/device.h"

#include <charconv>

#include "rensa/core/error.h"

namespace rensa {

Device Device::parse(std::string_view name) {
  if (name == "cpu") return cpu();
  if (name == "reference") return reference();
  if (name == "cuda") return {DeviceType::cuda, 0};
  if (name.starts_with("cuda:")) {
    int index = -1;
    auto digits = name.substr(5);
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec == std::errc() && p == digits.data() + digits.size() && index >= 0) return {DeviceType::cuda, index};
  }
  RENSA_THROW(DeviceError, "Device::parse: unknown device '", name, "'; valid: cpu, reference, cuda, cuda:N");
}

std::string to_string(Device device) {
  switch (device.type) {
    case DeviceType::cpu: return "cpu";
    case DeviceType::reference: return "reference";
    case DeviceType::cuda: return "cuda:" + std::to_string(device.index);
  }
  return "unknown";
}

std::ostream& operator<<(std::ostream& os, Device device) { return os << to_string(device); }

}  // namespace rensa
