#pragma once
// The cost model of data-parallel training: the step time of N ranks on M hosts, from a profile
// (profile.h) of one host's compute and its collectives' alpha-beta fits.
//
//   T = D + C_cpu + exposed(C_wire) + contention + straggle
//
// D is the step with the dummy communicator at the host's load (P processes: it packs and unpacks
// but sends nothing, so it holds the compute and every cost but the collectives). C is the sum over
// the overlap buckets (without overlap, and with double buffering, one collective of every gradient,
// as the stage runs them) of the communicator's collectives, each alpha + beta * bytes:
//   flat            within a host: the shared-memory allreduce; across hosts: MPI's allreduce over N
//                   ranks, 2 log2(N) alpha + 2 (N - 1) / N * S * beta (recursive halving and doubling;
//                   the ring's 2 (N - 1) alpha when fewer), each link carrying the bandwidth term
//   hierarchical    shared-memory allreduce, ring over the M hosts' first ranks, MPI_Bcast within hosts
//   two_dimensional shared-memory allreduce, k rings of S / k over the M hosts sharing each host's link
//                   (latency of one ring, bandwidth of S), MPI_Allgatherv within hosts
//   naive           flat, one collective per parameter
// Each collective's cost at a size between the sizes measured (the model's own buckets among them)
// is interpolated between the two nearest; beyond them alpha + beta * bytes. Between 2 hosts the
// measured 2-host MPI_Allreduce is used as it is; over more, the ring with its alpha and beta
// (2 alpha + S beta at 2 hosts).
// C splits into C_cpu, what the host's cores do (the shared-memory reductions and the collectives'
// costs at the CPU-bound rate of an unshaped link), and C_wire, the rest of the link's time (latency
// and the bytes beyond the CPU-bound rate). Overlap hides communication behind backward, except the
// last bucket's; double buffering behind the whole next step; but only when each rank has a core to
// spare for its communication thread (then all of C), or the link moves the bytes itself (then
// C_wire). Over TCP without a free core all of C is charged, and the contention below adds what the
// collectives cost beside the computation instead (less, where the link moves what the socket
// buffers hold while the thread waits for a core; more, where the link idles meanwhile).
// Contention: without a free core, overlap and double buffering run the host's collectives beside
// the computation, which costs more or less than running them alone (wake-ups, waiting for the
// other ranks' threads to get a core, cores taken from the computation; at more ranks than cores,
// idle time filled). The profile measures what the buckets' averaging adds beside backward and
// beside a step ("beside" entries); the model adds that less the buckets' collectives alone, at
// most taking all of C back. Across hosts the same is measured over the link with one rank on each
// of 2 hosts ("beside M2 LINK" entries; a link given by --link-alpha and --link-beta has none):
// what the buckets' averaging adds there, less the 2-host collectives alone, is added as it is at
// every host count, beside the host's own term. Measured with K ranks on each of 2 hosts ("beside M2
// kK PP COMMUNICATOR LINK" entries, through each communicator over the 2K ranks), it replaces both
// terms at that K and P: it less the communicator's collectives alone over the 2 hosts.
// Straggle: every step waits for the slowest of the N ranks. The profile holds what lockstep (a
// barrier after each dummy step) costs at the host's P processes; for N ranks it is scaled by
// E[max of N standard normals] / E[max of P] (independent, normally spread step times). A beside
// entry is measured against dummy steps in lockstep too, so that it holds none of it; an older
// profile's, against free-running ones, holds its ranks' straggle, which is taken out of it.
#include <optional>
#include <string>

#include "bench/scaling/profile.h"

namespace rensa_bench::scaling {

struct Config {
  std::string model = "mlp";
  int64_t batch = 100;
  int threads = 1;
  int ranks = 1;  // N
  int hosts = 1;  // M (N must be a multiple)
  std::string communicator = "flat";
  std::string wire = "float32";
  std::string mode = "overlap";  // overlap, no_overlap or double_buffering
  std::string link;              // the inter-host fit's link name (hosts > 1)
  std::string cpu_link = "unshaped";
  int machine_procs = 0;  // processes on the machine the compute was measured with (0: N / M)
  int cores = 0;          // cores per host (0: the profile's machine)
  // A link not measured here: one-way latency (s) and seconds per byte of each message.
  std::optional<double> link_alpha, link_beta;
  // The link moves bytes by itself (RDMA: InfiniBand, RoCE), so its wire time hides behind the
  // computation even without a free core.
  bool offload = false;
};

struct Prediction {
  double dummy = 0;       // D
  double comm_cpu = 0;    // C_cpu
  double comm_wire = 0;   // C_wire
  double exposed = 0;     // the part of C_wire not hidden
  double contention = 0;  // without a free core: what the collectives add beside the computation, less alone
  double contention_link = 0;  // the part of it measured over the link (included in contention)
  double straggle = 0;    // waiting for the slowest rank
  double step = 0;        // T
  double single = 0;      // one process alone, no stage
  double efficiency = 0;  // single / step (weak scaling: each rank keeps its batch)
  double of_dummy = 0;    // D / step
};

/// The communicators the model has a cost for (each of rensa::mn::communicator_names()).
const std::vector<std::string>& modeled_communicators();

/// std::runtime_error naming the missing entry or the bad value (hosts not dividing ranks, an
/// unknown communicator or mode, two_dimensional with unequal hosts, single_node over hosts).
Prediction predict(const Profile& profile, const Config& config);

/// Profile keys, shared by measure and predict.
std::string compute_key(const std::string& model, int64_t batch, int threads, int procs, const std::string& wire);
std::string buckets_key(const std::string& model);
// "kK PP": K ranks per host, P processes on the machine (the load an entry was measured at).
std::string load_key(int per_host, int procs);
std::string beside_key(int per_host, int procs, const std::string& wire);
// "beside M2 LINK WIRE" for hosts of one rank (flat; procs and communicator unused), "beside M2 kK PP
// COMMUNICATOR LINK WIRE" for K > 1.
std::string beside_link_key(int hosts, int per_host, int procs, const std::string& communicator,
                            const std::string& link, const std::string& wire);

}  // namespace rensa_bench::scaling
