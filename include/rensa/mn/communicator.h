#pragma once
/// \file
/// Communicators: ranks of an MPI job and the collectives data-parallel training needs (ChainerMN's
/// model). This header does not include <mpi.h>; rensa/mn/mpi.h adds the MPI_Comm overload.
///
/// Every collective must be called by every rank of the communicator in the same order, from one
/// thread at a time. Errors thrown by a collective name the rank, the host and the operation:
/// `rank 1 on host b: allreduce #12 (flat, 4.0 kB): ...`.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rensa/core/array.h"
#include "rensa/core/dtype.h"
#include "rensa/core/error.h"
#include "rensa/links/link.h"

namespace rensa::mn {

/// An MPI call failed, or the ranks disagree about a collective (the fingerprint check names both
/// sides), or a message was malformed.
class CommunicationError : public ErrorSubclass<CommunicationError> {
 public:
  using ErrorSubclass::ErrorSubclass;
};

/// Reduction of allreduce.
enum class ReduceOp { sum, mean, max, min };

/// Options of create_communicator.
struct CommunicatorOptions {
  /// Dtype gradients travel in (float32, float16, bfloat16 or float64). Gradients are divided by
  /// size() before the sum, so half precision cannot overflow. With the default float32, float64
  /// gradients travel as float64 (no silent loss of precision).
  Dtype allreduce_grad_dtype = Dtype::float32;
  /// A rank that waits in one collective (or send/recv) longer than this prints what it waited in,
  /// and which ranks it is still waiting for when it can tell, and aborts the whole job (zero:
  /// never). Unset: the environment variable RENSA_MN_TIMEOUT, in seconds (read once per process;
  /// "0" for never; anything else than a non-negative number is a ValueError), else 5 minutes.
  /// Communicator::options() shows the value in force.
  std::optional<std::chrono::milliseconds> timeout = std::nullopt;
  /// Compare a fingerprint of each collective (operation, dtype, count, root, sequence number)
  /// across ranks before running it, and throw CommunicationError naming both sides on a mismatch.
  /// 1: always; 0: never; -1: always in debug builds, otherwise until the end of the first training
  /// step (the first multi_node_mean_grad call or Request::wait). Costs one small allgather.
  int check_collectives = -1;
  /// 0: ranks are grouped into hosts by host name. N > 0: ranks 0..N-1 form host 0, the next N
  /// host 1, and so on, as if each block were a machine (exercises the hierarchical paths on one).
  int ranks_per_host = 0;
  /// Reduce among the ranks of one host through a segment of shared memory instead of MPI: allreduce
  /// and gradient averaging when every rank is on one host, and the within-host step of hierarchical
  /// and two_dimensional. Several times faster for large arrays, and bitwise the same result on every
  /// rank of the host. Falls back to MPI when the segment cannot be mapped.
  bool shared_memory = true;
};

namespace detail {
class CommunicatorImpl;
}

/// A handle (copies alias the same communicator) to a group of ranks. Every collective must be
/// called by every rank in the same order; all of them are blocking unless named start_*.
/// Arrays may live on any device (non-host arrays are staged through host memory); results are on
/// the device of the input (recv and scatter's non-root ranks: cpu).
class Communicator {
 public:
  /// A null handle (valid() is false); every method but valid() throws ValueError.
  Communicator() = default;
  /// Wraps an implementation (for create_communicator and split).
  explicit Communicator(std::shared_ptr<detail::CommunicatorImpl> impl);

