// Communicator: MPI set-up, host grouping, the collectives on Arrays and bytes, parameter broadcast
// and gradient averaging (the variants' algorithms are in variants.cpp).
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

#include "rensa/mn/mpi.h"
#include "src/mn/communicator_impl.h"
#include "src/mn/mpi_util.h"

namespace rensa::mn {
namespace detail {
namespace {

// Array headers travel as fixed records: status, dtype, ndim, then up to kMaxDims extents.
constexpr int kMaxDims = 32;
constexpr int kHeader = 3 + kMaxDims;
enum HeaderStatus : int64_t { kOk = 0, kNull = 1, kTooManyDims = 2, kWrongCount = 3, kTooLarge = 4 };

// Live communicators, so the exit-time finalizer can stop their threads before MPI_Finalize.
struct Registry {
  std::mutex mutex;
  std::vector<CommunicatorImpl*> impls;
  std::atomic<int64_t> finalize_timeout_ns{0};
  // When rensa initialized MPI: a communicator for the barrier at exit only (so it meets no other
  // operation), and the point-to-point communicators of destroyed communicators, still probed at exit.
  MPI_Comm exit_world = MPI_COMM_NULL;
  struct Retired {
    MPI_Comm world;
    int rank;
    std::string name;
  };
  std::vector<Retired> retired;
};
Registry& registry() {
  static auto* r = new Registry();  // leaked: used at exit
  return *r;
}

// Messages sent before a peer's exit barrier arrive before its barrier message (one path per peer),
// so after the barrier a pending message is one that no recv will ever take.
std::string unreceived_message(MPI_Comm world, int rank, const std::string& name) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    int found = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, world, &found, &status) != MPI_SUCCESS) return "";
    if (found) {
      return rensa::detail::concat("rank ", status.MPI_SOURCE, " sent rank ", rank, " a message with tag ",
                                   status.MPI_TAG, " (", name, ") that rank ", rank,
                                   " never received: a send without its recv");
    }
  }
  return "";
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    for (CommunicatorImpl* impl : registry().impls) impl->shutdown();
  }
  // A peer that never reaches MPI_Finalize would hang this one: the watchdog guards it too.
  static WaitSlot* slot = new WaitSlot();
  watch(slot);
  slot_begin(*slot, "MPI_Finalize at exit", registry().finalize_timeout_ns.load());
  if (registry().exit_world != MPI_COMM_NULL && MPI_Barrier(registry().exit_world) == MPI_SUCCESS) {
    // A send whose recv never came would otherwise vanish without a word.
    std::lock_guard<std::mutex> lock(registry().mutex);
    std::string lost;
    for (CommunicatorImpl* impl : registry().impls) {
      if (lost.empty()) lost = impl->unreceived_at_exit();
    }
    for (const auto& r : registry().retired) {
      if (lost.empty()) lost = unreceived_message(r.world, r.rank, r.name);
    }
    if (!lost.empty()) abort_job(process_prefix() + "at exit: " + lost + "; aborting the job");
  }
  MPI_Finalize();
  slot_end(*slot);
}

// RENSA_MN_TIMEOUT (seconds), read once; 5 minutes when unset.
std::chrono::milliseconds default_timeout() {
  static const std::string value = [] {
    const char* v = std::getenv("RENSA_MN_TIMEOUT");
    return std::string(v == nullptr ? "" : v);
  }();
  if (value.empty()) return std::chrono::minutes(5);
  char* end = nullptr;
  errno = 0;
  const double seconds = std::strtod(value.c_str(), &end);
  RENSA_CHECK(end != value.c_str() && *end == '\0' && errno == 0 && std::isfinite(seconds) && seconds >= 0 &&
                  seconds <= 1e9,
              ValueError, "create_communicator: RENSA_MN_TIMEOUT must be a non-negative number of seconds (0: never), "
              "got '", value, "'");
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(seconds * 1000.0)));
}

std::string local_hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

Array host_contiguous(const Array& x) {
  return x.device().is_host() ? x.contiguous() : x.to(Device::cpu());
}
Device host_device(Device d) {
  return d.is_host() ? d : Device::cpu();
}
Array to_device(const Array& host, Device d) {
  return host.device() == d ? host : host.to(d);
}

void fill_header(int64_t* h, const Array& x) {
  std::fill(h, h + kHeader, 0);
  if (x.is_null()) {
    h[0] = kNull;
    return;
  }
  if (x.ndim() > kMaxDims) {
    h[0] = kTooManyDims;
    return;
  }
  h[1] = static_cast<int64_t>(x.dtype());
  h[2] = x.ndim();
  for (int64_t i = 0; i < x.ndim(); ++i) h[3 + i] = x.shape()[static_cast<std::size_t>(i)];
}
Dtype header_dtype(const int64_t* h) {
  return static_cast<Dtype>(h[1]);
}
Shape header_shape(const int64_t* h) {
  return Shape(std::vector<int64_t>(h + 3, h + 3 + h[2]));
}
int64_t header_bytes(const int64_t* h) {
  return header_shape(h).numel() * static_cast<int64_t>(itemsize(header_dtype(h)));
}
std::string status_text(int64_t status) {
  switch (status) {
    case kNull:
      return "a null array";
    case kTooManyDims:
      return "an array of more than 32 dimensions";
    default:
      return "an invalid array";
  }
}

// Chunked byte moves: MPI counts are ints.
void bcast_raw(MPI_Comm comm, void* data, int64_t bytes, int root) {
  auto* p = static_cast<char*>(data);
  for (int64_t off = 0; off < bytes; off += kMaxCount) {
    const int n = static_cast<int>(std::min(kMaxCount, bytes - off));
    RENSA_MPI_CHECK(MPI_Bcast(p + off, n, MPI_BYTE, root, comm));
  }
}

int checked_int(int64_t v, const char* op, const char* what) {
  RENSA_CHECK(v <= INT_MAX, ValueError, op, ": ", what, " of ", v, " bytes exceed what one MPI call moves (", INT_MAX,
              " bytes)");
  return static_cast<int>(v);
}

// Displacements of consecutive blocks of `counts`; ValueError when the total does not fit an int.
std::vector<int> displacements(const std::vector<int64_t>& counts, const char* op) {
  std::vector<int> displs(counts.size());
  int64_t total = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    displs[i] = checked_int(total, op, "the data");
    total += counts[i];
  }
  checked_int(total, op, "the data");
  return displs;
}
std::vector<int> to_ints(const std::vector<int64_t>& v) {
  return std::vector<int>(v.begin(), v.end());
}

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

// Every rank's `text`, on every rank (raw: inside an operation scope).
std::vector<std::string> allgather_strings(MPI_Comm comm, int size, const std::string& text, const char* op) {
  const int64_t mine = static_cast<int64_t>(text.size());
  std::vector<int64_t> lens(static_cast<std::size_t>(size));
  RENSA_MPI_CHECK(MPI_Allgather(&mine, 1, MPI_INT64_T, lens.data(), 1, MPI_INT64_T, comm));
  const std::vector<int> displs = displacements(lens, op);
  std::string all(static_cast<std::size_t>(displs.back() + lens.back()), '\0');
  RENSA_MPI_CHECK(MPI_Allgatherv(text.data(), static_cast<int>(mine), MPI_BYTE, all.data(), to_ints(lens).data(),
                                 displs.data(), MPI_BYTE, comm));
  std::vector<std::string> out(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) out[static_cast<std::size_t>(r)] = all.substr(displs[r], lens[r]);
  return out;
}

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

