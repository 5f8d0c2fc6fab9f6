// CommunicatorImpl's operation scopes: names of operations and ranks, the progress board and the
// watchdog's diagnosis of who is missing, errors prefixed with their context, and the fingerprint
// check that compares a collective across ranks before it runs.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "src/mn/communicator_helpers.h"
#include "src/mn/communicator_impl.h"
#include "src/mn/mpi_util.h"

namespace rensa::mn::detail {
namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream is(s);
  for (std::string line; std::getline(is, line);) out.push_back(line);
  return out;
}

const char* reduce_name(int64_t op) {
  switch (static_cast<ReduceOp>(op)) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::mean:
      return "mean";
    case ReduceOp::max:
      return "max";
    case ReduceOp::min:
      return "min";
  }
  return "?";
}

// "allreduce(sum, float32, 10 elements) as operation #3"
std::string fingerprint_text(const int64_t* f) {
  std::ostringstream os;
  const auto op = static_cast<OpCode>(f[0]);
  os << op_name(op) << "(";
  const char* sep = "";
  if (op == OpCode::allreduce && f[4] >= 0) {
    os << reduce_name(f[4]);
    sep = ", ";
  }
  if (f[1] >= 0) {
    os << sep << dtype_name(static_cast<Dtype>(f[1]));
    sep = ", ";
  }
  if (f[2] >= 0) {
    os << sep << f[2] << (op == OpCode::bcast_data ? " entries" : op == OpCode::barrier ? "" : " elements");
    sep = ", ";
  }
  if (f[3] >= 0) {
    os << sep << "root " << f[3];
    sep = ", ";
  }
  if (op != OpCode::allreduce && f[4] >= 0) os << sep << f[4] << " arrays";
  os << ") as operation #" << f[5];
  return os.str();
}

}  // namespace

// Checks that every rank describes the same structure (one line per entry, "path: what"); on a
// mismatch throws ValueError on every rank naming the first differing entry and both ranks.
void check_same_structure(MPI_Comm comm, int size, const std::string& desc, const char* op, const char* entries) {
  const uint64_t mine = fnv1a(desc);
  std::vector<uint64_t> hashes(static_cast<std::size_t>(size));
  RENSA_MPI_CHECK(MPI_Allgather(&mine, 1, MPI_UINT64_T, hashes.data(), 1, MPI_UINT64_T, comm));
  if (std::all_of(hashes.begin(), hashes.end(), [&](uint64_t h) { return h == hashes[0]; })) return;
  const std::vector<std::string> all = allgather_strings(comm, size, desc, op);
  const int other = static_cast<int>(
      std::find_if(hashes.begin(), hashes.end(), [&](uint64_t h) { return h != hashes[0]; }) - hashes.begin());
  const auto a = split_lines(all[0]), b = split_lines(all[static_cast<std::size_t>(other)]);
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  const std::string left = i < a.size() ? a[i] : "(nothing)";
  const std::string right = i < b.size() ? b[i] : "(nothing)";
  RENSA_THROW(ValueError, op, ": the ranks' ", entries, " differ: rank 0 has ", left, " where rank ", other, " has ",
              right);
}

const char* op_name(OpCode op) {
  switch (op) {
    case OpCode::allreduce:
      return "allreduce";
    case OpCode::bcast:
      return "bcast";
    case OpCode::gather:
      return "gather";
    case OpCode::allgather:
      return "allgather";
    case OpCode::scatter:
      return "scatter";
    case OpCode::alltoall:
      return "alltoall";
    case OpCode::barrier:
      return "barrier";
    case OpCode::bcast_bytes:
      return "bcast_bytes";
    case OpCode::gather_bytes:
      return "gather_bytes";
    case OpCode::allgather_bytes:
      return "allgather_bytes";
    case OpCode::scatter_bytes:
      return "scatter_bytes";
    case OpCode::bcast_data:
      return "bcast_data";
    case OpCode::mean_grad:
      return "mean_grad";
    case OpCode::split:
      return "split";
  }
  return "operation";
}

// ---- operation scopes ------------------------------------------------------------------------------

