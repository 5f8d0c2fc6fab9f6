#pragma once
// A small thread-safe LRU cache of oneDNN primitives (or anything costly to create), keyed by a
// fixed-size array of integers that holds everything the value depends on. Creating a primitive
// picks and JIT-compiles a kernel, which costs far more than running it on small shapes. Entries
// are shared, so one evicted while another thread runs it stays alive until that call returns.
#include <array>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace rensa::backends::cpu::detail {

template <std::size_t N>
struct CacheKey {
  std::array<int64_t, N> v{};
  bool operator==(const CacheKey& o) const { return v == o.v; }
};

template <std::size_t N>
struct CacheKeyHash {
  std::size_t operator()(const CacheKey<N>& k) const {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the fields
    for (int64_t x : k.v) {
      h ^= static_cast<uint64_t>(x);
      h *= 1099511628211ull;
    }
    return static_cast<std::size_t>(h);
  }
};

template <class Key, class Value, class Hash, std::size_t Capacity>
class PrimitiveCache {
 public:
  static constexpr std::size_t kCapacity = Capacity;

  // The cached value of `key`, made by `make()` (outside the lock) on a miss.
  template <class Make>
  std::shared_ptr<const Value> get(const Key& key, Make&& make) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = index_.find(key);
      if (it != index_.end()) {
        order_.splice(order_.begin(), order_, it->second);
        return it->second->second;
      }
    }
    auto made = std::make_shared<const Value>(make());
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = index_.find(key);
    if (it != index_.end()) return it->second->second;  // another thread made it meanwhile
    order_.emplace_front(key, made);
    index_.emplace(key, order_.begin());
    if (order_.size() > kCapacity) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
    return made;
  }

 private:
  std::mutex mutex_;
  std::list<std::pair<Key, std::shared_ptr<const Value>>> order_;
  std::unordered_map<Key, typename decltype(order_)::iterator, Hash> index_;
};

}  // namespace rensa::backends::cpu::detail