std::string describe_array(const Array& a) {
  std::ostringstream os;
  os << a.shape() << " " << dtype_name(a.dtype());
  return os.str();
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

// Every rank's header of its `x` (kHeader values per rank, in `headers`) and its byte count, for `op`
// (gather, allgather): ValueError when a rank passed no valid array, DtypeError when a rank's dtype
// differs from rank 0's. Collective over `comm`.
std::vector<int64_t> exchange_headers(const Array& x, const char* op, int size, MPI_Comm comm,
                                      std::vector<int64_t>& headers) {
  headers.assign(static_cast<std::size_t>(size) * kHeader, 0);
  int64_t mine[kHeader];
  fill_header(mine, x);
  RENSA_MPI_CHECK(MPI_Allgather(mine, kHeader, MPI_INT64_T, headers.data(), kHeader, MPI_INT64_T, comm));
  std::vector<int64_t> bytes(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    const int64_t* h = &headers[static_cast<std::size_t>(r) * kHeader];
    RENSA_CHECK(h[0] == kOk, ValueError, op, ": rank ", r, " passed ", status_text(h[0]));
    RENSA_CHECK(h[1] == headers[1], DtypeError, op, ": rank 0 passes ", dtype_name(header_dtype(headers.data())),
                " but rank ", r, " passes ", dtype_name(header_dtype(h)));
    bytes[static_cast<std::size_t>(r)] = header_bytes(h);
  }
  return bytes;
}

}  // namespace

void MpiComm::reset() {
  if (comm_ == MPI_COMM_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&comm_);
  comm_ = MPI_COMM_NULL;
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

// ---- construction ----------------------------------------------------------------------------------

CommunicatorImpl::CommunicatorImpl(std::string name, MPI_Comm base, const CommunicatorOptions& options,
                                   std::string host)
    : name_(std::move(name)), options_(options) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  RENSA_CHECK(initialized, ValueError, "create_communicator: MPI is not initialized");
  // First, so that an invalid option that no one catches still ends the job with one line per rank.
  hostname_ = local_hostname();
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  install_failure_handlers(world_rank, hostname_);
  const Dtype w = options.allreduce_grad_dtype;
  RENSA_CHECK(w == Dtype::float32 || w == Dtype::float16 || w == Dtype::bfloat16 || w == Dtype::float64, ValueError,
              "create_communicator: allreduce_grad_dtype must be float32, float16, bfloat16 or float64, got ",
              dtype_name(w));
  if (!options_.timeout) options_.timeout = default_timeout();
  RENSA_CHECK(options_.timeout->count() >= 0, ValueError, "create_communicator: timeout must not be negative, got ",
              options_.timeout->count(), " ms");
  timeout_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(*options_.timeout).count();
  RENSA_CHECK(options.check_collectives >= -1 && options.check_collectives <= 1, ValueError,
              "create_communicator: check_collectives must be -1 (first step / debug builds), 0 (off) or 1 (on), got ",
              options.check_collectives);
  RENSA_CHECK(options.ranks_per_host >= 0, ValueError,
              "create_communicator: ranks_per_host must be 0 (group by host name) or positive, got ",
              options.ranks_per_host);

  int level = MPI_THREAD_SINGLE;
  RENSA_MPI_CHECK(MPI_Query_thread(&level));
  threaded_ = level >= MPI_THREAD_MULTIPLE;
  MPI_Comm dup = MPI_COMM_NULL;
  RENSA_MPI_CHECK(MPI_Comm_dup(base, &dup));
  fg_.world = MpiComm(dup);
  RENSA_MPI_CHECK(MPI_Comm_dup(base, &dup));
  bg_.world = MpiComm(dup);
  for (Channel* ch : {&fg_, &bg_}) RENSA_MPI_CHECK(MPI_Comm_set_errhandler(ch->world.get(), MPI_ERRORS_RETURN));
  fg_.label = "";
  bg_.label = ", background";
  bg_.index = 1;
  RENSA_MPI_CHECK(MPI_Comm_rank(fg_.world.get(), &rank_));
  RENSA_MPI_CHECK(MPI_Comm_size(fg_.world.get(), &size_));
  world_of_.assign(static_cast<std::size_t>(size_), 0);
  RENSA_MPI_CHECK(MPI_Allgather(&world_rank, 1, MPI_INT, world_of_.data(), 1, MPI_INT, fg_.world.get()));
  int world_size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  world_numbering_ = world_size == size_;
  for (int r = 0; r < size_; ++r) world_numbering_ = world_numbering_ && world_of_[static_cast<std::size_t>(r)] == r;
  split_hosts(std::move(host));

  if (options.check_collectives == 1) {
    checking_ = true;
  } else if (options.check_collectives == -1) {
#ifdef NDEBUG
    checking_ = true;
    first_step_checks_ = true;
#else
    checking_ = true;
#endif
  }
  int64_t prev = registry().finalize_timeout_ns.load();
  while (timeout_ns_ > prev && !registry().finalize_timeout_ns.compare_exchange_weak(prev, timeout_ns_)) {
  }
  map_progress_board();
  for (Channel* ch : {&fg_, &bg_}) {
    ch->owner = this;
    ch->slot.diagnose = &CommunicatorImpl::diagnose;
    ch->slot.context = ch;
    watch(&ch->slot);
  }
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    registry().impls.push_back(this);
  }
  if (threaded_) worker_ = std::thread([this] { worker_loop(); });
}

CommunicatorImpl::~CommunicatorImpl() {
  shutdown();
  int finalized = 1;
  MPI_Finalized(&finalized);
  if (!finalized && registry().exit_world != MPI_COMM_NULL) {
    std::lock_guard<std::mutex> lock(registry().mutex);
    registry().retired.push_back({fg_.world.release(), rank_, name_});
  }
  unwatch(&fg_.slot);
  unwatch(&bg_.slot);
  std::lock_guard<std::mutex> lock(registry().mutex);
  auto& v = registry().impls;
  v.erase(std::remove(v.begin(), v.end(), this), v.end());
}

void CommunicatorImpl::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable() && worker_.get_id() != std::this_thread::get_id()) worker_.join();
}

void CommunicatorImpl::split_hosts(std::string host) {
  constexpr int kName = 256;
  std::vector<char> names(static_cast<std::size_t>(size_) * kName, '\0');
  // A sub-communicator's ranks keep the hosts they had in their parent (split.cpp).
  std::string mine = std::move(host);
  if (mine.empty()) {
    mine = options_.ranks_per_host > 0 ? "host" + std::to_string(rank_ / options_.ranks_per_host) : hostname_;
  }
  mine.resize(std::min<std::size_t>(mine.size(), kName - 1));
  std::vector<char> buf(kName, '\0');
  std::copy(mine.begin(), mine.end(), buf.begin());
  RENSA_MPI_CHECK(MPI_Allgather(buf.data(), kName, MPI_CHAR, names.data(), kName, MPI_CHAR, fg_.world.get()));
  std::map<std::string, int> index;
  std::vector<int>& host_of = host_of_;
  host_of.assign(static_cast<std::size_t>(size_), 0);
  for (int r = 0; r < size_; ++r) {
    std::string h(&names[static_cast<std::size_t>(r) * kName]);
    auto [it, inserted] = index.emplace(h, static_cast<int>(index.size()));
    if (inserted) {
      host_sizes_.push_back(0);
      host_names_.push_back(h);
    }
    host_of[static_cast<std::size_t>(r)] = it->second;
    if (r == rank_) intra_rank_ = host_sizes_[static_cast<std::size_t>(it->second)];
    ++host_sizes_[static_cast<std::size_t>(it->second)];
  }
  host_ = mine;
  inter_rank_ = host_of[static_cast<std::size_t>(rank_)];
  inter_size_ = static_cast<int>(host_sizes_.size());
  intra_size_ = host_sizes_[static_cast<std::size_t>(inter_rank_)];
  for (Channel* ch : {&fg_, &bg_}) {
    MPI_Comm c = MPI_COMM_NULL;
    RENSA_MPI_CHECK(MPI_Comm_split(ch->world.get(), inter_rank_, rank_, &c));
    ch->intra = MpiComm(c);
    RENSA_MPI_CHECK(MPI_Comm_split(ch->world.get(), intra_rank_, inter_rank_, &c));
    ch->inter = MpiComm(c);
    RENSA_MPI_CHECK(MPI_Comm_set_errhandler(ch->intra.get(), MPI_ERRORS_RETURN));
    RENSA_MPI_CHECK(MPI_Comm_set_errhandler(ch->inter.get(), MPI_ERRORS_RETURN));
  }
}

