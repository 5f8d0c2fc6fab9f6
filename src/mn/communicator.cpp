// Communicator: MPI set-up (the exit-time finalizer, the timeout), the construction of
// CommunicatorImpl and its host grouping, and the public Communicator handle with create_communicator.
// The rest of CommunicatorImpl: operation_scopes.cpp, array_collectives.cpp, byte_collectives.cpp,
// training_collectives.cpp and mean_grad_requests.cpp (the variants' algorithms are in variants/, their
// table in variant.cpp).
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <map>
#include <vector>

#include "rensa/core/timeline.h"
#include "rensa/mn/mpi.h"
#include "src/mn/communicator_impl.h"
#include "src/mn/mpi_util.h"

namespace rensa::mn {
namespace detail {
namespace {

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
// so after the barrier a pending message is one that no recv will ever take. It is received here, so
// that MPI_Finalize meets no unmatched message.
std::string unreceived_message(MPI_Comm world, int rank, const std::string& name) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    int found = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, world, &found, &status) != MPI_SUCCESS) return "";
    if (found) {
      int bytes = 0;
      MPI_Get_count(&status, MPI_BYTE, &bytes);
      std::vector<char> sink(static_cast<size_t>(std::max(bytes, 1)));
      MPI_Recv(sink.data(), bytes, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG, world, MPI_STATUS_IGNORE);
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
  bool failed = false;
  if (registry().exit_world != MPI_COMM_NULL && MPI_Barrier(registry().exit_world) == MPI_SUCCESS) {
    // A send whose recv never came would otherwise vanish without a word.
    std::string lost;
    {
      std::lock_guard<std::mutex> lock(registry().mutex);
      for (CommunicatorImpl* impl : registry().impls) {
        if (lost.empty()) lost = impl->unreceived_at_exit();
      }
      for (const auto& r : registry().retired) {
        if (lost.empty()) lost = unreceived_message(r.world, r.rank, r.name);
      }
    }
    // Every rank learns of it and fails after a clean MPI_Finalize: an MPI_Abort from one rank while
    // the others are inside MPI_Finalize can leave mpiexec waiting forever.
    int here = lost.empty() ? 0 : 1, anywhere = 0;
    if (MPI_Allreduce(&here, &anywhere, 1, MPI_INT, MPI_MAX, registry().exit_world) == MPI_SUCCESS) {
      failed = anywhere != 0;
    }
    // MPI_Finalize does not free the communicators kept for these checks: freed here, after them
    // (every rank is past the barrier, so no message on them is still under way).
    {
      std::lock_guard<std::mutex> lock(registry().mutex);
      for (auto& r : registry().retired) MPI_Comm_free(&r.world);
      registry().retired.clear();
    }
    MPI_Comm_free(&registry().exit_world);
    if (!lost.empty()) {
      const std::string line = process_prefix() + "at exit: " + lost + "; the job fails\n";
      std::fflush(stdout);
      ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
      (void)ignored;
    }
  }
  MPI_Finalize();
  slot_end(*slot);
  if (failed) {
    std::fflush(nullptr);
    _exit(1);
  }
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
  // A positive value that rounds to 0 ms would mean "never": the opposite of what was asked.
  RENSA_CHECK(seconds == 0 || seconds >= 0.0005, ValueError, "create_communicator: RENSA_MN_TIMEOUT '", value,
              "' rounds to 0 ms, which means never; give 0 for that, or at least 0.0005");
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(seconds * 1000.0)));
}

}  // namespace

// ---- construction ----------------------------------------------------------------------------------

CommunicatorImpl::CommunicatorImpl(const VariantEntry& variant, MPI_Comm base, const CommunicatorOptions& options,
                                   std::string host)
    : variant_(variant), options_(options) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  RENSA_CHECK(initialized, ValueError, "create_communicator: MPI is not initialized");
  // First, so that an invalid option that no one catches still ends the job with one line per rank.
  hostname_ = host_name();
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
  // A sub-communicator's ranks keep the hosts they had in their parent (split.cpp).
  if (host.empty()) {
    int rank = 0;
    RENSA_MPI_CHECK(MPI_Comm_rank(fg_.world.get(), &rank));
    host = options_.ranks_per_host > 0 ? "host" + std::to_string(rank / options_.ranks_per_host) : hostname_;
  }
  topo_ = HostTopology::gather(fg_.world.get(), std::move(host));
  const int size = topo_.size;
  world_of_.assign(static_cast<std::size_t>(size), 0);
  RENSA_MPI_CHECK(MPI_Allgather(&world_rank, 1, MPI_INT, world_of_.data(), 1, MPI_INT, fg_.world.get()));
  int world_size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  world_numbering_ = world_size == size;
  for (int r = 0; r < size; ++r) world_numbering_ = world_numbering_ && world_of_[static_cast<std::size_t>(r)] == r;
  check_hosts(variant_, topo_);
  for (Channel* ch : {&fg_, &bg_}) topo_.split(ch->world.get(), ch->intra, ch->inter);

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
    if (progress_ != nullptr) ch->slot.heartbeat = &progress_[topo_.intra_rank].alive_ns;
    watch(&ch->slot);
  }
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    registry().impls.push_back(this);
  }
  requests_.start(threaded_, [this](Communicator::Request::State& s) { run_request(s); });
}

CommunicatorImpl::~CommunicatorImpl() {
  shutdown();
  int finalized = 1;
  MPI_Finalized(&finalized);
  if (!finalized && registry().exit_world != MPI_COMM_NULL) {
    std::lock_guard<std::mutex> lock(registry().mutex);
    registry().retired.push_back({fg_.world.release(), topo_.rank, name()});
  }
  unwatch(&fg_.slot);
  unwatch(&bg_.slot);
  std::lock_guard<std::mutex> lock(registry().mutex);
  auto& v = registry().impls;
  v.erase(std::remove(v.begin(), v.end(), this), v.end());
}

void CommunicatorImpl::shutdown() {
  requests_.shutdown();
}

std::string CommunicatorImpl::unreceived_at_exit() const {
  return unreceived_message(fg_.world.get(), topo_.rank, name());
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
    timeline::Span span("wait", timeline::Category::wait);
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

namespace {
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
  const detail::VariantEntry& variant = detail::find_variant(name);
  ensure_mpi(nullptr, nullptr);
  return Communicator(std::make_shared<detail::CommunicatorImpl>(variant, MPI_COMM_WORLD, options));
}

Communicator create_communicator(std::string_view name, int& argc, char**& argv, const CommunicatorOptions& options) {
  const detail::VariantEntry& variant = detail::find_variant(name);
  ensure_mpi(&argc, &argv);
  return Communicator(std::make_shared<detail::CommunicatorImpl>(variant, MPI_COMM_WORLD, options));
}

Communicator create_communicator(std::string_view name, MPI_Comm comm, const CommunicatorOptions& options) {
  const detail::VariantEntry& variant = detail::find_variant(name);
  int initialized = 0;
  MPI_Initialized(&initialized);
  RENSA_CHECK(initialized, ValueError,
              "create_communicator: MPI is not initialized (call MPI_Init first, or use the "
              "overload without an MPI_Comm)");
  return Communicator(std::make_shared<detail::CommunicatorImpl>(variant, comm, options));
}

MPI_Comm mpi_comm(const Communicator& comm) {
  return comm.impl().world();
}

}  // namespace rensa::mn
