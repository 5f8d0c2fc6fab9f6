// The cpu backend: 64-byte aligned host memory and the optimized kernels.
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "src/backends/cpu/kernels.h"

namespace rensa::backends {
namespace {

// Freed large blocks kept for reuse, by exact (page-rounded) size. A training loop allocates the
// same sizes every iteration; handing them back to glibc returns them to the kernel (munmap or trim)
// and every new array then pays a page fault per 4 KiB on first touch, which measured a quarter of a
// CNN training step. Bounded: beyond kMaxCachedBytes a freed block goes back to the system.
class LargeBlockCache {
 public:
  static constexpr std::size_t kFrom = 256 * 1024;
  static constexpr std::size_t kMaxCachedBytes = std::size_t{1} << 30;

  ~LargeBlockCache() { release(); }
  /// A cached block of exactly `size` bytes, or nullptr.
  void* take(std::size_t size) {
    std::lock_guard lock(mutex_);
    auto it = free_.find(size);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_ -= size;
    return p;
  }
  /// Keeps `p` (of `size` bytes) for reuse; false when the cache is full.
  bool put(void* p, std::size_t size) {
    std::lock_guard lock(mutex_);
    if (cached_ + size > kMaxCachedBytes) return false;
    free_[size].push_back(p);
    cached_ += size;
    return true;
  }
  void release() {
    std::lock_guard lock(mutex_);
    for (auto& [size, blocks] : free_) {
      for (void* p : blocks) std::free(p);
    }
    free_.clear();
    cached_ = 0;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::size_t, std::vector<void*>> free_;
  std::size_t cached_ = 0;
};

class HostBackend : public Backend {
 public:
  static constexpr std::size_t kAlignedFrom = 16384;
  explicit HostBackend(std::string_view name) : name_(name) {}
  std::string_view name() const override { return name_; }
  void* allocate(std::size_t nbytes) override {
    // Aligned allocation is several times slower than malloc; it only pays off for large arrays.
    const std::size_t size = rounded(nbytes);
    void* p = nullptr;
    if (size >= LargeBlockCache::kFrom) p = cache_.take(size);
    if (p == nullptr) p = size < kAlignedFrom ? std::malloc(size) : std::aligned_alloc(64, size);
    if (p == nullptr) {
      cache_.release();  // the cached blocks may be what is missing
      p = size < kAlignedFrom ? std::malloc(size) : std::aligned_alloc(64, size);
    }
    if (p == nullptr) {
      RENSA_THROW(Error, name_, ": out of memory allocating ", nbytes, " bytes");
    }
    return p;
  }
  void deallocate(void* ptr, std::size_t nbytes) noexcept override {
    const std::size_t size = rounded(nbytes);
    if (size >= LargeBlockCache::kFrom && ptr != nullptr) {
      try {
        if (cache_.put(ptr, size)) return;
      } catch (...) {  // no memory for the cache's bookkeeping: free the block instead
      }
    }
    std::free(ptr);
  }
  void memcpy_from_host(void* dst, const void* src, std::size_t nbytes) override { std::memcpy(dst, src, nbytes); }
  void memcpy_to_host(void* dst, const void* src, std::size_t nbytes) override { std::memcpy(dst, src, nbytes); }

 private:
  // 64-byte multiples (whole cache lines, aligned_alloc's rule); large blocks to whole pages so that
  // nearby sizes share a cache bucket.
  static std::size_t rounded(std::size_t nbytes) {
    if (nbytes == 0) return 64;
    if (nbytes >= LargeBlockCache::kFrom) return (nbytes + 4095) / 4096 * 4096;
    return (nbytes + 63) / 64 * 64;
  }
  std::string_view name_;
  LargeBlockCache cache_;
};

}  // namespace

std::unique_ptr<Backend> make_host_backend(std::string_view name) { return std::make_unique<HostBackend>(name); }

std::unique_ptr<Backend> make_cpu_backend() {
  auto b = make_host_backend("cpu");
  RENSA_REGISTER_KERNELS(b->kernels(), cpu);
  return b;
}

}  // namespace rensa::backends