Dtype CommunicatorImpl::wire_dtype(Dtype grad_dtype) const {
  if (options_.allreduce_grad_dtype == Dtype::float32 && grad_dtype == Dtype::float64) return Dtype::float64;
  return options_.allreduce_grad_dtype;
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
  return rank_name(rank_) + " on host " + hostname_ + ": ";
}

std::string CommunicatorImpl::describe(Channel& ch, const char* op, uint64_t seq, std::size_t bytes) const {
  return std::string(op) + " #" + std::to_string(seq) + " (" + name_ + ", " + format_bytes(bytes) + ch.label + ")";
}

void CommunicatorImpl::begin(Channel& ch, const std::string& what, uint64_t seq, int peer) {
  if (progress_ != nullptr && seq != 0) progress_[intra_rank_].entered[ch.index].store(seq, std::memory_order_release);
  slot_begin(ch.slot, what, timeout_ns_, seq, peer);
}

void CommunicatorImpl::map_progress_board() {
  if (intra_size_ < 2) return;
  static_assert(sizeof(ProgressLine) == 64 && std::atomic<uint64_t>::is_always_lock_free);
  // Zero-filled memory is "no collective entered yet" on every line.
  if (progress_segment_.map(fg_.intra.get(), sizeof(ProgressLine) * static_cast<std::size_t>(intra_size_),
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
    return rank_name(r) + " on host " + host_names_[static_cast<std::size_t>(host_of_[static_cast<std::size_t>(r)])];
  };
  if (peer >= 0 && peer < size_) {
    return "waiting for " + name(peer) + ", which is stopped, cut off, failed, or not calling the matching operation";
  }
  if (seq == 0 || (progress_ == nullptr && intra_size_ > 1)) return "";
  std::string behind;
  int n_behind = 0;
  std::vector<int> elsewhere;
  int q = 0;  // intra rank of r: this host's ranks in rank order
  for (int r = 0; r < size_; ++r) {
    if (host_of_[static_cast<std::size_t>(r)] != inter_rank_) {
      elsewhere.push_back(r);
      continue;
    }
    const int intra = q++;
    if (r == rank_) continue;
    const uint64_t e = progress_[intra].entered[ch.index].load(std::memory_order_acquire);
    if (e >= seq) continue;
    behind += (n_behind++ == 0 ? "" : ", ") + name(r) +
              (e == 0 ? " (entered no collective of this communicator yet)"
                      : " (last entered #" + std::to_string(e) + ")");
  }
  if (n_behind > 0) {
    return "waiting for " + behind + (n_behind == 1 ? ", which has" : ", which have") +
           " not reached this operation (stopped, failed, or calling another one)";
  }
  if (elsewhere.empty()) return "";
  const std::string here = intra_size_ > 1 ? "every rank on this host has arrived; " : "";
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
  const std::string prefix = rank_prefix() + what + ": ";
  try {
    throw;
  } catch (const ShapeError& e) {
    throw ShapeError(prefix + e.what());
  } catch (const DtypeError& e) {
    throw DtypeError(prefix + e.what());
  } catch (const DeviceError& e) {
    throw DeviceError(prefix + e.what());
  } catch (const ValueError& e) {
    throw ValueError(prefix + e.what());
  } catch (const IndexError& e) {
    throw IndexError(prefix + e.what());
  } catch (const NotImplementedError& e) {
    throw NotImplementedError(prefix + e.what());
  } catch (const CommunicationError& e) {
    throw CommunicationError(prefix + e.what());
  } catch (const Error& e) {
    throw Error(prefix + e.what());
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    throw CommunicationError(prefix + e.what());
  }
}

void CommunicatorImpl::check_fingerprint(Channel& ch, const Fingerprint& fp, uint64_t seq) {
  constexpr int kFields = 7;
  const int64_t structure_hash = fp.structure ? static_cast<int64_t>(fnv1a(*fp.structure) >> 1) : -1;
  const int64_t mine[kFields] = {fp.op, fp.dtype, fp.count, fp.root, fp.aux, static_cast<int64_t>(seq), structure_hash};
  std::vector<int64_t> all(static_cast<std::size_t>(size_) * kFields);
  RENSA_MPI_CHECK(MPI_Allgather(mine, kFields, MPI_INT64_T, all.data(), kFields, MPI_INT64_T, ch.world.get()));
  auto at = [&](int r, int f) { return all[static_cast<std::size_t>(r) * kFields + static_cast<std::size_t>(f)]; };
  for (int f = 0; f < kFields; ++f) {
    // The op and sequence number must agree exactly; other fields may be -1 ("any") on some ranks.
    const bool exact = f == 0 || f == 5 || f == 6;
    int ref = -1;
    for (int r = 0; r < size_; ++r) {
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
        for (int q = 0; q < size_; ++q) same_op = same_op && at(q, 0) == fp.op;
        // Every rank runs the same operation, so every rank can compare the structures in detail.
        if (same_op && fp.structure) {
          check_same_structure(ch.world.get(), size_, *fp.structure, fp.structure_op, fp.structure_entries);
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

// ---- collectives on Arrays ---------------------------------------------------------------------------

namespace {
void check_root(const char* op, int root, int size) {
  RENSA_CHECK(root >= 0 && root < size, ValueError, op, ": root ", root, " is not a rank of a communicator of size ",
              size);
}
void check_not_null(const char* op, const Array& x) {
  RENSA_CHECK(!x.is_null(), ValueError, op, ": null array");
}
}  // namespace

Array CommunicatorImpl::allreduce(const Array& x, ReduceOp op) {
  const Fingerprint fp{static_cast<int64_t>(OpCode::allreduce), x.is_null() ? -1 : static_cast<int64_t>(x.dtype()),
                       x.is_null() ? -1 : x.size(), -1, static_cast<int64_t>(op)};
  return run_op(fg_, OpCode::allreduce, x.is_null() ? 0 : x.nbytes(), fp, checking_, [&] {
    check_not_null("allreduce", x);
    RENSA_CHECK(op != ReduceOp::mean || is_floating(x.dtype()), DtypeError,
                "allreduce: mean needs a floating dtype, got ", dtype_name(x.dtype()), " (shape ", x.shape(), ")");
    const bool half = x.dtype() == Dtype::float16 || x.dtype() == Dtype::bfloat16;
    Array in = host_contiguous(x);
    if (op == ReduceOp::mean && half) {  // divide before the sum: half precision cannot overflow
      Array scaled = Array::empty(in.shape(), in.dtype(), in.device());
      pack(in, scaled.raw_data(), in.dtype(), 1.0 / size_);
      in = scaled;
    }
    Array out = Array::empty(x.shape(), x.dtype(), host_device(x.device()));
    const MPI_Datatype type = mpi_type(x.dtype());
    const MPI_Op mop = mpi_op(x.dtype(), op);
    const auto* src = static_cast<const char*>(in.raw_data());
    auto* dst = static_cast<char*>(out.raw_data());
    const int64_t n = x.size();
    if (n > 0 && !(inter_size_ == 1 && shm_allreduce(fg_, src, dst, n, x.dtype(), op))) {
      for (int64_t off = 0; off < n; off += kMaxCount) {
        const int count = static_cast<int>(std::min(kMaxCount, n - off));
        const std::size_t byte_off = static_cast<std::size_t>(off) * x.itemsize();
        RENSA_MPI_CHECK(MPI_Allreduce(src + byte_off, dst + byte_off, count, type, mop, fg_.world.get()));
      }
    }
    if (op == ReduceOp::mean && !half && n > 0) pack(out, out.raw_data(), out.dtype(), 1.0 / size_);
    return to_device(out, x.device());
  });
}

Array CommunicatorImpl::bcast(const Array& x, int root) {
  const bool is_root = rank_ == root;
  Fingerprint fp{static_cast<int64_t>(OpCode::bcast), -1, -1, root, -1};
  if (is_root && !x.is_null()) {
    fp.dtype = static_cast<int64_t>(x.dtype());
    fp.count = x.size();
  }
  return run_op(fg_, OpCode::bcast, is_root && !x.is_null() ? x.nbytes() : 0, fp, checking_, [&] {
    check_root("bcast", root, size_);
    int64_t h[kHeader];
    if (is_root) fill_header(h, x);
    RENSA_MPI_CHECK(MPI_Bcast(h, kHeader, MPI_INT64_T, root, fg_.world.get()));
    RENSA_CHECK(h[0] == kOk, ValueError, "bcast: the root (rank ", root, ") passed ", status_text(h[0]));
    const Device device = x.is_null() ? Device::cpu() : x.device();
    Array buf = is_root ? host_contiguous(x) : Array::empty(header_shape(h), header_dtype(h), host_device(device));
    bcast_raw(fg_.world.get(), buf.raw_data(), static_cast<int64_t>(buf.nbytes()), root);
    if (is_root && buf.shares_storage(x)) buf = x.copy();  // the result never aliases the input
    return to_device(buf, device);
  });
}

std::vector<Array> CommunicatorImpl::gather(const Array& x, int root) {
  const Fingerprint fp{static_cast<int64_t>(OpCode::gather), x.is_null() ? -1 : static_cast<int64_t>(x.dtype()), -1,
                       root, -1};
  return run_op(fg_, OpCode::gather, x.is_null() ? 0 : x.nbytes(), fp, checking_, [&] {
    check_root("gather", root, size_);
    std::vector<int64_t> headers;
    const std::vector<int64_t> bytes = exchange_headers(x, "gather", size_, fg_.world.get(), headers);
    const std::vector<int> displs = displacements(bytes, "gather");
    const Dtype dtype = x.dtype();
    const int64_t total_bytes = displs.back() + bytes.back();
    Array in = host_contiguous(x);
    const bool is_root = rank_ == root;
    Array all =
        is_root ? Array::empty({total_bytes / static_cast<int64_t>(itemsize(dtype))}, dtype, host_device(x.device()))
                : Array();
    RENSA_MPI_CHECK(MPI_Gatherv(in.raw_data(), static_cast<int>(in.nbytes()), MPI_BYTE,
                                is_root ? all.raw_data() : nullptr, to_ints(bytes).data(), displs.data(), MPI_BYTE,
                                root, fg_.world.get()));
    std::vector<Array> out;
    if (!is_root) return out;
    const int64_t isz = static_cast<int64_t>(itemsize(dtype));
    for (int r = 0; r < size_; ++r) {
      const int64_t* h = &headers[static_cast<std::size_t>(r) * kHeader];
      const int64_t begin = displs[r] / isz;
      const int64_t end = begin + bytes[static_cast<std::size_t>(r)] / isz;
      out.push_back(to_device(all.slice(0, begin, end).reshape(header_shape(h)), x.device()));
    }
    return out;
  });
}

std::vector<Array> CommunicatorImpl::allgather(const Array& x) {
  const Fingerprint fp{static_cast<int64_t>(OpCode::allgather), x.is_null() ? -1 : static_cast<int64_t>(x.dtype()), -1,
                       -1, -1};
  return run_op(fg_, OpCode::allgather, x.is_null() ? 0 : x.nbytes(), fp, checking_, [&] {
    std::vector<int64_t> headers;
    const std::vector<int64_t> bytes = exchange_headers(x, "allgather", size_, fg_.world.get(), headers);
    const std::vector<int> displs = displacements(bytes, "allgather");
    const Dtype dtype = x.dtype();
    const int64_t isz = static_cast<int64_t>(itemsize(dtype));
    const int64_t total_bytes = displs.back() + bytes.back();
    Array in = host_contiguous(x);
    Array all = Array::empty({total_bytes / isz}, dtype, host_device(x.device()));
    RENSA_MPI_CHECK(MPI_Allgatherv(in.raw_data(), static_cast<int>(in.nbytes()), MPI_BYTE, all.raw_data(),
                                   to_ints(bytes).data(), displs.data(), MPI_BYTE, fg_.world.get()));
    std::vector<Array> out;
    for (int r = 0; r < size_; ++r) {
      const int64_t* h = &headers[static_cast<std::size_t>(r) * kHeader];
      const int64_t begin = displs[r] / isz;
      const int64_t end = begin + bytes[static_cast<std::size_t>(r)] / isz;
      out.push_back(to_device(all.slice(0, begin, end).reshape(header_shape(h)), x.device()));
    }
    return out;
  });
}

Array CommunicatorImpl::scatter(const std::vector<Array>& xs, int root) {
  const bool is_root = rank_ == root;
  const Fingerprint fp{static_cast<int64_t>(OpCode::scatter), -1, -1, root,
                       is_root ? static_cast<int64_t>(xs.size()) : -1};
  std::size_t nbytes = 0;
  if (is_root) {
    for (const Array& a : xs) nbytes += a.is_null() ? 0 : a.nbytes();
  }
  return run_op(fg_, OpCode::scatter, nbytes, fp, checking_, [&] {
    check_root("scatter", root, size_);
    // status, then one header per rank
    std::vector<int64_t> headers(1 + static_cast<std::size_t>(size_) * kHeader, 0);
    if (is_root) {
      if (xs.size() != static_cast<std::size_t>(size_)) {
        headers[0] = kWrongCount;
        headers[1] = static_cast<int64_t>(xs.size());
      } else {
        for (int r = 0; r < size_; ++r) {
          int64_t* h = &headers[1 + static_cast<std::size_t>(r) * kHeader];
          fill_header(h, xs[static_cast<std::size_t>(r)]);
          if (h[0] != kOk && headers[0] == kOk) {
            headers[0] = h[0];
            headers[1] = r;
          }
        }
      }
    }
    RENSA_MPI_CHECK(MPI_Bcast(headers.data(), static_cast<int>(headers.size()), MPI_INT64_T, root, fg_.world.get()));
    RENSA_CHECK(headers[0] != kWrongCount, ValueError, "scatter: the root (rank ", root, ") passed ", headers[1],
                " arrays for ", size_, " ranks");
    RENSA_CHECK(headers[0] == kOk, ValueError, "scatter: the root (rank ", root, ") passed ", status_text(headers[0]),
                " for rank ", headers[1]);
    std::vector<int64_t> bytes(static_cast<std::size_t>(size_));
    for (int r = 0; r < size_; ++r) bytes[static_cast<std::size_t>(r)] = header_bytes(&headers[1 + r * kHeader]);
    const std::vector<int> displs = displacements(bytes, "scatter");
    Array send;
    if (is_root) {
      send = Array::empty({displs.back() + bytes.back()}, Dtype::uint8);
      for (int r = 0; r < size_; ++r) {
        Array part = host_contiguous(xs[static_cast<std::size_t>(r)]);
        if (part.nbytes() > 0) {
          std::memcpy(static_cast<char*>(send.raw_data()) + displs[r], part.raw_data(), part.nbytes());
        }
      }
    }
    const int64_t* h = &headers[1 + static_cast<std::size_t>(rank_) * kHeader];
    const Device device = is_root ? xs[static_cast<std::size_t>(rank_)].device() : Device::cpu();
    Array out = Array::empty(header_shape(h), header_dtype(h), host_device(device));
    RENSA_MPI_CHECK(MPI_Scatterv(is_root ? send.raw_data() : nullptr, to_ints(bytes).data(), displs.data(), MPI_BYTE,
                                 out.raw_data(), static_cast<int>(out.nbytes()), MPI_BYTE, root, fg_.world.get()));
    return to_device(out, device);
  });
}

std::vector<Array> CommunicatorImpl::alltoall(const std::vector<Array>& xs) {
  const Fingerprint fp{static_cast<int64_t>(OpCode::alltoall), -1, -1, -1, static_cast<int64_t>(xs.size())};
  std::size_t nbytes = 0;
  for (const Array& a : xs) nbytes += a.is_null() ? 0 : a.nbytes();
  return run_op(fg_, OpCode::alltoall, nbytes, fp, checking_, [&] {
    // 1. every rank's own status, so a bad argument anywhere fails everywhere
    int64_t status[2] = {kOk, 0};
    if (xs.size() != static_cast<std::size_t>(size_)) {
      status[0] = kWrongCount;
      status[1] = static_cast<int64_t>(xs.size());
    } else {
      for (std::size_t j = 0; j < xs.size(); ++j) {
        if (xs[j].is_null() || xs[j].ndim() > kMaxDims) {
          status[0] = xs[j].is_null() ? kNull : kTooManyDims;
          status[1] = static_cast<int64_t>(j);
          break;
        }
      }
    }
    std::vector<int64_t> statuses(static_cast<std::size_t>(size_) * 2);
    RENSA_MPI_CHECK(MPI_Allgather(status, 2, MPI_INT64_T, statuses.data(), 2, MPI_INT64_T, fg_.world.get()));
    for (int r = 0; r < size_; ++r) {
      const int64_t s = statuses[static_cast<std::size_t>(r) * 2], v = statuses[static_cast<std::size_t>(r) * 2 + 1];
      RENSA_CHECK(s != kWrongCount, ValueError, "alltoall: rank ", r, " passed ", v, " arrays for ", size_, " ranks");
      RENSA_CHECK(s == kOk, ValueError, "alltoall: rank ", r, " passed ", status_text(s), " for rank ", v);
    }
    // 2. headers
    std::vector<int64_t> send_h(static_cast<std::size_t>(size_) * kHeader), recv_h(send_h.size());
    for (int j = 0; j < size_; ++j) fill_header(&send_h[static_cast<std::size_t>(j) * kHeader], xs[j]);
    RENSA_MPI_CHECK(
        MPI_Alltoall(send_h.data(), kHeader, MPI_INT64_T, recv_h.data(), kHeader, MPI_INT64_T, fg_.world.get()));
    std::vector<int64_t> send_bytes(static_cast<std::size_t>(size_)), recv_bytes(send_bytes.size());
    int64_t send_total = 0, recv_total = 0;
    for (int j = 0; j < size_; ++j) {
      send_bytes[static_cast<std::size_t>(j)] = static_cast<int64_t>(xs[static_cast<std::size_t>(j)].nbytes());
      recv_bytes[static_cast<std::size_t>(j)] = header_bytes(&recv_h[static_cast<std::size_t>(j) * kHeader]);
      send_total += send_bytes[static_cast<std::size_t>(j)];
      recv_total += recv_bytes[static_cast<std::size_t>(j)];
    }
    // 3. one rank's totals too large for MPI fail every rank
    int64_t too_large = std::max(send_total, recv_total) > INT_MAX ? 1 : 0, any_too_large = 0;
    RENSA_MPI_CHECK(MPI_Allreduce(&too_large, &any_too_large, 1, MPI_INT64_T, MPI_MAX, fg_.world.get()));
    RENSA_CHECK(!any_too_large, ValueError, "alltoall: a rank sends or receives more than ", INT_MAX,
                " bytes, more than one MPI call moves");
    const std::vector<int> sdispls = displacements(send_bytes, "alltoall");
    const std::vector<int> rdispls = displacements(recv_bytes, "alltoall");
    std::vector<char> send(static_cast<std::size_t>(send_total)), recv(static_cast<std::size_t>(recv_total));
    for (int j = 0; j < size_; ++j) {
      Array part = host_contiguous(xs[static_cast<std::size_t>(j)]);
      if (part.nbytes() > 0) std::memcpy(send.data() + sdispls[j], part.raw_data(), part.nbytes());
    }
    RENSA_MPI_CHECK(MPI_Alltoallv(send.data(), to_ints(send_bytes).data(), sdispls.data(), MPI_BYTE, recv.data(),
                                  to_ints(recv_bytes).data(), rdispls.data(), MPI_BYTE, fg_.world.get()));
    std::vector<Array> out;
    const Device device = xs.empty() ? Device::cpu() : xs[0].device();
    for (int j = 0; j < size_; ++j) {
      const int64_t* h = &recv_h[static_cast<std::size_t>(j) * kHeader];
      Array a = Array::empty(header_shape(h), header_dtype(h), host_device(device));
      if (a.nbytes() > 0) std::memcpy(a.raw_data(), recv.data() + rdispls[j], a.nbytes());
      out.push_back(to_device(a, device));
    }
    return out;
  });
}

void CommunicatorImpl::send(const Array& x, int dest, int tag, const std::string& context) {
  check_not_null("send", x);
  RENSA_CHECK(dest >= 0 && dest < size_ && dest != rank_, ValueError, "send: destination ", dest,
              " must be another rank of a communicator of size ", size_, " (this is rank ", rank_, ")");
  int* tag_ub = nullptr;
  int flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);  // predefined on the world communicator
  const int max_tag = flag && tag_ub ? *tag_ub : 32767;
  RENSA_CHECK(tag >= 0 && tag <= max_tag, ValueError, "send: tag ", tag, " is outside 0..", max_tag);
  RENSA_CHECK(x.ndim() <= kMaxDims, ValueError, "send: arrays of more than ", kMaxDims, " dimensions cannot be sent");
  const std::string what = context + "send #" + std::to_string(++p2p_seq_) + " to rank " + std::to_string(dest) + " (" + name_ +
                           ", tag " + std::to_string(tag) + ", " + format_bytes(x.nbytes()) + ")";
  run_p2p(what, dest, [&] {
    int64_t h[kHeader];
    fill_header(h, x);
    RENSA_MPI_CHECK(MPI_Send(h, kHeader, MPI_INT64_T, dest, tag, fg_.world.get()));
    Array in = host_contiguous(x);
    const auto* p = static_cast<const char*>(in.raw_data());
    const int64_t bytes = static_cast<int64_t>(in.nbytes());
    for (int64_t off = 0; off < bytes; off += kMaxCount) {
      const int n = static_cast<int>(std::min(kMaxCount, bytes - off));
      RENSA_MPI_CHECK(MPI_Send(p + off, n, MPI_BYTE, dest, tag, fg_.world.get()));
    }
  });
}

Array CommunicatorImpl::recv(int source, int tag, const std::string& context) {
  RENSA_CHECK(source >= 0 && source < size_ && source != rank_, ValueError, "recv: source ", source,
              " must be another rank of a communicator of size ", size_, " (this is rank ", rank_, ")");
  RENSA_CHECK(tag >= 0, ValueError, "recv: tag ", tag, " is negative");
  const std::string what = context + "recv #" + std::to_string(++p2p_seq_) + " from rank " + std::to_string(source) + " (" +
                           name_ + ", tag " + std::to_string(tag) + ")";
  return run_p2p(what, source, [&] {
    int64_t h[kHeader];
    RENSA_MPI_CHECK(MPI_Recv(h, kHeader, MPI_INT64_T, source, tag, fg_.world.get(), MPI_STATUS_IGNORE));
    RENSA_CHECK(h[0] == kOk && h[1] >= 0 && h[1] < kNumDtypes && h[2] >= 0 && h[2] <= kMaxDims, CommunicationError,
                "recv: malformed array header from rank ", source);
    Array out = Array::empty(header_shape(h), header_dtype(h));
    auto* p = static_cast<char*>(out.raw_data());
    const int64_t bytes = static_cast<int64_t>(out.nbytes());
    for (int64_t off = 0; off < bytes; off += kMaxCount) {
      const int n = static_cast<int>(std::min(kMaxCount, bytes - off));
      RENSA_MPI_CHECK(MPI_Recv(p + off, n, MPI_BYTE, source, tag, fg_.world.get(), MPI_STATUS_IGNORE));
    }
    return out;
  });
}

void CommunicatorImpl::barrier() {
  const Fingerprint fp{static_cast<int64_t>(OpCode::barrier), -1, -1, -1, -1};
  run_op(fg_, OpCode::barrier, 0, fp, checking_, [&] { RENSA_MPI_CHECK(MPI_Barrier(fg_.world.get())); });
}

std::string CommunicatorImpl::unreceived_at_exit() const {
  return unreceived_message(fg_.world.get(), rank_, name_);
}

// ---- collectives on bytes ----------------------------------------------------------------------------

std::string CommunicatorImpl::bcast_bytes(const std::string& bytes, int root) {
  const bool is_root = rank_ == root;
  const Fingerprint fp{static_cast<int64_t>(OpCode::bcast_bytes), -1, is_root ? static_cast<int64_t>(bytes.size()) : -1,
                       root, -1};
  return run_op(fg_, OpCode::bcast_bytes, is_root ? bytes.size() : 0, fp, checking_, [&] {
    check_root("bcast_bytes", root, size_);
    int64_t len = static_cast<int64_t>(bytes.size());
    RENSA_MPI_CHECK(MPI_Bcast(&len, 1, MPI_INT64_T, root, fg_.world.get()));
    std::string out = is_root ? bytes : std::string(static_cast<std::size_t>(len), '\0');
    bcast_raw(fg_.world.get(), out.data(), len, root);
    return out;
  });
}

std::vector<std::string> CommunicatorImpl::gather_bytes(const std::string& bytes, int root) {
  const Fingerprint fp{static_cast<int64_t>(OpCode::gather_bytes), -1, -1, root, -1};
  return run_op(fg_, OpCode::gather_bytes, bytes.size(), fp, checking_, [&] {
    check_root("gather_bytes", root, size_);
    const int64_t mine = static_cast<int64_t>(bytes.size());
    std::vector<int64_t> lens(static_cast<std::size_t>(size_));
    RENSA_MPI_CHECK(MPI_Allgather(&mine, 1, MPI_INT64_T, lens.data(), 1, MPI_INT64_T, fg_.world.get()));
    const std::vector<int> displs = displacements(lens, "gather_bytes");
    const bool is_root = rank_ == root;
    std::string all(is_root ? static_cast<std::size_t>(displs.back() + lens.back()) : 0, '\0');
    RENSA_MPI_CHECK(MPI_Gatherv(bytes.data(), static_cast<int>(mine), MPI_BYTE, is_root ? all.data() : nullptr,
                                to_ints(lens).data(), displs.data(), MPI_BYTE, root, fg_.world.get()));
    std::vector<std::string> out;
    if (is_root) {
      for (int r = 0; r < size_; ++r) out.push_back(all.substr(displs[r], lens[r]));
    }
    return out;
  });
}

std::vector<std::string> CommunicatorImpl::allgather_bytes(const std::string& bytes) {
  const Fingerprint fp{static_cast<int64_t>(OpCode::allgather_bytes), -1, -1, -1, -1};
  return run_op(fg_, OpCode::allgather_bytes, bytes.size(), fp, checking_,
                [&] { return allgather_strings(fg_.world.get(), size_, bytes, "allgather_bytes"); });
}

std::string CommunicatorImpl::scatter_bytes(const std::vector<std::string>& parts, int root) {
  const bool is_root = rank_ == root;
  const Fingerprint fp{static_cast<int64_t>(OpCode::scatter_bytes), -1, -1, root,
                       is_root ? static_cast<int64_t>(parts.size()) : -1};
  std::size_t nbytes = 0;
  if (is_root) {
    for (const auto& p : parts) nbytes += p.size();
  }
  return run_op(fg_, OpCode::scatter_bytes, nbytes, fp, checking_, [&] {
    check_root("scatter_bytes", root, size_);
    std::vector<int64_t> lens(1 + static_cast<std::size_t>(size_), 0);  // count, then lengths
    if (is_root) {
      lens[0] = static_cast<int64_t>(parts.size());
      if (parts.size() == static_cast<std::size_t>(size_)) {
        for (int r = 0; r < size_; ++r) lens[1 + static_cast<std::size_t>(r)] = static_cast<int64_t>(parts[r].size());
      }
    }
    RENSA_MPI_CHECK(MPI_Bcast(lens.data(), static_cast<int>(lens.size()), MPI_INT64_T, root, fg_.world.get()));
    RENSA_CHECK(lens[0] == size_, ValueError, "scatter_bytes: the root (rank ", root, ") passed ", lens[0],
                " parts for ", size_, " ranks");
    const std::vector<int64_t> counts(lens.begin() + 1, lens.end());
    const std::vector<int> displs = displacements(counts, "scatter_bytes");
    std::string send;
    if (is_root) {
      for (const auto& p : parts) send += p;
    }
    std::string out(static_cast<std::size_t>(counts[static_cast<std::size_t>(rank_)]), '\0');
    RENSA_MPI_CHECK(MPI_Scatterv(is_root ? send.data() : nullptr, to_ints(counts).data(), displs.data(), MPI_BYTE,
                                 out.data(), static_cast<int>(out.size()), MPI_BYTE, root, fg_.world.get()));
    return out;
  });
}

// ---- training ----------------------------------------------------------------------------------------

void CommunicatorImpl::bcast_data(Link& link) {
  const auto params = link.namedparams(true);
  const auto persistents = link.namedpersistents();
  // The structure every rank must share, one line per entry.
  std::string desc;
  std::vector<Array> arrays;
  for (const auto& [path, p] : params) {
    const bool init = !p.array().is_null();
    desc += "parameter " + path + " " + (init ? describe_array(p.array()) : std::string("(uninitialized)")) + "\n";
    if (init) arrays.push_back(p.array());
  }
  for (const auto& [path, a] : persistents) {
    const bool init = a != nullptr && !a->is_null();
    desc += "persistent " + path + " " + (init ? describe_array(*a) : std::string("(null)")) + "\n";
    if (init) arrays.push_back(*a);
  }
  std::size_t nbytes = 0;
  for (const Array& a : arrays) nbytes += a.nbytes();
  const Fingerprint fp{static_cast<int64_t>(OpCode::bcast_data),
                       -1,
                       static_cast<int64_t>(params.size() + persistents.size()),
                       0,
                       -1,
                       &desc,
                       "bcast_data",
                       "parameters and persistent values"};
  const bool check = checking_;
  run_op(fg_, OpCode::bcast_data, nbytes, fp, check, [&] {
    // The structure check is always on: a mismatch here would otherwise corrupt parameters silently.
    if (!check) check_same_structure(fg_.world.get(), size_, desc, "bcast_data", "parameters and persistent values");
    // One buffer per dtype, in order of first appearance.
    std::vector<Dtype> dtypes;
    for (const Array& a : arrays) {
      if (std::find(dtypes.begin(), dtypes.end(), a.dtype()) == dtypes.end()) dtypes.push_back(a.dtype());
    }
    for (Dtype dtype : dtypes) {
      int64_t total = 0;
      for (const Array& a : arrays) total += a.dtype() == dtype ? a.size() : 0;
      Array buf = Array::empty({total}, dtype);
      const std::size_t isz = itemsize(dtype);
      auto* base = static_cast<char*>(buf.raw_data());
      if (rank_ == 0) {
        int64_t off = 0;
        for (const Array& a : arrays) {
          if (a.dtype() != dtype) continue;
          Array c = host_contiguous(a);
          if (c.nbytes() > 0) std::memcpy(base + off * isz, c.raw_data(), c.nbytes());
          off += a.size();
        }
      }
      bcast_raw(fg_.world.get(), base, total * static_cast<int64_t>(isz), 0);
      if (rank_ != 0) {
        int64_t off = 0;
        for (const Array& a : arrays) {
          if (a.dtype() != dtype) continue;
          a.assign(buf.slice(0, off, off + a.size()).reshape(a.shape()));
          off += a.size();
        }
      }
    }
  });
}

void CommunicatorImpl::multi_node_mean_grad(Link& link, bool zero_fill) {
  const auto params = link.namedparams(false);
  std::vector<Array> grads;       // what is averaged (host, contiguous)
  std::vector<Array> write_back;  // the gradient each staged copy goes back to (null: averaged in place)
  std::string desc;
  int64_t count = 0;
  for (const auto& [path, p] : params) {
    Variable g = p.grad();
    if (g.is_null()) {
      if (!zero_fill) continue;
      p.set_grad(Variable(Array::zeros(p.shape(), p.dtype(), p.device())));
      g = p.grad();
    }
    const Array& a = g.array();
    RENSA_CHECK(is_floating(a.dtype()), DtypeError, "multi_node_mean_grad: gradient of ", path, " has dtype ",
                dtype_name(a.dtype()), "; only floating gradients can be averaged");
    desc += "gradient " + path + " " + describe_array(a) + "\n";
    count += a.size();
    if (a.device().is_host() && a.is_contiguous()) {
      grads.push_back(a);
      write_back.emplace_back();
    } else {
      grads.push_back(host_contiguous(a).copy());
      write_back.push_back(a);
    }
  }
  std::size_t nbytes = 0;
  for (const Array& a : grads) nbytes += static_cast<std::size_t>(a.size()) * itemsize(wire_dtype(a.dtype()));
  const Fingerprint fp{static_cast<int64_t>(OpCode::mean_grad),
                       static_cast<int64_t>(options_.allreduce_grad_dtype),
                       count,
                       -1,
                       static_cast<int64_t>(grads.size()),
                       &desc,
                       "multi_node_mean_grad",
                       "gradients"};
  run_op(fg_, OpCode::mean_grad, nbytes, fp, checking_, [&] { mean_grads(fg_, grads); });
  for (std::size_t i = 0; i < grads.size(); ++i) {
    if (!write_back[i].is_null()) write_back[i].assign(grads[i]);
  }
  after_first_step();
}

void CommunicatorImpl::mean_grads(Channel& ch, const std::vector<Array>& grads) {
  const double scale = averages() ? 1.0 / size_ : 1.0;
  std::vector<Dtype> wires;
  for (const Array& g : grads) {
    const Dtype w = wire_dtype(g.dtype());
    if (std::find(wires.begin(), wires.end(), w) == wires.end()) wires.push_back(w);
  }
  for (Dtype wire : wires) {
    int64_t total = 0;
    for (const Array& g : grads) total += wire_dtype(g.dtype()) == wire ? g.size() : 0;
    if (total == 0) continue;
    const std::size_t isz = itemsize(wire);
    const int64_t need = total * static_cast<int64_t>(isz);
    if (ch.pack.is_null() || ch.pack.size() < need) ch.pack = Array::empty({need}, Dtype::uint8);
    auto* base = static_cast<char*>(ch.pack.raw_data());
    int64_t off = 0;
    for (const Array& g : grads) {
      if (wire_dtype(g.dtype()) != wire) continue;
      pack(g, base + off * isz, wire, scale);
      off += g.size();
    }
    for (int64_t o = 0; o < total; o += kMaxCount)
      reduce_wire(ch, base + o * isz, std::min(kMaxCount, total - o), wire);
    off = 0;
    for (const Array& g : grads) {
      if (wire_dtype(g.dtype()) != wire) continue;
      unpack(base + off * isz, wire, g);
      off += g.size();
    }
  }
}

bool CommunicatorImpl::shm_allreduce(Channel& ch, const void* in, void* out, int64_t n, Dtype dtype, ReduceOp op) {
  if (!options_.shared_memory || intra_size_ == 1) return false;
  if (ch.shm_state == 0) {  // the first reduction on this channel: the same point on every rank of the host
    auto shm = std::make_unique<ShmAllreduce>();
    ch.shm_state = shm->init(ch.intra.get()) ? 1 : -1;
    if (ch.shm_state == 1) ch.shm = std::move(shm);
  }
  if (ch.shm_state < 0) return false;
  ch.shm->allreduce(in, out, n, dtype, op);
  return true;
}

// ---- requests ----------------------------------------------------------------------------------------

Communicator::Request CommunicatorImpl::start_mean_grad(std::vector<Array> grads) {
  int64_t count = 0;
  std::size_t nbytes = 0;
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const Array& g = grads[i];
    RENSA_CHECK(!g.is_null(), ValueError, "start_mean_grad: array ", i, " is null");
    RENSA_CHECK(g.device().is_host() && g.is_contiguous(), ValueError, "start_mean_grad: array ", i,
                " must be a contiguous host array (shape ", g.shape(), ", device ", to_string(g.device()), ")");
    RENSA_CHECK(is_floating(g.dtype()), DtypeError, "start_mean_grad: array ", i, " has dtype ", dtype_name(g.dtype()),
                "; only floating gradients can be averaged");
    count += g.size();
    nbytes += static_cast<std::size_t>(g.size()) * itemsize(wire_dtype(g.dtype()));
  }
  (void)count;
  (void)nbytes;
  auto state = std::make_shared<Communicator::Request::State>();
  state->impl = weak_from_this();
  state->grads = std::move(grads);
  state->check = checking_;
  if (!threaded_) {
    run_request(*state);
    return Communicator::Request(state);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    RENSA_CHECK(!stop_, ValueError, "start_mean_grad: the communicator is shut down");
    queue_.push_back(state);
  }
  cv_.notify_one();
  return Communicator::Request(state);
}

void CommunicatorImpl::worker_loop() {
  for (;;) {
    std::shared_ptr<Communicator::Request::State> s;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and every request is done
      s = std::move(queue_.front());
      queue_.pop_front();
    }
    run_request(*s);
  }
}

void CommunicatorImpl::run_request(Communicator::Request::State& s) {
  Channel& ch = threaded_ ? bg_ : fg_;
  int64_t count = 0;
  std::size_t nbytes = 0;
  for (const Array& g : s.grads) {
    count += g.size();
    nbytes += static_cast<std::size_t>(g.size()) * itemsize(wire_dtype(g.dtype()));
  }
  const Fingerprint fp{static_cast<int64_t>(OpCode::mean_grad), static_cast<int64_t>(options_.allreduce_grad_dtype),
                       count, -1, static_cast<int64_t>(s.grads.size())};
  try {
    run_op(ch, OpCode::mean_grad, nbytes, fp, s.check, [&] { mean_grads(ch, s.grads); });
  } catch (...) {
    s.error = std::current_exception();
  }
  // The arrays are released here, before completion is signalled: once wait() returns, this thread
  // must hold nothing of the caller's (a communicator in a static may be torn down at exit while the
  // thread still holds the request).
  std::vector<Array>().swap(s.grads);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.done = true;
  }
  s.cv.notify_all();
}

}  // namespace detail