std::string CommunicatorImpl::rank_name(int r) const {
  std::string out = std::string("rank ").append(std::to_string(r));
  // A communicator over some of the job's ranks (split, or the program's MPI_Comm) numbers its own.
  if (!world_numbering_)
    out.append(" (world rank ").append(std::to_string(world_of_[static_cast<std::size_t>(r)])).append(")");
  return out;
}

std::string CommunicatorImpl::rank_prefix() const {
  return rank_name(topo_.rank) + " on host " + hostname_ + ": ";
}

std::string CommunicatorImpl::describe(Channel& ch, const char* op, uint64_t seq, std::size_t bytes) const {
  return std::string(op) + " #" + std::to_string(seq) + " (" + name() + ", " + format_bytes(bytes) + ch.label + ")";
}

void CommunicatorImpl::begin(Channel& ch, const std::string& what, uint64_t seq, int peer) {
  if (progress_ != nullptr && seq != 0) progress_[topo_.intra_rank].entered[ch.index].store(seq, std::memory_order_release);
  slot_begin(ch.slot, what, timeout_ns_, seq, peer);
}

void CommunicatorImpl::map_progress_board() {
  if (topo_.intra_size < 2) return;
  static_assert(sizeof(ProgressLine) == 64 && std::atomic<uint64_t>::is_always_lock_free);
  // Zero-filled memory is "no collective entered yet" on every line.
  if (progress_segment_.map(fg_.intra.get(), sizeof(ProgressLine) * static_cast<std::size_t>(topo_.intra_size),
                            "rensa-mn-progress")) {
    progress_ = reinterpret_cast<ProgressLine*>(progress_segment_.data());
  }
}

std::string CommunicatorImpl::diagnose(const WaitSlot& slot, const void* context) {
  const auto* ch = static_cast<const Channel*>(context);
  return ch->owner->missing_ranks(*ch, slot.seq.load(std::memory_order_relaxed),
                                  slot.peer.load(std::memory_order_relaxed));
}

std::string CommunicatorImpl::missing_ranks(const Channel& ch, uint64_t seq, int peer) const {
  const auto name = [&](int r) {
    return rank_name(r) + " on host " + topo_.host_names[static_cast<std::size_t>(topo_.host_of[static_cast<std::size_t>(r)])];
  };
  // This host's ranks in rank order are its intra ranks; -1 for a rank of another host.
  const auto intra_of = [&](int r) {
    if (topo_.host_of[static_cast<std::size_t>(r)] != topo_.inter_rank) return -1;
    int q = 0;
    for (int k = 0; k < r; ++k) q += topo_.host_of[static_cast<std::size_t>(k)] == topo_.inter_rank ? 1 : 0;
    return q;
  };
  // How long the process of rank r (on this host) has shown no sign of life; 0 when it has, or
  // when that cannot be seen. Its watchdog beats every 50 ms; a process stopped whole (SIGSTOP)
  // stops beating, wherever its threads were.
  const int64_t now = steady_ns(), stale_ns = std::min<int64_t>(1'000'000'000, timeout_ns_ / 2);
  const auto silent_ns = [&](int r) -> int64_t {
    const int q = intra_of(r);
    if (progress_ == nullptr || q < 0) return 0;
    const int64_t beat = progress_[q].alive_ns.load(std::memory_order_acquire);
    return beat != 0 && now - beat > stale_ns ? now - beat : 0;
  };
  const auto seconds = [](int64_t ns) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.1f s", static_cast<double>(ns) * 1e-9);
    return std::string(buf);
  };
  if (peer >= 0 && peer < topo_.size) {
    if (const int64_t silent = silent_ns(peer)) {
      return "waiting for " + name(peer) + ", which is stopped: its process has shown no sign of life for " +
             seconds(silent);
    }
    return "waiting for " + name(peer) + ", which is stopped, cut off, failed, or not calling the matching operation";
  }
  if (seq == 0 || (progress_ == nullptr && topo_.intra_size > 1)) return "";
  std::string behind, stopped;
  int n_behind = 0, n_stopped = 0;
  std::vector<int> elsewhere;
  for (int r = 0; r < topo_.size; ++r) {
    const int intra = intra_of(r);
    if (intra < 0) {
      elsewhere.push_back(r);
      continue;
    }
    if (r == topo_.rank) continue;
    const uint64_t e = progress_[intra].entered[ch.index].load(std::memory_order_acquire);
    if (e >= seq) {
      if (const int64_t silent = silent_ns(r)) {
        stopped += (n_stopped++ == 0 ? "" : ", ") + name(r) + " (no sign of life for " + seconds(silent) + ")";
      }
      continue;
    }
    behind += (n_behind++ == 0 ? "" : ", ") + name(r) +
              (e == 0 ? " (entered no collective of this communicator yet)"
                      : " (last entered #" + std::to_string(e) + ")");
  }
  if (n_behind > 0) {
    return "waiting for " + behind + (n_behind == 1 ? ", which has" : ", which have") +
           " not reached this operation (stopped, failed, or calling another one)";
  }
  // Every rank here has entered the operation; one whose process has stopped is stuck inside it.
  if (n_stopped > 0) {
    return "waiting for " + stopped + (n_stopped == 1 ? ", which is" : ", which are") +
           " stopped inside this operation";
  }
  if (elsewhere.empty()) return "";
  const std::string here = topo_.intra_size > 1 ? "every rank on this host has arrived; " : "";
  if (elsewhere.size() == 1) {
    return here + "waiting for " + name(elsewhere[0]) +
           ", which is stopped, cut off, failed, or not calling this operation";
  }
  std::string list;
  const std::size_t shown = std::min<std::size_t>(elsewhere.size(), 16);
  for (std::size_t i = 0; i < shown; ++i) list += (i == 0 ? "" : ", ") + std::to_string(elsewhere[i]);
  if (shown < elsewhere.size()) list += ", ... (" + std::to_string(elsewhere.size()) + " in all)";
  return here + "waiting for one or more of ranks " + list +
         " on other hosts (stopped, cut off, failed, or not calling this operation)";
}

