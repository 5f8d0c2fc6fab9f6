// The cpu backend: 64-byte aligned host memory and the optimized kernels.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "rensa/core/cpu_features.h"
#include "src/backends/cpu/kernels.h"
#include "src/backends/cpu/onednn.h"

namespace rensa::backends {
namespace {

// Freed large blocks kept for reuse, by exact (page-rounded) size. A training loop allocates the
// same sizes every iteration; handing them back to glibc returns them to the kernel (munmap or trim)
// and every new array then pays a page fault per 4 KiB on first touch, which measured a quarter of a
// CNN training step (and at batch 2048 a ResNet step spent more time in the kernel than computing).
// Bounded by the program's own high-water mark: blocks in use plus blocks cached stay within
// max(kMinBound, 1.5 x the most ever in use at once), so the cache grows with the model and batch
// (a fixed 1 GiB left a ResNet at batch 2048 faulting in 600 MB a step) but never far past what the
// program's busiest moment needed; a fresh allocation that would cross the bound first frees cached
// blocks.
class LargeBlockCache {
 public:
  static constexpr std::size_t kFrom = 256 * 1024;
  static constexpr std::size_t kMinBound = std::size_t{1} << 30;

  ~LargeBlockCache() { release(); }
  /// A cached block of exactly `size` bytes, or nullptr (then the caller allocates and calls
  /// `fresh`).
  void* take(std::size_t size) {
    std::lock_guard lock(mutex_);
    auto it = free_.find(size);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_ -= size;
    in_use_ += size;
    return p;
  }
  /// Counts a newly allocated block of `size` bytes as in use; frees cached blocks while in use plus
  /// cached exceeds the bound.
  void fresh(std::size_t size) noexcept {
    std::lock_guard lock(mutex_);
    in_use_ += size;
    peak_ = std::max(peak_, in_use_);
    const std::size_t bound = this->bound();
    for (auto it = free_.begin(); it != free_.end() && in_use_ + cached_ > bound;) {
      while (!it->second.empty() && in_use_ + cached_ > bound) {
        std::free(it->second.back());
        it->second.pop_back();
        cached_ -= it->first;
      }
      it = it->second.empty() ? free_.erase(it) : std::next(it);
    }
  }
  /// Keeps `p` (of `size` bytes, in use until now) for reuse; false when it goes back to the system.
  bool put(void* p, std::size_t size) {
    std::lock_guard lock(mutex_);
    in_use_ -= std::min(in_use_, size);
    if (in_use_ + cached_ + size > bound()) return false;
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
  // The cache matches exact sizes, so a block freed late in a step may not be the size asked for
  // early in the next: half the peak again of slack keeps most of those in the cache.
  std::size_t bound() const { return std::max(kMinBound, peak_ + peak_ / 2); }

  std::mutex mutex_;
  std::unordered_map<std::size_t, std::vector<void*>> free_;
  std::size_t cached_ = 0;
  std::size_t in_use_ = 0;
  std::size_t peak_ = 0;
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
    bool cached = false;
    if (size >= LargeBlockCache::kFrom) cached = (p = cache_.take(size)) != nullptr;
    if (p == nullptr) p = size < kAlignedFrom ? std::malloc(size) : std::aligned_alloc(64, size);
    if (p == nullptr) {
      cache_.release();  // the cached blocks may be what is missing
      p = size < kAlignedFrom ? std::malloc(size) : std::aligned_alloc(64, size);
    }
    if (p == nullptr) {
      RENSA_THROW(Error, name_, ": out of memory allocating ", nbytes, " bytes");
    }
    if (size >= LargeBlockCache::kFrom && !cached) cache_.fresh(size);
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

std::unique_ptr<Backend> make_host_backend(std::string_view name) {
  return std::make_unique<HostBackend>(name);
}

namespace {

// RENSA_MAX_CPU_ISA caps oneDNN's kernels too, unless ONEDNN_MAX_CPU_ISA says otherwise; this runs
// before the backend's first oneDNN call, which is when oneDNN fixes its ISA.
void cap_onednn_isa() {
  const std::string cap = cpu_isa_cap();
  const char* own = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (cap == "all" || (own != nullptr && *own != '\0')) return;
  using dnnl::cpu_isa;
  const cpu_isa isa = cap == "sse41"         ? cpu_isa::sse41
                      : cap == "avx2"        ? cpu_isa::avx2
                      : cap == "avx512_core" ? cpu_isa::avx512_core
                                             : cpu_isa::avx512_core_bf16;
  try {
    dnnl::set_max_cpu_isa(isa);
  } catch (const dnnl::error& e) {
    RENSA_THROW(ValueError, "RENSA_MAX_CPU_ISA=", cap, ": oneDNN did not take the cap (", e.what(),
                "); set it before the program's first oneDNN call");
  }
}

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() {
  cap_onednn_isa();
  auto b = make_host_backend("cpu");
  RENSA_REGISTER_KERNELS(b->kernels(), cpu);
  return b;
}

}  // namespace rensa::backends
