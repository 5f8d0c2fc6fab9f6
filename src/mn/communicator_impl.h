#pragma once
// The implementation behind rensa::mn::Communicator: MPI communicators, the background thread of
// start_mean_grad, the operation scopes that name failures, and the variants' gradient reduction.
#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "rensa/mn/communicator.h"
#include "src/mn/failure.h"
#include "src/mn/shared_segment.h"
#include "src/mn/shm_allreduce.h"

namespace rensa::mn::detail {

/// An owned MPI communicator (freed unless MPI is already finalized).
class MpiComm {
 public:
  MpiComm() = default;
  explicit MpiComm(MPI_Comm c) : comm_(c) {}
  ~MpiComm() { reset(); }
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;
  MpiComm(MpiComm&& o) noexcept : comm_(o.comm_) { o.comm_ = MPI_COMM_NULL; }
  MpiComm& operator=(MpiComm&& o) noexcept {
    if (this != &o) {
      reset();
      comm_ = o.comm_;
      o.comm_ = MPI_COMM_NULL;
    }
    return *this;
  }
  MPI_Comm get() const { return comm_; }
  void reset();
  /// Gives up ownership: the communicator is left to MPI_Finalize.
  MPI_Comm release() {
    MPI_Comm c = comm_;
    comm_ = MPI_COMM_NULL;
    return c;
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

/// One family of MPI communicators and the state of the thread that uses it: the user's thread uses
/// the foreground channel, the start_mean_grad thread the background one, so their collectives never
/// interleave on one MPI communicator.
struct Channel {
  MpiComm world;     // all ranks
  MpiComm intra;     // the ranks of this host, by rank
  MpiComm inter;     // the ranks with this intra_rank on every host, by host
  uint64_t seq = 0;  // collectives issued on this channel
  WaitSlot slot;     // what the watchdog looks at
  const char* label = "";
  int index = 0;                            // 0: foreground, 1: background (its line in the progress board)
  const CommunicatorImpl* owner = nullptr;  // for the watchdog's diagnosis
  Array pack;                         // the gradient pack buffer, kept between steps (bytes)
  std::unique_ptr<ShmAllreduce> shm;  // mapped at the first reduction that can use it
  int shm_state = 0;                  // 0: not tried, 1: mapped, -1: unavailable
};

/// The fingerprint of a collective compared across ranks before it runs (-1: matches anything).
struct Fingerprint {
  int64_t op = 0;
  int64_t dtype = -1;
  int64_t count = -1;
  int64_t root = -1;
  int64_t aux = -1;  // the reduction of allreduce, the number of arrays, ...
  /// Optional: one line per entry ("parameter /l1/W (3, 4) float32") that must agree on every rank;
  /// on a mismatch the first differing entry is named (ValueError) instead of the counts.
  const std::string* structure = nullptr;
  const char* structure_op = "";       // the function named in that error
  const char* structure_entries = "";  // what the entries are ("gradients")
};

/// Operation codes of fingerprints.
enum class OpCode : int64_t {
  allreduce = 1,
  bcast,
  gather,
  allgather,
  scatter,
  alltoall,
  barrier,
  bcast_bytes,
  gather_bytes,
  allgather_bytes,
  scatter_bytes,
  bcast_data,
  mean_grad,
  split,
};
const char* op_name(OpCode op);

class CommunicatorImpl : public std::enable_shared_from_this<CommunicatorImpl> {
 public:
  /// Collective over `base` (duplicated). Throws ValueError for invalid options. `host`: the name this
  /// rank is grouped by (empty: the machine's, or its block of options.ranks_per_host).
  CommunicatorImpl(std::string name, MPI_Comm base, const CommunicatorOptions& options, std::string host = {});
  virtual ~CommunicatorImpl();
  CommunicatorImpl(const CommunicatorImpl&) = delete;
  CommunicatorImpl& operator=(const CommunicatorImpl&) = delete;

  const std::string& name() const { return name_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  int intra_rank() const { return intra_rank_; }
  int intra_size() const { return intra_size_; }
  int inter_rank() const { return inter_rank_; }
  int inter_size() const { return inter_size_; }
  const std::string& host() const { return host_; }
  /// Number of ranks on each host, by host index.
  const std::vector<int>& host_sizes() const { return host_sizes_; }
  const CommunicatorOptions& options() const { return options_; }
  MPI_Comm world() const { return fg_.world.get(); }
  bool checking() const { return checking_; }
  void set_checking(bool on) { checking_ = on; }

  // ---- collectives (foreground channel) ----
  Array allreduce(const Array& x, ReduceOp op);
  Array bcast(const Array& x, int root);
  std::vector<Array> gather(const Array& x, int root);
  std::vector<Array> allgather(const Array& x);
  Array scatter(const std::vector<Array>& xs, int root);
  std::vector<Array> alltoall(const std::vector<Array>& xs);
  /// `context` (e.g. "mn::functions::send: ") prefixes the operation in errors and watchdog lines.
  void send(const Array& x, int dest, int tag, const std::string& context = {});
  Array recv(int source, int tag, const std::string& context = {});
  void barrier();
  /// Communicator::split (split.cpp); null for a rank without a color.
  std::shared_ptr<CommunicatorImpl> split(std::optional<int> color, int key);
  /// At exit, once every rank has arrived: the first point-to-point message sent to this rank that
  /// no recv took ("" when none), naming both ranks and the tag.
  std::string unreceived_at_exit() const;
  std::string bcast_bytes(const std::string& bytes, int root);
  std::vector<std::string> gather_bytes(const std::string& bytes, int root);
  std::vector<std::string> allgather_bytes(const std::string& bytes);
  std::string scatter_bytes(const std::vector<std::string>& parts, int root);
  void bcast_data(Link& link);
  void multi_node_mean_grad(Link& link, bool zero_fill);
  Communicator::Request start_mean_grad(std::vector<Array> grads);
  /// Called by Request::wait on the user's thread: ends the first-step fingerprint checks.
  void request_waited();
  /// Finishes queued requests and stops the background thread (before MPI_Finalize).
  void shutdown();

  /// Replaces each array of `grads` (host, contiguous, floating) by its mean over ranks. Collective
  /// over `ch`. The variants pack and reduce as they do; the default packs per wire dtype and calls
  /// reduce_wire once per pack.
  virtual void mean_grads(Channel& ch, const std::vector<Array>& grads);
  /// Sums `count` elements of `wire` dtype at `data` over ranks in place (the values are already
  /// divided by size()). `count` fits an int. Collective over `ch`.
  virtual void reduce_wire(Channel& ch, void* data, int64_t count, Dtype wire) = 0;
  /// Whether packing divides by size() (the dummy variant neither divides nor communicates).
  virtual bool averages() const { return true; }
  /// Reduces over the ranks of this host (ch.intra) through shared memory (see
  /// CommunicatorOptions::shared_memory); false (nothing done) when that is off, this host has one
  /// rank, or the segment could not be mapped. Collective over ch.intra.
  bool shm_allreduce(Channel& ch, const void* in, void* out, int64_t n, Dtype dtype, ReduceOp op);
  /// The channel's shared-memory reducer, mapped at the first call (the same point on every rank of
  /// the host); null when shm_allreduce would return false.
  ShmAllreduce* host_reducer(Channel& ch);
  /// Whether reduce_wire is the host's shared-memory allreduce alone (every rank on one host); then
  /// mean_grads packs into and unpacks from the shared segment directly.
  virtual bool reduces_within_host() const { return inter_size_ == 1; }
  /// mean_grads of the `wire` gradients through the shared segment; false (nothing done) when
  /// reduces_within_host() is false or there is no segment.
  bool mean_grads_in_segment(Channel& ch, const std::vector<Array>& grads, Dtype wire, double scale);
  /// The dtype gradients of `grad_dtype` travel in.
  Dtype wire_dtype(Dtype grad_dtype) const;

  // ---- operation scopes ----
  /// "rank R on host H: " for messages.
  std::string rank_prefix() const;
  /// "rank R", with its rank in MPI_COMM_WORLD when this communicator numbers the ranks otherwise.
  std::string rank_name(int r) const;
  /// Runs `body` as collective `op` on `ch`: numbers it, shows it to the watchdog, runs the
  /// fingerprint check first when `check`, and prefixes any exception with the rank, host and
  /// operation (keeping its type).
  template <class F>
  decltype(auto) run_op(Channel& ch, OpCode op, std::size_t bytes, const Fingerprint& fp, bool check, F&& body);
  /// Same for a point-to-point operation with rank `peer` (no fingerprint), named `what`.
  template <class F>
  decltype(auto) run_p2p(const std::string& what, int peer, F&& body);

 protected:
  Channel fg_;  // the user's thread
  Channel bg_;  // the start_mean_grad thread

 private:
  void check_fingerprint(Channel& ch, const Fingerprint& fp, uint64_t seq);
  void begin(Channel& ch, const std::string& what, uint64_t seq, int peer);
  /// The ranks a wait of `ch` in collective `seq` (or point-to-point with `peer`) still misses, as
  /// far as this rank can tell: peers on this host from the progress board, the ranks of other hosts
  /// when every rank here has arrived. Empty when it cannot tell.
  std::string missing_ranks(const Channel& ch, uint64_t seq, int peer) const;
  static std::string diagnose(const WaitSlot& slot, const void* context);
  void map_progress_board();
  void end(Channel& ch);
  [[noreturn]] void rethrow_in_context(const std::string& what);
  std::string describe(Channel& ch, const char* op, uint64_t seq, std::size_t bytes) const;
  void split_hosts(std::string host);
  void worker_loop();
  void run_request(Communicator::Request::State& s);
  void after_first_step();

  std::string name_;
  CommunicatorOptions options_;
  int rank_ = 0, size_ = 1, intra_rank_ = 0, intra_size_ = 1, inter_rank_ = 0, inter_size_ = 1;
  std::string host_;      // the name ranks are grouped by
  std::string hostname_;  // the machine's, for messages
  std::vector<int> host_sizes_;
  std::vector<int> host_of_;             // host index of each rank
  std::vector<std::string> host_names_;  // by host index
  std::vector<int> world_of_;            // rank in MPI_COMM_WORLD of each rank
  bool world_numbering_ = true;          // world_of_[r] == r for every rank of the world
  int64_t timeout_ns_ = 0;
  // Per rank of this host (by intra rank), the last collective it entered on each channel; shared
  // memory, so a rank that waits too long can name the peers that never arrived.
  struct ProgressLine {
    std::atomic<uint64_t> entered[2];
    char pad[48];
  };
  SharedSegment progress_segment_;
  ProgressLine* progress_ = nullptr;
  uint64_t p2p_seq_ = 0;
  bool checking_ = false;
  bool first_step_checks_ = false;  // check_collectives == -1 in a release build

  // start_mean_grad's thread (none below MPI_THREAD_MULTIPLE: requests then run at once)
  bool threaded_ = false;
  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Communicator::Request::State>> queue_;
  bool stop_ = false;
};

/// Creates the variant `name` (already validated) over `base`, grouping this rank by `host` (see
/// CommunicatorImpl). Collective over `base`.
std::shared_ptr<CommunicatorImpl> make_communicator_impl(std::string_view name, MPI_Comm base,
                                                         const CommunicatorOptions& options, std::string host = {});

}  // namespace rensa::mn::detail

namespace rensa::mn {
/// The shared state of a start_mean_grad request.
struct Communicator::Request::State {
  std::weak_ptr<detail::CommunicatorImpl> impl;
  std::vector<Array> grads;
  bool check = false;
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
};
}  // namespace rensa::mn

namespace rensa::mn::detail {

template <class F>
decltype(auto) CommunicatorImpl::run_op(Channel& ch, OpCode op, std::size_t bytes, const Fingerprint& fp, bool check,
                                        F&& body) {
  const uint64_t seq = ++ch.seq;
  const std::string what = describe(ch, op_name(op), seq, bytes);
  begin(ch, what, seq, -1);
  try {
    if (check) check_fingerprint(ch, fp, seq);
    if constexpr (std::is_void_v<decltype(body())>) {
      body();
      end(ch);
    } else {
      decltype(auto) result = body();
      end(ch);
      return result;
    }
  } catch (...) {
    end(ch);
    rethrow_in_context(what);
  }
}

template <class F>
decltype(auto) CommunicatorImpl::run_p2p(const std::string& what, int peer, F&& body) {
  begin(fg_, what, 0, peer);
  try {
    if constexpr (std::is_void_v<decltype(body())>) {
      body();
      end(fg_);
    } else {
      decltype(auto) result = body();
      end(fg_);
      return result;
    }
  } catch (...) {
    end(fg_);
    rethrow_in_context(what);
  }
}

}  // namespace rensa::mn::detail