void CommunicatorImpl::end(Channel& ch) {
  slot_end(ch.slot);
}

void CommunicatorImpl::rethrow_in_context(const std::string& what) {
  rethrow_with_context<CommunicationError>(rank_prefix() + what + ": ");
}

void CommunicatorImpl::check_fingerprint(Channel& ch, const Fingerprint& fp, uint64_t seq) {
  constexpr int kFields = 7;
  const int64_t structure_hash = fp.structure ? static_cast<int64_t>(fnv1a(*fp.structure) >> 1) : -1;
  const int64_t mine[kFields] = {fp.op, fp.dtype, fp.count, fp.root, fp.aux, static_cast<int64_t>(seq), structure_hash};
  std::vector<int64_t> all(static_cast<std::size_t>(topo_.size) * kFields);
  RENSA_MPI_CHECK(MPI_Allgather(mine, kFields, MPI_INT64_T, all.data(), kFields, MPI_INT64_T, ch.world.get()));
  auto at = [&](int r, int f) { return all[static_cast<std::size_t>(r) * kFields + static_cast<std::size_t>(f)]; };
  for (int f = 0; f < kFields; ++f) {
    // The op and sequence number must agree exactly; other fields may be -1 ("any") on some ranks.
    const bool exact = f == 0 || f == 5 || f == 6;
    int ref = -1;
    for (int r = 0; r < topo_.size; ++r) {
      const int64_t v = at(r, f);
      if (!exact && v == -1) continue;
      if (ref < 0) {
        ref = r;
      } else if (v != at(ref, f)) {
        const std::string message =
            rensa::detail::concat("collective mismatch: rank ", ref, " calls ",
                                  fingerprint_text(&all[static_cast<std::size_t>(ref) * kFields]), " but rank ", r,
                                  " calls ", fingerprint_text(&all[static_cast<std::size_t>(r) * kFields]));
        bool same_op = true;
        for (int q = 0; q < topo_.size; ++q) same_op = same_op && at(q, 0) == fp.op;
        // Every rank runs the same operation, so every rank can compare the structures in detail.
        if (same_op && fp.structure) {
          check_same_structure(ch.world.get(), topo_.size, *fp.structure, fp.structure_op, fp.structure_entries);
        }
        throw CommunicationError(message);
      }
    }
  }
}

void CommunicatorImpl::after_first_step() {
  if (first_step_checks_) {
    first_step_checks_ = false;
    checking_ = false;
  }
}

void CommunicatorImpl::request_waited() {
  after_first_step();
}

}  // namespace rensa::mn::detail