  /// True unless default-constructed.
  bool valid() const { return static_cast<bool>(impl_); }
  /// The variant's name ("flat", "naive", "hierarchical", "two_dimensional", "single_node", "dummy").
  const std::string& name() const;
  /// This process's rank, 0 to size() - 1.
  int rank() const;
  /// Number of ranks.
  int size() const;
  /// Rank and number of ranks on this host (ranks are grouped by host name).
  int intra_rank() const;
  /// Number of ranks on this host.
  int intra_size() const;
  /// Index of this host (hosts numbered in the order of their lowest rank) and number of hosts.
  int inter_rank() const;
  /// Number of hosts.
  int inter_size() const;
  /// This rank's host name (or "host<N>" with options.ranks_per_host).
  const std::string& host() const;
  /// The options the communicator was created with.
  const CommunicatorOptions& options() const;
  /// Turns the fingerprint check on or off (see CommunicatorOptions::check_collectives). Every rank
  /// must call it at the same point of the program.
  void set_check_collectives(bool on);
  /// True while the fingerprint check of collectives is on.
  bool check_collectives() const;

  // ---- collectives on Arrays (any dtype, any device the backend can stage through host memory) ----
  /// Elementwise reduction over ranks; every rank passes the same shape and dtype and gets the result.
  /// bool: sum and max are logical or, min is logical and. mean needs a floating dtype (DtypeError);
  /// float16 and bfloat16 are divided by size() before the sum.
  Array allreduce(const Array& x, ReduceOp op = ReduceOp::sum);
  /// `x` from `root` on every rank (shape and dtype travel too: other ranks' `x` is ignored and may be
  /// null).
  Array bcast(const Array& x, int root = 0);
  /// On root: every rank's `x` in rank order (shapes may differ, dtypes must agree: DtypeError on
  /// every rank); on others: empty.
  std::vector<Array> gather(const Array& x, int root = 0);
  /// Every rank's `x` in rank order, on every rank (shapes may differ, dtypes must agree).
  std::vector<Array> allgather(const Array& x);
  /// Root passes size() arrays (ValueError on every rank otherwise); rank i gets the i-th. Others'
  /// `xs` are ignored.
  Array scatter(const std::vector<Array>& xs, int root = 0);
  /// Rank i sends xs[j] to rank j and receives rank j's xs[i] as element j of the result. Every rank
  /// passes size() arrays (ValueError on every rank otherwise).
  std::vector<Array> alltoall(const std::vector<Array>& xs);
  /// Sends `x` (with its shape and dtype) to rank `dest` (not this rank). Blocks until buffered.
  void send(const Array& x, int dest, int tag = 0);
  /// Receives what rank `source` sent with `tag`.
  Array recv(int source, int tag = 0);
  /// Returns once every rank has called it.
  void barrier();

  /// A new communicator over the ranks that pass the same `color`, ranked by `key`, then by rank
  /// here (ChainerMN's split, MPI_Comm_split): the same variant and options, its own MPI
  /// communicators, background thread, watchdog and fingerprint checks, and hosts regrouped among
  /// its ranks (each rank keeps its host, also a simulated one of options.ranks_per_host).
  /// Collective over this communicator. `color` is a non-negative int, or std::nullopt for a rank
  /// that joins no group and gets a null communicator (valid() false). A negative color on any rank
  /// is a ValueError on every rank naming it (as MPI, which would read one as MPI_UNDEFINED or fail);
  /// so is a group the variant cannot run on (two_dimensional over hosts of unequal sizes).
  Communicator split(std::optional<int> color, int key);

  // ---- collectives on objects, as bytes (callers serialize; see object.h for typed helpers) ----
  /// Root's `bytes`, on every rank.
  std::string bcast_bytes(const std::string& bytes, int root = 0);
  /// On root: every rank's bytes in rank order; on others: empty.
  std::vector<std::string> gather_bytes(const std::string& bytes, int root = 0);
  /// Every rank's bytes in rank order, on every rank.
  std::vector<std::string> allgather_bytes(const std::string& bytes);
  /// Root passes size() strings; rank i gets the i-th.
  std::string scatter_bytes(const std::vector<std::string>& parts, int root = 0);

