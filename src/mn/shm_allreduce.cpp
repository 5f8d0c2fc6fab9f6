#include "src/mn/shm_allreduce.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <type_traits>
#include <vector>

#include "rensa/core/half.h"
#include "src/mn/half_convert.h"
#include "src/mn/mpi_util.h"

namespace rensa::mn::detail {
namespace {
constexpr std::size_t kSlotBytes = std::size_t{1} << 20;  // per rank and buffer: stays in cache
// Chunks whose slots together hold at most this many bytes are reduced whole by every rank.
constexpr std::size_t kWholeChunkBytes = std::size_t{64} << 10;
// One cache line per rank (its barrier count), rounded to pages.
std::size_t control_bytes(int ranks) {
  return (64 * static_cast<std::size_t>(ranks) + 4095) / 4096 * 4096;
}
}  // namespace

// A rank's line: how many barriers it has reached (mod 2^32), and how many ranks sleep waiting
// for that count to move. Futexes on a shared mapping work across processes.
struct ShmAllreduce::Arrival {
  std::atomic<uint32_t> count{0};
  std::atomic<uint32_t> sleepers{0};
  char pad[56];
};
static_assert(sizeof(std::atomic<uint32_t>) == 4 && std::atomic<uint32_t>::is_always_lock_free);

namespace {
void futex_wait(std::atomic<uint32_t>* word, uint32_t expected) {
  timespec limit{0, 50'000'000};  // wake up now and then regardless: a lost wake-up cannot hang
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &limit, nullptr, 0);
}
void futex_wake(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
// Whether count `c` has reached `g`, modulo 2^32.
bool reached(uint32_t c, uint32_t g) {
  return static_cast<int32_t>(c - g) >= 0;
}
}  // namespace

bool ShmAllreduce::init(MPI_Comm comm) {
  RENSA_MPI_CHECK(MPI_Comm_rank(comm, &rank_));
  RENSA_MPI_CHECK(MPI_Comm_size(comm, &size_));
  // The ranks' barrier counts (zero-filled memory is a count of 0 with no sleepers), then the slots.
  if (!segment_.map(comm, control_bytes(size_) + 2 * static_cast<std::size_t>(size_) * kSlotBytes,
                    "rensa-mn-allreduce")) {
    return false;
  }
  arrived_ = reinterpret_cast<Arrival*>(segment_.data());
  slots_ = segment_.data() + control_bytes(size_);
  return true;
}

// Each rank publishes how many barriers it has reached on its own cache line and waits until every
// rank has reached as many (no read-modify-write on a shared line). It spins briefly, then sleeps
// on the futex of the rank it waits for: ranks may outnumber cores, or share them with other work
// (the training thread of their own process, say), and a spinning waiter would slow the very rank
// it waits for. The sleeper count is written before the count is read again, and the count before
// the sleeper count is read (both sequentially consistent), so a wake-up is never missed.
void ShmAllreduce::barrier() {
  const uint32_t g = ++generation_;
  Arrival& mine = arrived_[rank_];
  mine.count.store(g, std::memory_order_seq_cst);
  if (mine.sleepers.load(std::memory_order_seq_cst) != 0) futex_wake(&mine.count);
  for (int q = 0; q < size_; ++q) {
    Arrival& peer = arrived_[q];
    for (int spins = 0; !reached(peer.count.load(std::memory_order_acquire), g); ++spins) {
      if (spins < 2000) {
        cpu_relax();
        continue;
      }
      peer.sleepers.fetch_add(1, std::memory_order_seq_cst);
      for (uint32_t c; !reached(c = peer.count.load(std::memory_order_seq_cst), g);) futex_wait(&peer.count, c);
      peer.sleepers.fetch_sub(1, std::memory_order_relaxed);
      break;
    }
  }
  std::atomic_thread_fence(std::memory_order_acquire);
}

namespace {
struct SumOp {
  template <class C>
  C operator()(C a, C b) const {
    return static_cast<C>(a + b);
  }
};
struct MaxOp {  // NaN wins
  template <class C>
  C operator()(C a, C b) const {
    return (b > a || b != b) ? b : a;
  }
};
struct MinOp {
  template <class C>
  C operator()(C a, C b) const {
    return (b < a || b != b) ? b : a;
  }
};
struct OrOp {
  bool operator()(bool a, bool b) const { return a || b; }
};
struct AndOp {
  bool operator()(bool a, bool b) const { return a && b; }
};

// Reduces elements [lo, hi) of every slot, in rank order, into `dest` (this rank's slot, whose
// range no other rank reads in this step, or the output). One pass per slot, so the loops
// vectorize; 16-bit floats accumulate in float and round once.
template <class T, class Op>
void reduce_part(char* const* slots, int k, char* dest, std::size_t lo, std::size_t hi, Op op) {
  using C = compute_t<T>;
  T* acc = reinterpret_cast<T*>(dest);
  if constexpr (std::is_same_v<C, T>) {
    if (k == 2) {  // acc may be one of the two slots: each element is read before it is written
      const T* first = reinterpret_cast<const T*>(slots[0]);
      const T* second = reinterpret_cast<const T*>(slots[1]);
#pragma omp simd
      for (std::size_t i = lo; i < hi; ++i) acc[i] = op(first[i], second[i]);
      return;
    }
  }
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    // Through float blocks on the stack, converted many at a time (the same values as one by one).
    reduce_in_float(
        k, [&](int q) { return reinterpret_cast<const T*>(slots[q]); }, acc, lo, hi, op);
    return;
  }
  {
    // In a temporary: `dest` may be this rank's slot, which must still hold its values when their turn comes.
    using Slot = std::conditional_t<std::is_same_v<C, bool>, unsigned char, C>;  // no vector<bool>
    thread_local std::vector<Slot> tmp;
    tmp.resize(hi - lo);
    Slot* t = tmp.data() - lo;
    const T* first = reinterpret_cast<const T*>(slots[0]);
    for (std::size_t i = lo; i < hi; ++i) t[i] = static_cast<C>(first[i]);
    for (int q = 1; q < k; ++q) {
      const T* s = reinterpret_cast<const T*>(slots[q]);
      for (std::size_t i = lo; i < hi; ++i) t[i] = op(t[i], static_cast<C>(s[i]));
    }
    for (std::size_t i = lo; i < hi; ++i) acc[i] = T(t[i]);
  }
}

template <class T>
void reduce_part(char* const* slots, int k, char* dest, std::size_t lo, std::size_t hi, ReduceOp op) {
  if constexpr (std::is_same_v<T, bool>) {
    if (op == ReduceOp::min) {
      reduce_part<T>(slots, k, dest, lo, hi, AndOp{});
    } else {
      reduce_part<T>(slots, k, dest, lo, hi, OrOp{});
    }
  } else {
    switch (op) {
      case ReduceOp::sum:
      case ReduceOp::mean:
        reduce_part<T>(slots, k, dest, lo, hi, SumOp{});
        break;
      case ReduceOp::max:
        reduce_part<T>(slots, k, dest, lo, hi, MaxOp{});
        break;
      case ReduceOp::min:
        reduce_part<T>(slots, k, dest, lo, hi, MinOp{});
        break;
    }
  }
}
}  // namespace

