#pragma once
// The implementation behind rensa::mn::Communicator: the channels of MPI communicators over the
// hosts (HostTopology), the collectives, the operation scopes that name failures, and gradient
// averaging: packing by WireLayout, summing by the variant's strategy (src/mn/variant.h), the
// start_mean_grad requests on their RequestQueue.
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rensa/mn/communicator.h"
#include "src/mn/channel.h"
#include "src/mn/failure.h"
#include "src/mn/host_topology.h"
#include "src/mn/request_queue.h"
#include "src/mn/shared_segment.h"
#include "src/mn/variant.h"
#include "src/mn/wire_layout.h"

namespace rensa::mn::detail {

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
  /// The variant `variant` over `base` (duplicated); collective over `base`. Throws ValueError for
  /// invalid options or hosts the variant does not run on. `host`: the name this rank is grouped by
  /// (empty: the machine's, or its block of options.ranks_per_host).
  CommunicatorImpl(const VariantEntry& variant, MPI_Comm base, const CommunicatorOptions& options,
                   std::string host = {});
  ~CommunicatorImpl();
  CommunicatorImpl(const CommunicatorImpl&) = delete;
  CommunicatorImpl& operator=(const CommunicatorImpl&) = delete;

  const std::string& name() const { return variant_.info.name; }
  const HostTopology& topology() const { return topo_; }
  int rank() const { return topo_.rank; }
  int size() const { return topo_.size; }
  int intra_rank() const { return topo_.intra_rank; }
  int intra_size() const { return topo_.intra_size; }
  int inter_rank() const { return topo_.inter_rank; }
  int inter_size() const { return topo_.inter_size; }
  const std::string& host() const { return topo_.host; }
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

  /// How `grads` travel on this communicator (its wire dtype, the variant's packing).
  WireLayout layout(const std::vector<Array>& grads) const;
  /// Replaces each array of `grads` (host, contiguous, floating) by its mean over ranks, pack by pack
  /// of `layout`, each summed by the variant. Collective over `ch`.
  void mean_grads(Channel& ch, const std::vector<Array>& grads, const WireLayout& layout);
  /// Reduces over the ranks of this host (ch.intra) through shared memory (see
  /// CommunicatorOptions::shared_memory); false (nothing done) when that is off, this host has one
  /// rank, or the segment could not be mapped. Collective over ch.intra.
  bool shm_allreduce(Channel& ch, const void* in, void* out, int64_t n, Dtype dtype, ReduceOp op);

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
  /// far as this rank can tell: peers on this host from the progress board (those that have not
  /// entered it, then those whose process stopped inside it), the ranks of other hosts when every
  /// rank here has arrived. Empty when it cannot tell.
  std::string missing_ranks(const Channel& ch, uint64_t seq, int peer) const;
  static std::string diagnose(const WaitSlot& slot, const void* context);
  void map_progress_board();
  void end(Channel& ch);
  [[noreturn]] void rethrow_in_context(const std::string& what);
  std::string describe(Channel& ch, const char* op, uint64_t seq, std::size_t bytes) const;
  /// mean_grads of one pack when every rank is on one host, packed into and unpacked from the shared
  /// segment directly; false (nothing done) when not or when there is no segment.
  bool mean_grads_in_segment(Channel& ch, const std::vector<Array>& grads, const WireLayout::Pack& pack,
                             double scale);
  void run_request(Communicator::Request::State& s);
  void after_first_step();

  const VariantEntry& variant_;
  CommunicatorOptions options_;
  HostTopology topo_;
  std::string hostname_;      // the machine's, for messages
  std::vector<int> world_of_;  // rank in MPI_COMM_WORLD of each rank
  bool world_numbering_ = true;          // world_of_[r] == r for every rank of the world
  int64_t timeout_ns_ = 0;
  // Per rank of this host (by intra rank), the last collective it entered on each channel and its
  // watchdog's heartbeat (steady_ns, 0: none yet); shared memory, so a rank that waits too long can
  // name the peers that never arrived or that stopped inside the operation.
  struct ProgressLine {
    std::atomic<uint64_t> entered[2];
    std::atomic<int64_t> alive_ns;
    char pad[40];
  };
  SharedSegment progress_segment_;
  ProgressLine* progress_ = nullptr;
  uint64_t p2p_seq_ = 0;
  bool checking_ = false;
  bool first_step_checks_ = false;  // check_collectives == -1 in a release build

  bool threaded_ = false;  // requests run on bg_ (MPI_THREAD_MULTIPLE), else at once on fg_
  RequestQueue requests_;  // last: its thread stops before the rest goes
};

}  // namespace rensa::mn::detail

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
