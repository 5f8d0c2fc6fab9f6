#pragma once
// A scaling profile: what `bench_scaling_model measure` found on a machine, as one JSON file that
// several measure runs fill in (each rewrites it atomically with its entries added). Entries:
//   "compute <model> b<batch> t<threads> P<procs> <wire>": {"forward", "backward", "update", "step",
//       "straggle"}: seconds per training step with P processes on the machine, gradients packed for
//       <wire> by the dummy communicator (update = the step less forward and backward: packing, the
//       stage, the rule; straggle = what a barrier after each step adds); <wire> "none": no stage;
//   "buckets <model>": {"elements": [...]}: the gradient elements of each overlap bucket, in launch order;
//   "intra k<k> P<procs> <wire>", "bcast k<k> P<procs>", "allgather k<k> P<procs>": within a host of
//       k ranks: the shared-memory allreduce of <wire> elements, MPI_Bcast and MPI_Allgatherv;
//   "inter M<hosts> <link> <wire>": MPI_Allreduce among one rank per host, over the link named <link>;
//   "beside k<k> P<procs> <wire>": {"overlap", "double_buffering"}: seconds that averaging the
//       buckets through the flat communicator of the host's k ranks adds beside backward (each
//       bucket started when its gradients are final) and beside a whole step (every gradient in one
//       collective, as double buffering runs it), over the dummy one; "baseline": "lockstep": the
//       dummy's steps with a barrier after each, as the collectives hold the others (entries
//       without it, from older profiles, were measured against free-running dummy steps).
//   "beside M2 <link> <wire>": the same over the link, with one rank on each of 2 hosts;
//   "beside M2 k<k> P<procs> <communicator> <link> <wire>": the same over every rank of 2 hosts of k
//       ranks, through that communicator (flat, hierarchical, two_dimensional).
// P<procs> is the processes on the machine that measured the entry (k on hosts of their own, every
// rank on simulated hosts sharing one machine).
// Each collective entry (not "beside") is a fit {"alpha", "beta"}: seconds = alpha + beta * bytes,
// and its points, each the median over 3 repeats of the mean of at least 5 calls (calls_per_repeat).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace rensa_bench::scaling {

class Profile {
 public:
  /// Reads `path`; an absent file is an empty profile. std::runtime_error naming the file for
  /// anything that is not a profile.
  static Profile load(const std::string& path);
  /// Writes atomically (a temporary file beside `path`, then rename).
  void save(const std::string& path) const;

  bool has(const std::string& key) const { return entries_.contains(key); }
  /// The entry; std::runtime_error naming the key, the file and the measure run that provides it.
  const nlohmann::json& at(const std::string& key, const std::string& hint) const;
  void set(const std::string& key, nlohmann::json value) { entries_[key] = std::move(value); }
  const nlohmann::json& entries() const { return entries_; }
  /// The machine the entries were measured on ("cpu", "cores", "date").
  nlohmann::json& machine() { return machine_; }
  const nlohmann::json& machine() const { return machine_; }
  const std::string& path() const { return path_; }

 private:
  friend Profile median_profile(const std::vector<Profile>& profiles);
  std::string path_;
  nlohmann::json machine_ = nlohmann::json::object();
  nlohmann::json entries_ = nlohmann::json::object();
};

/// The median of several profiles of one machine (bench/scaling_check ROUNDS=N measures one per
/// round, minutes apart, so a slow phase of the host moves one of them, not the median): every number
/// is the median of its values in `profiles` (fits: alpha, beta and each point apart); other values
/// come from the first. Every profile must hold the same entries in the same shapes, else
/// std::runtime_error naming the entry and the file. `machine` comes from the first.
Profile median_profile(const std::vector<Profile>& profiles);

/// seconds = alpha + beta * bytes for (bytes, seconds) points: beta the least-squares slope over the
/// sizes from 1 MiB up (bandwidth), alpha the least time below 1 MiB that the slope leaves (latency).
nlohmann::json fit_affine(const std::vector<std::pair<double, double>>& points);

}  // namespace rensa_bench::scaling