void ShmAllreduce::allreduce(const void* in, void* out, int64_t n, Dtype dtype, ReduceOp op) {
  const std::size_t isz = itemsize(dtype);
  const auto* src = static_cast<const char*>(in);
  auto* dst = static_cast<char*>(out);
  allreduce(
      n, dtype, op,
      [&](int64_t off, int64_t m, void* slot) {
        std::memcpy(slot, src + static_cast<std::size_t>(off) * isz, static_cast<std::size_t>(m) * isz);
      },
      [&](int64_t off, int64_t m, const void* from) {
        std::memcpy(dst + static_cast<std::size_t>(off) * isz, from, static_cast<std::size_t>(m) * isz);
      });
}

void ShmAllreduce::allreduce(int64_t n, Dtype dtype, ReduceOp op, const Fill& fill, const Drain& drain) {
  const std::size_t isz = itemsize(dtype);
  const std::size_t chunk = kSlotBytes / isz;
  const int k = size_;
  std::vector<char*> slots(static_cast<std::size_t>(k));
  for (std::size_t off = 0; off < static_cast<std::size_t>(n); off += chunk) {
    const std::size_t m = std::min(chunk, static_cast<std::size_t>(n) - off);
    char* buffer = slots_ + (chunks_++ % 2) * static_cast<std::size_t>(k) * kSlotBytes;
    for (int q = 0; q < k; ++q) slots[static_cast<std::size_t>(q)] = buffer + static_cast<std::size_t>(q) * kSlotBytes;
    fill(static_cast<int64_t>(off), static_cast<int64_t>(m), slots[static_cast<std::size_t>(rank_)]);
    barrier();  // every slot of this chunk is written
    if (m * isz * static_cast<std::size_t>(k) <= kWholeChunkBytes) {
      // A small chunk: every rank reduces all of it, which costs less than the second barrier that
      // sharing the work needs. The slots are safe until read: a rank writes this buffer again only
      // after the next chunk's barrier, which waits for every rank to finish here.
      thread_local std::vector<char> whole;
      whole.resize(m * isz);
      dispatch(dtype, [&]<class T>() { reduce_part<T>(slots.data(), k, whole.data(), 0, m, op); });
      drain(static_cast<int64_t>(off), static_cast<int64_t>(m), whole.data());
      continue;
    }
    const std::size_t lo = m * static_cast<std::size_t>(rank_) / static_cast<std::size_t>(k);
    const std::size_t hi = m * static_cast<std::size_t>(rank_ + 1) / static_cast<std::size_t>(k);
    dispatch(dtype,
             [&]<class T>() { reduce_part<T>(slots.data(), k, slots[static_cast<std::size_t>(rank_)], lo, hi, op); });
    barrier();  // every rank's range is reduced, in that rank's slot
    // Each range from the slot of the rank that reduced it: the chunk is read from cache lines each
    // rank wrote itself, instead of every rank writing into one slot that all then read.
    for (int q = 0; q < k; ++q) {
      const std::size_t qlo = m * static_cast<std::size_t>(q) / static_cast<std::size_t>(k);
      const std::size_t qhi = m * static_cast<std::size_t>(q + 1) / static_cast<std::size_t>(k);
      if (qhi > qlo) {
        drain(static_cast<int64_t>(off + qlo), static_cast<int64_t>(qhi - qlo),
              slots[static_cast<std::size_t>(q)] + qlo * isz);
      }
    }
    // The next chunk writes the other buffer; the one after that starts with a barrier this rank
    // can only pass once every rank has copied this chunk out.
  }
}

}  // namespace rensa::mn::detail
