#include "rensa/core/pool_allocator.h"

#include <cstdint>
#include <cstdlib>

namespace rensa::detail {
namespace {

constexpr std::size_t kGranule = 16;
constexpr std::size_t kClasses = kPoolMaxBytes / kGranule + 1;
constexpr uint32_t kMaxCached = 4096;  // blocks kept per size class and thread

struct FreeBlock {
  FreeBlock* next;
};

// Set when this thread's cache is gone (thread exit, static destruction): blocks then go to free().
thread_local bool tls_cache_dead = false;

struct Cache {
  FreeBlock* head[kClasses] = {};
  uint32_t count[kClasses] = {};
  ~Cache() {
    for (auto* h : head) {
      while (h) {
        FreeBlock* next = h->next;
        std::free(h);
        h = next;
      }
    }
    tls_cache_dead = true;
  }
};

Cache& cache() {
  thread_local Cache c;
  return c;
}

std::size_t size_class(std::size_t bytes) { return (bytes + kGranule - 1) / kGranule; }

}  // namespace

// Under AddressSanitizer recycled blocks would hide use-after-free: go straight to malloc.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kPooling = false;
#else
constexpr bool kPooling = true;
#endif

void* pool_allocate(std::size_t bytes) {
  if (!kPooling || bytes > kPoolMaxBytes || tls_cache_dead) {
    void* p = std::malloc(bytes > kPoolMaxBytes ? bytes : size_class(bytes) * kGranule);
    if (!p) throw std::bad_alloc();
    return p;
  }
  const std::size_t c = size_class(bytes);
  Cache& k = cache();
  if (FreeBlock* b = k.head[c]) {
    k.head[c] = b->next;
    --k.count[c];
    return b;
  }
  void* p = std::malloc(c * kGranule == 0 ? kGranule : c * kGranule);
  if (!p) throw std::bad_alloc();
  return p;
}

void pool_deallocate(void* p, std::size_t bytes) noexcept {
  if (p == nullptr) return;
  if (!kPooling || bytes > kPoolMaxBytes || tls_cache_dead) {
    std::free(p);
    return;
  }
  const std::size_t c = size_class(bytes);
  Cache& k = cache();
  if (k.count[c] >= kMaxCached) {
    std::free(p);
    return;
  }
  auto* b = static_cast<FreeBlock*>(p);
  b->next = k.head[c];
  k.head[c] = b;
  ++k.count[c];
}

}  // namespace rensa::detail