// ---- Communicator -------------------------------------------------------------------------------------

namespace {
detail::CommunicatorImpl& get(const std::shared_ptr<detail::CommunicatorImpl>& impl, const char* op) {
  RENSA_CHECK(impl != nullptr, ValueError, "Communicator::", op, ": null communicator (default-constructed)");
  return *impl;
}
}  // namespace

Communicator::Communicator(std::shared_ptr<detail::CommunicatorImpl> impl) : impl_(std::move(impl)) {}

const std::string& Communicator::name() const {
  return get(impl_, "name").name();
}
int Communicator::rank() const {
  return get(impl_, "rank").rank();
}
int Communicator::size() const {
  return get(impl_, "size").size();
}
int Communicator::intra_rank() const {
  return get(impl_, "intra_rank").intra_rank();
}
int Communicator::intra_size() const {
  return get(impl_, "intra_size").intra_size();
}
int Communicator::inter_rank() const {
  return get(impl_, "inter_rank").inter_rank();
}
int Communicator::inter_size() const {
  return get(impl_, "inter_size").inter_size();
}
const std::string& Communicator::host() const {
  return get(impl_, "host").host();
}
const CommunicatorOptions& Communicator::options() const {
  return get(impl_, "options").options();
}
void Communicator::set_check_collectives(bool on) {
  get(impl_, "set_check_collectives").set_checking(on);
}
bool Communicator::check_collectives() const {
  return get(impl_, "check_collectives").checking();
}

