#pragma once
// Record signatures and sizes of the zip format (PKWARE APPNOTE), shared by the zip writer and
// reader.

#include <cstddef>
#include <cstdint>

namespace rensa::serializers::detail {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr std::size_t kLocalHeaderBytes = 30;
constexpr std::size_t kCentralHeaderBytes = 46;
constexpr std::size_t kEndBytes = 22;
constexpr std::size_t kZip64EndBytes = 56;
constexpr std::size_t kZip64LocatorBytes = 20;
constexpr uint32_t k32Max = 0xffffffffu;
constexpr uint16_t k16Max = 0xffffu;

}  // namespace rensa::serializers::detail
