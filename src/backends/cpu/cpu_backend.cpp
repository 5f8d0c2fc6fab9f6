// The cpu backend: 64-byte aligned host memory and the optimized kernels.
#include <cstdlib>
#include <cstring>
#include <new>

#include "src/backends/cpu/kernels.h"

namespace rensa::backends {
namespace {

class HostBackend : public Backend {
 public:
  static constexpr std::size_t kAlignedFrom = 16384;
  explicit HostBackend(std::string_view name) : name_(name) {}
  std::string_view name() const override { return name_; }
  void* allocate(std::size_t nbytes) override {
    // Aligned allocation is several times slower than malloc; it only pays off for large arrays.
    const std::size_t size = ((nbytes + 63) / 64) * 64;
    void* p = size < kAlignedFrom ? std::malloc(size == 0 ? 64 : size) : std::aligned_alloc(64, size);
    if (p == nullptr) {
      RENSA_THROW(Error, name_, ": out of memory allocating ", nbytes, " bytes");
    }
    return p;
  }
  void deallocate(void* ptr, std::size_t) noexcept override { std::free(ptr); }
  void memcpy_from_host(void* dst, const void* src, std::size_t nbytes) override { std::memcpy(dst, src, nbytes); }
  void memcpy_to_host(void* dst, const void* src, std::size_t nbytes) override { std::memcpy(dst, src, nbytes); }

 private:
  std::string_view name_;
};

}  // namespace

std::unique_ptr<Backend> make_host_backend(std::string_view name) { return std::make_unique<HostBackend>(name); }

std::unique_ptr<Backend> make_cpu_backend() {
  auto b = make_host_backend("cpu");
  KernelTable& k = b->kernels();
  k.fill = cpu::fill;
  k.copy = cpu::copy;
  k.unary = cpu::unary;
  k.binary = cpu::binary;
  k.reduce = cpu::reduce;
  k.matmul = cpu::matmul;
  k.random = cpu::random;
  k.select_item = cpu::select_item;
  k.scatter_item = cpu::scatter_item;
  k.where = cpu::where;
  k.optimizer_update = cpu::optimizer_update;
  return b;
}

}  // namespace rensa::backends
