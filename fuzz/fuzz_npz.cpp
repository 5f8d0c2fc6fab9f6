// libFuzzer target: .npz archives and .npy images from arbitrary bytes. Malformed input must end
// in a rensa::Error; anything else (a crash, a sanitizer report, an escaping exception) is a bug.
// An archive that parses must also survive a write-read round trip unchanged.

#include <cstddef>
#include <cstdint>
#include <string>

#include "rensa/serializers/npz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  namespace S = rensa::serializers;
  try {
    const auto arrays = S::read_npz_bytes(data, size, "fuzz input");
    // rensa's own encoding is canonical: reading it back and encoding again gives the same bytes.
    const std::string once = S::encode_npz(arrays);
    const std::string twice = S::encode_npz(S::read_npz_bytes(once.data(), once.size(), "re-encoded input"));
    if (once != twice) __builtin_trap();
  } catch (const rensa::Error&) {
  }
  try {
    S::parse_npy(data, size, "fuzz input");
  } catch (const rensa::Error&) {
  }
  return 0;
}