Array Communicator::allreduce(const Array& x, ReduceOp op) {
  return get(impl_, "allreduce").allreduce(x, op);
}
Array Communicator::bcast(const Array& x, int root) {
  return get(impl_, "bcast").bcast(x, root);
}
std::vector<Array> Communicator::gather(const Array& x, int root) {
  return get(impl_, "gather").gather(x, root);
}
std::vector<Array> Communicator::allgather(const Array& x) {
  return get(impl_, "allgather").allgather(x);
}
Array Communicator::scatter(const std::vector<Array>& xs, int root) {
  return get(impl_, "scatter").scatter(xs, root);
}
std::vector<Array> Communicator::alltoall(const std::vector<Array>& xs) {
  return get(impl_, "alltoall").alltoall(xs);
}
void Communicator::send(const Array& x, int dest, int tag) {
  get(impl_, "send").send(x, dest, tag);
}
Array Communicator::recv(int source, int tag) {
  return get(impl_, "recv").recv(source, tag);
}
void Communicator::barrier() {
  get(impl_, "barrier").barrier();
}

std::string Communicator::bcast_bytes(const std::string& bytes, int root) {
  return get(impl_, "bcast_bytes").bcast_bytes(bytes, root);
}
std::vector<std::string> Communicator::gather_bytes(const std::string& bytes, int root) {
  return get(impl_, "gather_bytes").gather_bytes(bytes, root);
}
std::vector<std::string> Communicator::allgather_bytes(const std::string& bytes) {
  return get(impl_, "allgather_bytes").allgather_bytes(bytes);
}
std::string Communicator::scatter_bytes(const std::vector<std::string>& parts, int root) {
  return get(impl_, "scatter_bytes").scatter_bytes(parts, root);
}

