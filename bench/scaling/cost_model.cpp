#include "bench/scaling/cost_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace rensa_bench::scaling {

std::string compute_key(const std::string& model, int64_t batch, int threads, int procs, const std::string& wire) {
  return "compute " + model + " b" + std::to_string(batch) + " t" + std::to_string(threads) + " P" +
         std::to_string(procs) + " " + wire;
}

std::string buckets_key(const std::string& model) {
  return "buckets " + model;
}

namespace {

struct Cost {
  double cpu = 0, wire = 0;
  Cost& operator+=(const Cost& o) {
    cpu += o.cpu;
    wire += o.wire;
    return *this;
  }
};

double wire_bytes(const std::string& wire) {
  if (wire == "float32") return 4;
  if (wire == "float16" || wire == "bfloat16") return 2;
  if (wire == "float64") return 8;
  throw std::runtime_error("scaling model: unknown wire dtype '" + wire + "' (float32, float16, bfloat16, float64)");
}

class Model {
 public:
  Model(const Profile& p, const Config& c) : p_(p), c_(c) {
    if (c.ranks < 1 || c.hosts < 1 || c.ranks % c.hosts != 0) {
      throw std::runtime_error("scaling model: " + std::to_string(c.ranks) + " ranks do not fill " +
                               std::to_string(c.hosts) + " hosts evenly");
    }
    k_ = c.ranks / c.hosts;
    procs_ = c.machine_procs > 0 ? c.machine_procs : k_;
    const std::string measure = "run `bench_scaling_model measure` with " + std::to_string(procs_) +
                                " ranks on one host (" + std::to_string(k_) + " per host for the intra entries)";
    hint_ = measure;
    if (c_.hosts > 1) {
      if (c_.link_alpha && c_.link_beta) {
        alpha_ = *c_.link_alpha;
        beta_ = *c_.link_beta;
      } else {
        std::tie(alpha_, beta_) = ring_params(c_.link);
      }
      beta_cpu_ = beta_;
      if (!c_.cpu_link.empty() && c_.cpu_link != c_.link) {
        const std::string key = "inter M2 " + c_.cpu_link + " " + c_.wire;
        if (p_.has(key)) beta_cpu_ = std::min(beta_, ring_params(c_.cpu_link).second);
      }
    }
  }

  Cost bucket(double bytes) const {
    const std::string& name = c_.communicator;
    if (name == "dummy") return {};
    if (c_.hosts == 1) return {intra("intra", bytes), 0};
    if (name == "single_node") throw std::runtime_error("scaling model: single_node needs every rank on one host");
    if (name == "flat" || name == "naive") return ring(c_.ranks, bytes, 1);
    if (name == "hierarchical") {
      Cost c = ring(c_.hosts, bytes, 1);
      c.cpu += intra("intra", bytes) + intra("bcast", bytes);
      return c;
    }
    if (name == "two_dimensional") {
      Cost c = ring(c_.hosts, bytes, k_);
      c.cpu += intra("intra", bytes) + intra("allgather", bytes);
      return c;
    }
    throw std::runtime_error("scaling model: unknown communicator '" + name +
                             "' (flat, naive, hierarchical, two_dimensional, single_node, dummy)");
  }

  const std::string& hint() const { return hint_; }
  int procs() const { return procs_; }
  int per_host() const { return k_; }

 private:
  // alpha (one-way latency) and beta (seconds per byte of each ring message) of a link, from the
  // 2-host MPI_Allreduce fit: a + b S = 2 alpha + S beta.
  std::pair<double, double> ring_params(const std::string& link) const {
    const nlohmann::json& f =
        p_.at("inter M2 " + link + " " + c_.wire, "run `bench_scaling_model measure` with one rank on each of 2 hosts "
                                                  "joined by the link '" + link + "' (--link " + link + ")");
    return {f.at("alpha").get<double>() / 2, f.at("beta").get<double>()};
  }

  // MPI's ring allreduce of `bytes` over n ranks, `streams` of them sharing each host's link (each
  // carrying bytes / streams): 2 (n - 1) steps of latency; each link carries 2 (n - 1) / n of the bytes.
  Cost ring(int n, double bytes, int streams) const {
    if (n <= 1) return {};
    const double steps = 2.0 * (n - 1);
    const double moved = steps / n * bytes;
    (void)streams;  // the streams share the link: the bytes through it are the same
    const double cpu = moved * beta_cpu_;
    return {cpu, steps * alpha_ + moved * beta_ - cpu};
  }

