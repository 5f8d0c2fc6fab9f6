#include "bench/scaling/cost_model.h"

#include <algorithm>
#include <cmath>
#include <functional>
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

std::string load_key(int per_host, int procs) {
  std::string s = "k";
  s += std::to_string(per_host);
  s += " P";
  s += std::to_string(procs);
  return s;
}

std::string beside_key(int per_host, int procs, const std::string& wire) {
  return "beside " + load_key(per_host, procs) + " " + wire;
}

std::string beside_link_key(int hosts, int per_host, int procs, const std::string& communicator,
                            const std::string& link, const std::string& wire) {
  std::string key = "beside M" + std::to_string(hosts) + " ";
  if (per_host > 1) key += load_key(per_host, procs) + " " + communicator + " ";
  return key + link + " " + wire;
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

// The line through a fit's points as fit_affine draws it now (profiles keep the points).
nlohmann::json refit(const nlohmann::json& fit) {
  std::vector<std::pair<double, double>> pts;
  for (const auto& p : fit.at("points")) pts.emplace_back(p[0].get<double>(), p[1].get<double>());
  return fit_affine(pts);
}

// The fit's cost at `bytes`: between measured sizes, the straight line between the two nearest
// (MPI switches algorithms with the size); outside them, alpha + beta * bytes.
double cost_at(const nlohmann::json& fit, double bytes) {
  const nlohmann::json& pts = fit.at("points");
  for (std::size_t i = 0; i + 1 < pts.size(); ++i) {
    const double x0 = pts[i][0].get<double>(), x1 = pts[i + 1][0].get<double>();
    if (bytes >= x0 && bytes <= x1) {
      const double t0 = pts[i][1].get<double>(), t1 = pts[i + 1][1].get<double>();
      return x1 > x0 ? t0 + (t1 - t0) * (bytes - x0) / (x1 - x0) : t0;
    }
  }
  const nlohmann::json line = refit(fit);
  return line.at("alpha").get<double>() + line.at("beta").get<double>() * bytes;
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
        link_fit_ = &inter_fit(c_.link);
        const nlohmann::json line = refit(*link_fit_);  // the current fit of the points measured
        alpha_ = line.at("alpha").get<double>() / 2;
        beta_ = line.at("beta").get<double>();
      }
      if (!c_.cpu_link.empty() && c_.cpu_link != c_.link && p_.has(inter_key(c_.cpu_link))) {
        cpu_fit_ = &inter_fit(c_.cpu_link);
      }
    }
  }

  Cost bucket(double bytes) const {
    const std::string& name = c_.communicator;
    if (name == "dummy") return {};
    if (c_.hosts == 1) return {intra("intra", bytes), 0};
    if (name == "single_node") throw std::runtime_error("scaling model: single_node needs every rank on one host");
    if (name == "hierarchical") {
      Cost c = ring(c_.hosts, bytes);
      c.cpu += intra("intra", bytes) + intra("bcast", bytes);
      return c;
    }
    if (name == "two_dimensional") {
      Cost c = ring(c_.hosts, bytes);
      c.cpu += intra("intra", bytes) + intra("allgather", bytes);
      return c;
    }
    // flat and naive: one MPI_Allreduce over every rank. For all but small sizes Open MPI 4.1 runs
    // Rabenseifner's, which halves with the nearest rank first: with ranks numbered host by host,
    // its first and last log2 K steps stay within each host (a reduce-scatter and an allgather among
    // the K, through MPI's shared memory, each costing about an allgather of the bytes), and the
    // steps between cross the links, the K ranks' pairs together carrying the bytes of one
    // allreduce over the M hosts.
    if (k_ > 1 && bytes >= rabenseifner_from(c_.ranks)) {
      Cost c = ring(c_.hosts, bytes);
      c.cpu += 2 * intra("allgather", bytes);
      return c;
    }
    return ring(c_.ranks, bytes);
  }

  // The host's shared-memory allreduce of `bytes` alone (0 with one rank per host).
  double intra_alone(double bytes) const { return intra("intra", bytes); }
  // The measured 2-host allreduce of `bytes` alone (0 without a measured link).
  double link_alone(double bytes) const { return link_fit_ ? cost_at(*link_fit_, bytes) : 0; }
  bool link_measured() const { return link_fit_ != nullptr; }
  const std::string& hint() const { return hint_; }
  int procs() const { return procs_; }
  int per_host() const { return k_; }

 private:
  // The size from which Open MPI 4.1's fixed rules pick Rabenseifner's allreduce (commutative
  // operations) on n ranks.
  static double rabenseifner_from(int n) {
    if (n < 4) return 262144;
    if (n < 16) return 8192;
    if (n < 32) return 4096;
    if (n < 64) return 128;
    if (n < 256) return 262144;
    if (n < 512) return 4096;
    if (n < 4096) return 16384;
    return 32768;
  }

  std::string inter_key(const std::string& link) const { return "inter M2 " + link + " " + c_.wire; }
  const nlohmann::json& inter_fit(const std::string& link) const {
    return p_.at(inter_key(link), "run `bench_scaling_model measure --link " + link +
                                      "` with one rank on each of 2 hosts joined by that link");
  }

  // MPI's allreduce of `bytes` over n ranks, one link per host. Two: as measured (the 2-host fit,
  // a + b S = 2 alpha + S beta). More: the ring or reduce-scatter and allgather by recursive halving
  // and doubling (Rabenseifner's), whichever is cheaper: each link carries 2 (n - 1) / n of the
  // bytes in both; the ring waits 2 (n - 1) latencies, the halving 2 log2 n. The CPU share is the
  // unshaped link's cost of the same traffic.
  Cost ring(int n, double bytes) const {
    if (n <= 1) return {};
    double total = 0, cpu = 0;
    if (n == 2 && link_fit_) {
      total = cost_at(*link_fit_, bytes);
      cpu = cpu_fit_ ? cost_at(*cpu_fit_, bytes) : total;
    } else {
      const double steps = std::min(2.0 * (n - 1), 2.0 * std::ceil(std::log2(static_cast<double>(n))));
      const double moved = 2.0 * (n - 1) / n * bytes;
      total = steps * alpha_ + moved * beta_;
      cpu = cpu_fit_ ? moved * refit(*cpu_fit_).at("beta").get<double>() : total;
    }
    cpu = std::min(cpu, total);
    return {cpu, total - cpu};
  }

  double intra(const std::string& what, double bytes) const {
    if (k_ <= 1) return 0;
    std::string key = what + " " + load_key(k_, procs_);
    if (what == "intra") key += " " + c_.wire;
    const nlohmann::json& f = p_.at(key, hint_);
    return cost_at(f, bytes);
  }

  const Profile& p_;
  const Config& c_;
  int k_ = 1, procs_ = 1;
  double alpha_ = 0, beta_ = 0;  // of the link: one message's latency, seconds per byte
  const nlohmann::json* link_fit_ = nullptr;
  const nlohmann::json* cpu_fit_ = nullptr;
  std::string hint_;
};