void Communicator::bcast_data(Link& link) {
  get(impl_, "bcast_data").bcast_data(link);
}
void Communicator::multi_node_mean_grad(Link& link, bool zero_fill) {
  get(impl_, "multi_node_mean_grad").multi_node_mean_grad(link, zero_fill);
}
Communicator::Request Communicator::start_mean_grad(std::vector<Array> grads) {
  return get(impl_, "start_mean_grad").start_mean_grad(std::move(grads));
}
detail::CommunicatorImpl& Communicator::impl() const {
  return get(impl_, "impl");
}

void Communicator::Request::wait() {
  RENSA_CHECK(state_ != nullptr, ValueError, "Communicator::Request::wait: invalid (default-constructed) request");
  {
    std::unique_lock<std::mutex> lock(state_->mutex);
    state_->cv.wait(lock, [&] { return state_->done; });
  }
  if (auto impl = state_->impl.lock()) impl->request_waited();
  if (state_->error) std::rethrow_exception(state_->error);
}

bool Communicator::Request::ready() const {
  if (!state_) return false;
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->done;
}

const std::vector<std::string>& communicator_names() {
  static const std::vector<std::string> names = {"naive",           "flat",        "hierarchical",
                                                 "two_dimensional", "single_node", "dummy"};
  return names;
}