  double intra(const std::string& what, double bytes) const {
    if (k_ <= 1) return 0;
    std::string key = what + " k" + std::to_string(k_) + " P" + std::to_string(procs_);
    if (what == "intra") key += " " + c_.wire;
    const nlohmann::json& f = p_.at(key, hint_);
    return f.at("alpha").get<double>() + f.at("beta").get<double>() * bytes;
  }

  const Profile& p_;
  const Config& c_;
  int k_ = 1, procs_ = 1;
  double alpha_ = 0, beta_ = 0, beta_cpu_ = 0;
  std::string hint_;
};

// E[max of n independent standard normals]: exact values for small n, then the extreme-value
// expansion.
double expected_max_normal(int n) {
  static const double small[] = {0, 0, 0.5642, 0.8463, 1.0294, 1.1630, 1.2672, 1.3522, 1.4236};
  if (n < 9) return small[n];
  const double l = std::log(static_cast<double>(n));
  const double a = std::sqrt(2 * l);
  return a - (std::log(l) + std::log(4 * M_PI)) / (2 * a) + 0.5772 / a;
}

}  // namespace

Prediction predict(const Profile& profile, const Config& c) {
  if (c.mode != "overlap" && c.mode != "no_overlap" && c.mode != "double_buffering") {
    throw std::runtime_error("scaling model: unknown mode '" + c.mode + "' (overlap, no_overlap, double_buffering)");
  }
  if (c.hosts > 1 && c.link.empty() && !(c.link_alpha && c.link_beta)) {
    throw std::runtime_error("scaling model: " + std::to_string(c.hosts) + " hosts need a link (--link NAME, or "
                             "--link-alpha and --link-beta)");
  }
  const Model m(profile, c);
  const nlohmann::json& d =
      profile.at(compute_key(c.model, c.batch, c.threads, m.procs(), c.wire), m.hint());
  const nlohmann::json& single = profile.at(compute_key(c.model, c.batch, c.threads, 1, "none"),
                                            "run `bench_scaling_model measure` with 1 rank");
  const nlohmann::json& buckets = profile.at(buckets_key(c.model), "run `bench_scaling_model measure`");
  const double isz = wire_bytes(c.wire);

  // The collectives each step runs, in bytes on the wire.
  std::vector<double> sizes;
  if (c.communicator == "naive") {
    for (const auto& e : buckets.at("params")) sizes.push_back(e.get<double>() * isz);
  } else if (c.mode == "no_overlap") {
    double total = 0;
    for (const auto& e : buckets.at("elements")) total += e.get<double>();
    sizes.push_back(total * isz);
  } else {
    for (const auto& e : buckets.at("elements")) sizes.push_back(e.get<double>() * isz);
  }
  Cost total, last;
  for (const double s : sizes) {
    last = m.bucket(s);
    total += last;
  }

  Prediction p;
  p.dummy = d.at("step").get<double>();
  p.single = single.at("step").get<double>();
  p.comm_cpu = total.cpu;
  p.comm_wire = total.wire;
  const int cores = c.cores > 0 ? c.cores : profile.machine().value("cores", 1);
  // Each rank's communication thread gets a core of its own only when the computation leaves one.
  const bool free_core = cores - m.procs() * c.threads >= m.procs();
  double hidden_window = 0;
  if (c.mode == "overlap" && c.communicator != "naive") hidden_window = d.at("backward").get<double>();
  if (c.mode == "double_buffering") hidden_window = p.dummy;
  double hideable = total.wire, unhideable = total.cpu;
  if (free_core) {
    hideable += total.cpu;
    unhideable = 0;
  }
  const double tail = c.mode == "overlap" ? (free_core ? last.cpu + last.wire : last.wire) : 0;
  p.exposed = std::max(hideable - hidden_window, tail);
  if (c.mode == "no_overlap") p.exposed = hideable;
  // Every rank waits for the slowest at each step: the expected maximum of N step times whose
  // spread the dummy run measured (a normal's), beyond their mean.
  if (c.communicator != "dummy") p.straggle = d.value("jitter", 0.0) * expected_max_normal(c.ranks);
  p.step = p.dummy + unhideable + p.exposed + p.straggle;
  p.efficiency = p.single / p.step;
  p.of_dummy = p.dummy / p.step;
  return p;
}

}  // namespace rensa_bench::scaling