// E[max of n independent standard normals] = integral of x n phi(x) Phi(x)^(n-1) dx, numerically.
double expected_max_normal(int n) {
  if (n <= 1) return 0;
  double sum = 0;
  const double h = 1e-3;
  for (double x = -9; x < 9; x += h) {
    const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    sum += x * n * pdf * std::pow(cdf, n - 1) * h;
  }
  return sum;
}

}  // namespace

const std::vector<std::string>& modeled_communicators() {
  static const std::vector<std::string> names = {"flat",           "naive",       "hierarchical",
                                                 "two_dimensional", "single_node", "dummy"};
  return names;
}

Prediction predict(const Profile& profile, const Config& c) {
  const auto& names = modeled_communicators();
  if (std::find(names.begin(), names.end(), c.communicator) == names.end()) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    throw std::runtime_error("scaling model: unknown communicator '" + c.communicator + "' (" + list + ")");
  }
  if (c.mode != "overlap" && c.mode != "no_overlap" && c.mode != "double_buffering") {
    throw std::runtime_error("scaling model: unknown mode '" + c.mode + "' (overlap, no_overlap, double_buffering)");
  }
  if (c.hosts > 1 && c.link.empty() && !(c.link_alpha && c.link_beta)) {
    throw std::runtime_error("scaling model: " + std::to_string(c.hosts) +
                             " hosts need a link (--link NAME, or "
                             "--link-alpha and --link-beta)");
  }
  const Model m(profile, c);
  const nlohmann::json& d = profile.at(compute_key(c.model, c.batch, c.threads, m.procs(), c.wire), m.hint());
  const nlohmann::json& single =
      profile.at(compute_key(c.model, c.batch, c.threads, 1, "none"), "run `bench_scaling_model measure` with 1 rank");
  const nlohmann::json& buckets = profile.at(buckets_key(c.model), "run `bench_scaling_model measure`");
  const double isz = wire_bytes(c.wire);

  // The collectives each step runs, in bytes on the wire.
  std::vector<double> sizes;
  if (c.communicator == "naive") {
    for (const auto& e : buckets.at("params")) sizes.push_back(e.get<double>() * isz);
  } else if (c.mode != "overlap") {
    // Without overlap the stage averages every gradient in one collective, after backward; double
    // buffering too (only with overlap as well does it start buckets during backward).
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
  // What may run beside the computation: everything with a core to spare; else only what an
  // offloading link moves by itself. TCP needs the communication thread on a core to keep the link
  // busy: without a free core, what it costs beside the computation is the measured contention.
  double hideable = 0, unhideable = total.cpu + total.wire, tail = 0;
  if (free_core) {
    hideable = total.cpu + total.wire;
    tail = last.cpu + last.wire;
  } else if (c.offload) {
    hideable = total.wire;
    tail = last.wire;
  }
  unhideable -= hideable;
  if (c.mode == "overlap") {
    p.exposed = std::max(hideable - hidden_window, std::min(tail, hideable));
  } else if (c.mode == "double_buffering") {
    p.exposed = std::max(hideable - hidden_window, 0.0);
  } else {
    p.exposed = hideable;
  }
  // Every rank waits for the slowest at each step. Measured at P processes in lockstep; for n ranks
  // it grows as the expected maximum of n normal step times beyond their mean.
  const auto straggle_of = [&](int n) {
    if (n <= 1 || m.procs() <= 1) return 0.0;
    return d.value("straggle", 0.0) / expected_max_normal(std::min(m.procs(), n)) * expected_max_normal(n);
  };
  if (c.communicator != "dummy") p.straggle = straggle_of(c.ranks);
  // Without a free core, collectives that run beside the computation cost what the profile measured
  // them to add there, not what they cost alone: the difference is added (it can at most hide them).
  // The same across hosts, from the entry measured over the link at 2 hosts. An entry measured
  // against dummy steps in lockstep leaves out the waiting for the slowest of its `ranks`, which the
  // straggle term charges; one against free-running dummy steps (older profiles) holds it, so it is
  // taken out here as the straggle term would charge it.
  const bool beside_applies =
      !free_core && c.mode != "no_overlap" && c.communicator != "dummy" && c.communicator != "naive";
  const auto added_beside = [&](const std::string& key, int ranks, const std::function<double(double)>& alone_of) {
    double alone = 0;
    for (const double bytes : sizes) alone += alone_of(bytes);
    const nlohmann::json& added = profile.at(key, "");
    if (!added.contains(c.mode) || !added.at(c.mode).is_number()) {
      throw std::runtime_error("scaling profile " + profile.path() + ": entry \"" + key + "\" has no number \"" +
                               c.mode + "\"");
    }
    const bool lockstep = added.value("baseline", "") == "lockstep";
    return added.at(c.mode).get<double>() - alone - (lockstep ? 0.0 : straggle_of(ranks));
  };
  const std::string beside = beside_key(m.per_host(), m.procs(), c.wire);
  const std::string beside_link =
      c.hosts > 1 ? beside_link_key(2, m.per_host(), m.procs(), c.communicator, c.link, c.wire) : "";
  if (beside_applies && m.link_measured() && m.per_host() > 1 && profile.has(beside_link)) {
    // Measured at the host's load over every rank of 2 hosts through this communicator: the host's
    // part and the link's together, less its collectives alone there.
    Config pair = c;
    pair.ranks = 2 * m.per_host();
    pair.hosts = 2;
    const Model at_two(profile, pair);
    p.contention_link = added_beside(beside_link, pair.ranks, [&](double bytes) {
      const Cost alone = at_two.bucket(bytes);
      return alone.cpu + alone.wire;
    });
    p.contention = p.contention_link;
  } else {
    if (beside_applies && profile.has(beside)) {
      p.contention = added_beside(beside, m.per_host(), [&](double bytes) { return m.intra_alone(bytes); });
    }
    // Hosts of K > 1 without their own entry: the one of hosts of one rank, beside the host's.
    const std::string single_link = c.hosts > 1 ? beside_link_key(2, 1, 2, "flat", c.link, c.wire) : "";
    if (beside_applies && m.link_measured() && profile.has(single_link)) {
      p.contention_link = added_beside(single_link, 2, [&](double bytes) { return m.link_alone(bytes); });
      p.contention += p.contention_link;
    }
  }
  // It can at most hide the collectives; the link's part is what is left beside the host's.
  if (p.contention < -unhideable) {
    p.contention_link -= p.contention + unhideable;
    p.contention = -unhideable;
  }
  p.step = p.dummy + unhideable + p.exposed + p.contention + p.straggle;
  p.efficiency = p.single / p.step;
  p.of_dummy = p.dummy / p.step;
  return p;
}

}  // namespace rensa_bench::scaling
