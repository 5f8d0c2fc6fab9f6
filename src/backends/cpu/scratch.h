#pragma once
// Per-thread buffers for kernels, kept between calls: allocating them afresh each call costs more
// than the work they hold (new pages to fault in, or an allocation per plane on a hot path). Each
// slot grows to the largest size asked of it and stays.
#include <array>
#include <cstddef>
#include <cstdlib>
#include <memory>

#include "rensa/core/error.h"

namespace rensa::backends::cpu {

template <std::size_t Slots>
class Scratch {
 public:
  /// At least `nbytes` of 64-byte-aligned memory in `slot`; `op` names the caller in the error.
  void* get(std::size_t slot, std::size_t nbytes, const char* op) {
    Buffer& b = buffers_.at(slot);
    if (b.size < nbytes) {
      const std::size_t size = ((nbytes + 4095) / 4096) * 4096;
      b.data.reset(static_cast<char*>(std::aligned_alloc(64, size)));
      RENSA_CHECK(b.data != nullptr, Error, op, ": out of memory allocating ", size, " bytes of scratch");
      b.size = size;
    }
    return b.data.get();
  }

 private:
  struct Free {
    void operator()(char* p) const noexcept { std::free(p); }
  };
  struct Buffer {
    std::unique_ptr<char, Free> data;
    std::size_t size = 0;
  };
  std::array<Buffer, Slots> buffers_;
};

}  // namespace rensa::backends::cpu