  // ---- training ----
  /// Copies every parameter (and persistent value) of `link` from rank 0 to all ranks, in namedparams()
  /// order, in place (handles to the parameters keep aliasing them). Uninitialized parameters must be
  /// uninitialized on every rank, and shapes and dtypes must agree (ValueError naming the path, on
  /// every rank).
  void bcast_data(Link& link);
  /// Replaces every parameter's gradient by the mean over ranks, packed as the variant packs them, in
  /// allreduce_grad_dtype. With `zero_fill`, a parameter without a gradient on this rank counts as zeros
  /// (and gets the mean); without it, every rank must have the same set of gradients (ValueError naming
  /// the path when the check is on).
  void multi_node_mean_grad(Link& link, bool zero_fill = false);

  /// An allreduce of gradients in flight (see start_mean_grad).
  class Request {
   public:
    Request() = default;
    /// Waits until done and writes the means into the arrays given to start_mean_grad. Rethrows an error.
    void wait();
    /// True when wait() would not block.
    bool ready() const;
    /// False for a default-constructed request.
    bool valid() const { return static_cast<bool>(state_); }
    struct State;
    /// Wraps the state of a started operation (for start_mean_grad).
    explicit Request(std::shared_ptr<State> s) : state_(std::move(s)) {}

   private:
    std::shared_ptr<State> state_;
  };
  /// Starts averaging `grads` over ranks (packed into one buffer in the wire dtype) without waiting.
  /// Requests run strictly in the order they were started on each rank, on a background thread and
  /// its own MPI communicator (so they do not interleave with blocking collectives); the arrays must
  /// stay alive and untouched until wait(). What the multi-node optimizer uses for overlap and double
  /// buffering. The arrays must be host arrays, contiguous, of a floating dtype (ValueError/DtypeError).
  Request start_mean_grad(std::vector<Array> grads);

  /// The implementation (for the multi-node layer's own code).
  detail::CommunicatorImpl& impl() const;

 private:
  std::shared_ptr<detail::CommunicatorImpl> impl_;
};

/// Which groupings of ranks into hosts a communicator variant runs on.
enum class HostGrouping {
  any,    ///< every grouping
  one,    ///< every rank on one host
  equal,  ///< the same number of ranks on every host
};

/// A communicator variant as create_communicator knows it: its name and traits. The variants differ
/// only in how they average gradients (multi_node_mean_grad, start_mean_grad).
struct CommunicatorVariant {
  /// The variant's name, as create_communicator takes it ("flat", "hierarchical", ...).
  std::string name;
  /// One line: how gradients are averaged.
  std::string summary;
  /// The host groupings the variant runs on.
  HostGrouping hosts = HostGrouping::any;
  /// False: gradients keep their local values, nothing is sent (for measuring).
  bool communicates = true;

  /// Whether the variant runs on hosts of these sizes (ranks per host, by host).
  bool accepts(const std::vector<int>& host_sizes) const;
};

/// Every variant, in the order error messages and --communicator help list them.
const std::vector<CommunicatorVariant>& communicator_variants();
/// The names of communicator_variants(), in the same order.
const std::vector<std::string>& communicator_names();

/// Creates a communicator over MPI_COMM_WORLD, initializing MPI (thread level MPI_THREAD_MULTIPLE;
/// finalized at exit) if the program has not. Collective over MPI_COMM_WORLD. `name`: one of
/// communicator_names() ("naive", "flat", "hierarchical", "two_dimensional", "single_node", "dummy");
/// ValueError listing them for an unknown name, ValueError for invalid options, and for a variant
/// over hosts it does not accept ("single_node" over several hosts, "two_dimensional" over hosts with
/// different numbers of ranks), naming the variants that would run there. The first call also makes failures loud: an uncaught
/// exception or a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) prints one line naming the
/// rank, the host and the operation, and aborts the job with MPI_Abort.
Communicator create_communicator(std::string_view name = "flat", const CommunicatorOptions& options = {});
/// The same, passing the program's arguments to MPI_Init.
Communicator create_communicator(std::string_view name, int& argc, char**& argv,
                                 const CommunicatorOptions& options = {});

}  // namespace rensa::mn
