// libFuzzer target: MAT-files (SVHN's format) from arbitrary bytes. Malformed input must end in a
// rensa::Error; anything else (a crash, a sanitizer report, an escaping exception) is a bug.

#include <cstddef>
#include <cstdint>

#include "src/datasets/mat_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  try {
    for (const auto& [name, array] : rensa::datasets::detail::parse_mat(data, size, "fuzz input")) {
      if (array.is_null()) __builtin_trap();
    }
  } catch (const rensa::Error&) {
  }
  return 0;
}
