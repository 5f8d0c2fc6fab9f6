#pragma once
/// \file
/// Devices: where an array's memory lives and which backend's kernels run on it.

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace rensa {

/// The kind of a device. `reference` is host memory with naive kernels, the ground truth in tests.
enum class DeviceType : uint8_t { cpu, reference, cuda };

/// A device: a type and an index (always 0 for cpu and reference).
struct Device {
  /// The kind of device.
  DeviceType type = DeviceType::cpu;
  /// Index among the devices of that type (0 for cpu and reference).
  int index = 0;

  /// The host CPU.
  static constexpr Device cpu() { return {DeviceType::cpu, 0}; }
  /// The reference backend (host memory, naive kernels).
  static constexpr Device reference() { return {DeviceType::reference, 0}; }
  /// Parses "cpu", "reference", "cuda" or "cuda:N"; throws DeviceError listing the valid names.
  static Device parse(std::string_view name);

  /// True when the memory is ordinary host memory (cpu and reference).
  constexpr bool is_host() const { return type != DeviceType::cuda; }
  /// True when type and index are equal.
  friend constexpr bool operator==(Device a, Device b) { return a.type == b.type && a.index == b.index; }
  /// True when type or index differ.
  friend constexpr bool operator!=(Device a, Device b) { return !(a == b); }
};

/// "cpu", "reference", "cuda:0".
std::string to_string(Device device);
/// Writes to_string(device).
std::ostream& operator<<(std::ostream& os, Device device);

}  // namespace rensa