namespace {
void check_name(std::string_view name) {
  const auto& names = communicator_names();
  if (std::find(names.begin(), names.end(), name) != names.end()) return;
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  RENSA_THROW(ValueError, "create_communicator: unknown communicator '", name, "'; valid names: ", list);
}

void ensure_mpi(int* argc, char*** argv) {
  int initialized = 0;
  RENSA_MPI_CHECK(MPI_Initialized(&initialized));
  if (initialized) return;
  int provided = MPI_THREAD_SINGLE;
  RENSA_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
  RENSA_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &detail::registry().exit_world));
  std::atexit(detail::finalize_at_exit);
}
}  // namespace

Communicator create_communicator(std::string_view name, const CommunicatorOptions& options) {
  check_name(name);
  ensure_mpi(nullptr, nullptr);
  return Communicator(detail::make_communicator_impl(name, MPI_COMM_WORLD, options));
}

Communicator create_communicator(std::string_view name, int& argc, char**& argv, const CommunicatorOptions& options) {
  check_name(name);
  ensure_mpi(&argc, &argv);
  return Communicator(detail::make_communicator_impl(name, MPI_COMM_WORLD, options));
}

Communicator create_communicator(std::string_view name, MPI_Comm comm, const CommunicatorOptions& options) {
  check_name(name);
  int initialized = 0;
  MPI_Initialized(&initialized);
  RENSA_CHECK(initialized, ValueError,
              "create_communicator: MPI is not initialized (call MPI_Init first, or use the "
              "overload without an MPI_Comm)");
  return Communicator(detail::make_communicator_impl(name, comm, options));
}

MPI_Comm mpi_comm(const Communicator& comm) {
  return comm.impl().world();
}

}  // namespace rensa::mn
