#include "bench/scaling/measure.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "bench/scaling/cost_model.h"
#include "bench/scaling/profile.h"
#include "examples/models.h"
#include "rensa/mn.h"
#include "rensa/mn/mpi.h"
#include "rensa/rensa.h"
#include "src/mn/mpi_util.h"
#include "src/mn/shm_allreduce.h"

namespace rensa_bench::scaling {
namespace {

namespace L = rensa::links;
namespace O = rensa::optimizers;
using rensa::Variable;

// A model of the examples with its optimizer, and a few synthetic batches.
struct Built {
  std::shared_ptr<L::Classifier> model;
  std::unique_ptr<O::Optimizer> optimizer;
  std::vector<Variable> xs, ts;
  std::size_t next = 0;

  Variable loss() {
    const std::size_t i = next++ % xs.size();
    return (*model)(std::vector<Variable>{xs[i], ts[i]});
  }
};

Built build(const Workload& w) {
  rensa::seed(0);
  Built b;
  rensa::Shape sample;
  if (w.model == "mlp") {
    b.model = std::make_shared<L::Classifier>(std::make_shared<rensa_examples::MLP>(1000));
    b.optimizer = std::make_unique<O::Adam>();
    sample = {784};
  } else if (w.model == "cnn") {
    b.model = std::make_shared<L::Classifier>(std::make_shared<rensa_examples::CNN>(128));
    b.optimizer = std::make_unique<O::MomentumSGD>(0.01, 0.9);
    sample = {1, 28, 28};
  } else {
    b.model = std::make_shared<L::Classifier>(std::make_shared<rensa_examples::ResNet>());
    b.optimizer = std::make_unique<O::MomentumSGD>(0.1, 0.9);
    b.optimizer->add_hook(std::make_shared<O::WeightDecay>(5e-4));
    sample = {1, 28, 28};
  }
  rensa::Shape shape{w.batch};
  for (const int64_t d : sample) shape.push_back(d);
  for (int i = 0; i < 4; ++i) {
    b.xs.emplace_back(rensa::random::uniform(shape, 0.0, 1.0, rensa::Dtype::float32));
    b.ts.emplace_back(rensa::random::uniform({w.batch}, 0.0, 10.0).astype(rensa::Dtype::int32));
  }
  b.loss();  // initializes the lazily sized parameters
  b.model->cleargrads();
  return b;
}

// Seconds per call of `fn`: `warmup` calls, then the median over `repeats` of `steps` calls each,
// taking the slowest rank of `comm` (the ranks start each repeat together).
double timed(const std::function<void()>& fn, int steps, int warmup, int repeats, MPI_Comm comm) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < steps; ++i) fn();
    double t = (MPI_Wtime() - t0) / steps;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, comm);
    times.push_back(t);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Seconds per collective: the median over 3 repeats of the mean of calls_per_repeat calls, agreed on
// by the ranks of `comm`. With `gap`, each call follows an idle pause that long (training's compute
// between its collectives: TCP paces and sizes its window differently after idling) and only the
// calls are timed.
double timed_collective(const std::function<void()>& fn, MPI_Comm comm, double gap = 0, double seconds = 0.1) {
  fn();
  double t0 = MPI_Wtime();
  fn();
  double one = MPI_Wtime() - t0;
  MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_DOUBLE, MPI_MAX, comm);
  const int iters = calls_per_repeat(one, gap, seconds);
  if (gap <= 0) return timed(fn, iters, 0, 3, comm);
  std::vector<double> times;
  for (int r = 0; r < 3; ++r) {
    MPI_Barrier(comm);
    double busy = 0;
    for (int i = 0; i < iters; ++i) {
      std::this_thread::sleep_for(std::chrono::duration<double>(gap));
      t0 = MPI_Wtime();
      fn();
      busy += MPI_Wtime() - t0;
    }
    busy /= iters;
    MPI_Allreduce(MPI_IN_PLACE, &busy, 1, MPI_DOUBLE, MPI_MAX, comm);
    times.push_back(busy);
  }
  std::sort(times.begin(), times.end());
  return times[1];
}

const std::vector<std::string> kWires = {"float32", "float16", "bfloat16"};
const std::vector<double> kLadder = {16e3, 64e3, 256e3, 1 << 20, 4 << 20, 16 << 20};

// The sizes to time for `wire`: the ladder, and the model's own collectives (each bucket, and all
// gradients at once): MPI changes algorithm with the size, so the cost is not one line everywhere.
std::vector<double> sizes_for(const nlohmann::json& buckets, const std::string& wire) {
  std::vector<double> sizes = kLadder;
  const double isz = static_cast<double>(rensa::itemsize(rensa::dtype_from_name(wire)));
  double total = 0;
  for (const auto& e : buckets.at("elements")) {
    sizes.push_back(e.get<double>() * isz);
    total += e.get<double>() * isz;
  }
  sizes.push_back(total);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

// This machine's identity: the kernel's boot id, the same in every network and host-name namespace
// on it (the simulated hosts of scripts/netns-cluster), different on another machine.
std::string machine_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (in >> id) return id;
  char name[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  MPI_Get_processor_name(name, &len);
  return std::string(name, static_cast<std::size_t>(len));
}

// The ranks whose `key` equals this rank's, in rank order.
std::vector<int> ranks_with_same(std::string key) {
  constexpr std::size_t kLen = 256;
  key.resize(kLen, '\0');
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<char> all(kLen * static_cast<std::size_t>(size));
  MPI_Allgather(key.data(), static_cast<int>(kLen), MPI_CHAR, all.data(), static_cast<int>(kLen), MPI_CHAR,
                MPI_COMM_WORLD);
  std::vector<int> same;
  for (int r = 0; r < size; ++r) {
    if (std::equal(key.begin(), key.end(), all.begin() + static_cast<std::ptrdiff_t>(kLen) * r)) same.push_back(r);
  }
  return same;
}

// The ranks of the job on this machine: what shares its cores, whether MPI sees one host or several.
int procs_on_this_machine() {
  return static_cast<int>(ranks_with_same(machine_id()).size());
}

// The job's ranks by host name, as the communicators group them (K per host, M hosts; MPI sees the
// simulated hosts of scripts/uts-host as one machine), and P, the processes on this machine: K on
// hosts of their own, all of them on simulated hosts. The profile's keys hold P, the
// load the compute and the host's collectives were measured at.
struct Layout {
  MPI_Comm intra = MPI_COMM_NULL, leaders = MPI_COMM_NULL;
  int rank = 0, size = 1, k = 1, hosts = 1, intra_rank = 0, procs = 1;
  Layout() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_split(MPI_COMM_WORLD, ranks_with_same(rensa::mn::detail::host_name()).front(), rank, &intra);
    MPI_Comm_rank(intra, &intra_rank);
    MPI_Comm_size(intra, &k);
    MPI_Comm_split(MPI_COMM_WORLD, intra_rank == 0 ? 0 : MPI_UNDEFINED, rank, &leaders);
    int leader = intra_rank == 0 ? 1 : 0;
    MPI_Allreduce(&leader, &hosts, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (hosts * k != size) throw std::runtime_error("bench_scaling_model: hosts hold different numbers of ranks");
    procs = procs_on_this_machine();
  }
  ~Layout() {
    if (leaders != MPI_COMM_NULL) MPI_Comm_free(&leaders);
    MPI_Comm_free(&intra);
  }
};

void measure_compute(const Workload& w, Profile& profile, const Layout& lay) {
  Built plain = build(w);
  plain.optimizer->setup(*plain.model);
  const auto timing = [&](const std::function<void()>& fn) {
    return timed(fn, w.steps, w.warmup, w.repeats, MPI_COMM_WORLD);
  };
  const double forward = timing([&] { plain.loss(); });
  const double forward_backward = timing([&] {
    plain.model->cleargrads();
    plain.loss().backward();
  });
  const double step = timing([&] { plain.optimizer->update([&] { return plain.loss(); }); });
  const double backward = forward_backward - forward;
  profile.set(compute_key(w.model, w.batch, w.threads, lay.procs, "none"),
              {{"forward", forward}, {"backward", backward}, {"update", step - forward_backward}, {"step", step}});
  for (const std::string& wire : kWires) {
    Built b = build(w);
    auto comm = rensa::mn::create_communicator("dummy", {.allreduce_grad_dtype = rensa::dtype_from_name(wire)});
    rensa::mn::add_multi_node_stage(*b.optimizer, comm);
    b.optimizer->setup(*b.model);
    // Free-running and in lockstep (a barrier after each step) in turn, so that both see the same
    // phase of the machine: the difference is what waiting for the slowest rank costs.
    const auto free_step = [&] { b.optimizer->update([&] { return b.loss(); }); };
    const auto lockstep = [&] {
      free_step();
      MPI_Barrier(MPI_COMM_WORLD);
    };
    for (int i = 0; i < w.warmup; ++i) free_step();
    std::vector<double> steps, waits;
    for (int r = 0; r < w.repeats; ++r) {
      steps.push_back(timed(free_step, w.steps, 0, 1, MPI_COMM_WORLD));
      waits.push_back(timed(lockstep, w.steps, 0, 1, MPI_COMM_WORLD) - steps.back());
    }
    std::sort(steps.begin(), steps.end());
    std::sort(waits.begin(), waits.end());
    const double s = steps[steps.size() / 2];
    profile.set(compute_key(w.model, w.batch, w.threads, lay.procs, wire),
                {{"forward", forward},
                 {"backward", backward},
                 {"update", s - forward_backward},
                 {"step", s},
                 {"straggle", std::max(0.0, waits[waits.size() / 2])}});
  }
  // The overlap buckets, as the multi-node stage plans them.
  nlohmann::json elements = nlohmann::json::array(), params = nlohmann::json::array();
  for (const rensa::mn::GradientBucket& b :
       rensa::mn::plan_gradient_buckets(*plain.model, rensa::mn::MultiNodeOptimizerOptions{}.bucket_cap)) {
    elements.push_back(b.elements);
    for (const rensa::Variable& p : b.params) params.push_back(p.size());
  }
  profile.set(buckets_key(w.model), {{"elements", elements}, {"params", params}});
}

void measure_intra(Profile& profile, const Layout& lay, const nlohmann::json& buckets) {
  rensa::mn::detail::ShmAllreduce shm;
  if (!shm.init(lay.intra)) throw std::runtime_error("bench_scaling_model: the shared-memory segment cannot be mapped");
  std::vector<char> buf(static_cast<std::size_t>(std::max(kLadder.back(), sizes_for(buckets, "float32").back())));
  const std::string tail = std::string(" ").append(load_key(lay.k, lay.procs));
  for (const std::string& wire : kWires) {
    const rensa::Dtype dt = rensa::dtype_from_name(wire);
    std::vector<std::pair<double, double>> pts;
    for (const double bytes : sizes_for(buckets, wire)) {
      const auto n = static_cast<int64_t>(bytes) / static_cast<int64_t>(rensa::itemsize(dt));
      std::fill(buf.begin(), buf.end(), 0);
      pts.emplace_back(
          bytes,
          timed_collective([&] { shm.allreduce(buf.data(), buf.data(), n, dt, rensa::mn::ReduceOp::sum); }, lay.intra));
    }
    profile.set("intra" + tail + " " + wire, fit_affine(pts));
  }
  std::vector<std::pair<double, double>> bcast, gather;
  for (const double bytes : sizes_for(buckets, "float32")) {
    const int n = static_cast<int>(bytes);
    bcast.emplace_back(bytes, timed_collective([&] { MPI_Bcast(buf.data(), n, MPI_BYTE, 0, lay.intra); }, lay.intra));
    std::vector<int> counts(static_cast<std::size_t>(lay.k)), displs(static_cast<std::size_t>(lay.k));
    for (int i = 0; i < lay.k; ++i) {
      displs[static_cast<std::size_t>(i)] = static_cast<int>(static_cast<int64_t>(n) * i / lay.k);
      counts[static_cast<std::size_t>(i)] =
          static_cast<int>(static_cast<int64_t>(n) * (i + 1) / lay.k) - displs[static_cast<std::size_t>(i)];
    }
    gather.emplace_back(bytes, timed_collective(
                                   [&] {
                                     MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_BYTE, buf.data(), counts.data(), displs.data(),
                                                    MPI_BYTE, lay.intra);
                                   },
                                   lay.intra));
  }
  profile.set("bcast" + tail, fit_affine(bcast));
  profile.set("allgather" + tail, fit_affine(gather));
}

// Starts each bucket's averaging once its parameters' gradients are final, in bucket order, as the
// multi-node stage does, but on arrays of its own (the model's gradients stay as they are).
class BucketLauncher final : public rensa::GradHook {
 public:
  explicit BucketLauncher(const std::vector<rensa::mn::GradientBucket>& buckets) {
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      for (const Variable& p : buckets[b].params) where_[p.id()] = b;
      need_.push_back(buckets[b].params.size());
    }
  }
  void arm(std::function<void(std::size_t)> launch) {
    launch_ = std::move(launch);
    left_ = need_;
    next_ = 0;
  }
  void grad_final(const Variable& v) override {
    const auto it = where_.find(v.id());
    if (it == where_.end() || !launch_) return;
    --left_[it->second];
    while (next_ < left_.size() && left_[next_] == 0) launch_(next_++);
  }
  // Starts what is left (parameters without a gradient this step) and disarms.
  void finish() {
    while (next_ < left_.size()) launch_(next_++);
    launch_ = nullptr;
  }

 private:
  std::unordered_map<rensa::VariableId, std::size_t> where_;
  std::vector<std::size_t> need_, left_;
  std::size_t next_ = 0;
  std::function<void(std::size_t)> launch_;
};

// What the buckets' averaging adds when it runs beside the computation, over `base` (the host's k
// ranks, or every rank of 2 hosts across a link): beside backward (overlap: each bucket starts when
// its gradients are final, as the multi-node stage starts it) and beside a whole step (double
// buffering: every gradient in one collective, started before it). Each through each communicator
// of `names` over `base` less the same through the dummy one, so what the stage's own work costs
// (packing, the thread's hand-offs) cancels, as it is in the dummy step already; paired in each
// repeat, the median. The model compares it with what it charges for the same collectives run
// alone (cost_model.cpp): without a free core the difference is not zero, and it does not follow
// from the parts (the communication thread's wake-ups, each collective waiting for the other ranks'
// threads to get a core, the cores taken from the computation; at more ranks than cores, the idle
// time it fills; over TCP, the link idling while the thread waits for a core, or moving what the
// socket buffers hold meanwhile). The dummy's runs are in lockstep over `base` (a barrier after
// each), as the collectives hold the others: the difference leaves out the waiting for the slowest
// rank, which the model's straggle term charges (the entry says "baseline": "lockstep"; older
// profiles' entries, against free-running dummy steps, hold it). Every rank of the job calls it;
// `key(name, wire)` names each entry.
void measure_beside(const Workload& w, Profile& profile, MPI_Comm base, const std::vector<std::string>& names,
                    const std::function<std::string(const std::string&, const std::string&)>& key) {
  Built b = build(w);
  b.optimizer->setup(*b.model);
  const auto plan = rensa::mn::plan_gradient_buckets(*b.model, rensa::mn::MultiNodeOptimizerOptions{}.bucket_cap);
  std::vector<rensa::Array> grads;
  for (const auto& bucket : plan) grads.push_back(rensa::Array::zeros({bucket.elements}));
  std::vector<rensa::mn::Communicator::Request> requests(grads.size());
  const auto launcher = std::make_shared<BucketLauncher>(plan);
  for (const auto& bucket : plan) {
    for (const Variable& p : bucket.params) p.add_grad_hook(launcher);
  }
  const auto beside_backward = [&](rensa::mn::Communicator& comm) {
    b.model->cleargrads();
    rensa::Variable loss = b.loss();
    launcher->arm([&](std::size_t i) { requests[i] = comm.start_mean_grad({grads[i]}); });
    loss.backward();
    launcher->finish();
    for (auto& r : requests) r.wait();
  };
  // As the stage double-buffers without overlap: every gradient in one collective.
  const auto beside_step = [&](rensa::mn::Communicator& comm) {
    rensa::mn::Communicator::Request all = comm.start_mean_grad(grads);
    b.optimizer->update([&] { return b.loss(); });
    all.wait();
  };
  for (const std::string& wire : kWires) {
    const rensa::mn::CommunicatorOptions options{.allreduce_grad_dtype = rensa::dtype_from_name(wire)};
    // The dummy first, then each of `names`.
    std::vector<rensa::mn::Communicator> comms{rensa::mn::create_communicator("dummy", base, options)};
    for (const std::string& name : names) comms.push_back(rensa::mn::create_communicator(name, base, options));
    std::vector<std::function<void()>> fns;
    for (std::size_t i = 0; i < comms.size(); ++i) {
      rensa::mn::Communicator& comm = comms[i];
      const bool lockstep = i == 0;
      fns.emplace_back([&, lockstep] {
        beside_backward(comm);
        if (lockstep) MPI_Barrier(base);
      });
      fns.emplace_back([&, lockstep] {
        beside_step(comm);
        if (lockstep) MPI_Barrier(base);
      });
    }
    for (const auto& fn : fns) {
      for (int i = 0; i < w.warmup; ++i) fn();
    }
    std::vector<std::vector<double>> overlap(names.size()), double_buffering(names.size());
    for (int r = 0; r < w.repeats; ++r) {
      std::vector<double> t;
      for (const auto& fn : fns) t.push_back(timed(fn, w.steps, 0, 1, MPI_COMM_WORLD));
      for (std::size_t n = 0; n < names.size(); ++n) {
        overlap[n].push_back(t[2 * (n + 1)] - t[0]);
        double_buffering[n].push_back(t[2 * (n + 1) + 1] - t[1]);
      }
    }
    for (std::size_t n = 0; n < names.size(); ++n) {
      std::sort(overlap[n].begin(), overlap[n].end());
      std::sort(double_buffering[n].begin(), double_buffering[n].end());
      profile.set(key(names[n], wire), {{"overlap", overlap[n][overlap[n].size() / 2]},
                                        {"double_buffering", double_buffering[n][double_buffering[n].size() / 2]},
                                        {"baseline", "lockstep"}});
    }
  }
  for (const auto& bucket : plan) {
    for (const Variable& p : bucket.params) p.remove_grad_hook(launcher.get());
  }
}

// Between steps' collectives the link idles for the step's compute (`gap`): timed the same way.
void measure_inter(Profile& profile, const Layout& lay, const std::string& link, const nlohmann::json& buckets,
                   double gap) {
  std::vector<char> buf(static_cast<std::size_t>(std::max(kLadder.back(), sizes_for(buckets, "float32").back())));
  for (const std::string& wire : kWires) {
    const rensa::Dtype dt = rensa::dtype_from_name(wire);
    std::vector<std::pair<double, double>> pts;
    for (const double bytes : sizes_for(buckets, wire)) {
      const int n = static_cast<int>(static_cast<int64_t>(bytes) / static_cast<int64_t>(rensa::itemsize(dt)));
      std::fill(buf.begin(), buf.end(), 0);
      pts.emplace_back(bytes, timed_collective(
                                  [&] {
                                    MPI_Allreduce(MPI_IN_PLACE, buf.data(), n, rensa::mn::detail::mpi_type(dt),
                                                  rensa::mn::detail::mpi_op(dt, rensa::mn::ReduceOp::sum), lay.leaders);
                                  },
                                  lay.leaders, gap));
    }
    profile.set("inter M" + std::to_string(lay.hosts) + " " + link + " " + wire, fit_affine(pts));
  }
}

}  // namespace

Workload resolved(Workload w) {
  if (w.model != "mlp" && w.model != "cnn" && w.model != "resnet") {
    throw std::runtime_error("bench_scaling_model: unknown model '" + w.model + "' (mlp, cnn, resnet)");
  }
  if (w.batch == 0) w.batch = w.model == "mlp" ? 100 : 64;
  return w;
}

void measure(const Workload& w0, const std::string& path, const std::string& link) {
  const Workload w = resolved(w0);
  rensa::set_num_threads(w.threads);
  const Layout lay;
  Profile profile = lay.rank == 0 ? Profile::load(path) : Profile{};
  measure_compute(w, profile, lay);
  const nlohmann::json buckets = profile.at(buckets_key(w.model), "");  // every rank set it
  if (lay.k > 1) {
    measure_intra(profile, lay, buckets);
    measure_beside(w, profile, lay.intra, {"flat"},
                   [&](const std::string&, const std::string& wire) { return beside_key(lay.k, lay.procs, wire); });
  }
  if (lay.hosts > 1) {
    if (link.empty()) throw std::runtime_error("bench_scaling_model measure: several hosts need --link NAME");
    if (lay.k == 1) {
      const double gap = profile.at(compute_key(w.model, w.batch, w.threads, lay.procs, "float32"), "").at("step");
      measure_inter(profile, lay, link, buckets, gap);
      measure_beside(w, profile, lay.leaders, {"flat"}, [&](const std::string&, const std::string& wire) {
        return beside_link_key(lay.hosts, 1, lay.procs, "flat", link, wire);
      });
    } else {
      // The link's fits need one rank per host; what the collectives add beside the computation is
      // measured at this load too, over every rank (the host's part and the link's together), for
      // each communicator: each crosses the link its own way.
      measure_beside(w, profile, MPI_COMM_WORLD, {"flat", "hierarchical", "two_dimensional"},
                     [&](const std::string& name, const std::string& wire) {
                       return beside_link_key(lay.hosts, lay.k, lay.procs, name, link, wire);
                     });
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (lay.rank == 0) {
    profile.machine()["cpu"] = cpu_model();
    profile.machine()["cores"] = static_cast<int>(std::thread::hardware_concurrency());
    char date[16];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
    profile.machine()["date"] = date;
    profile.save(path);
    std::printf("%s: %s, %d ranks on %d hosts\n", path.c_str(), w.model.c_str(), lay.size, lay.hosts);
  }
}

double time_steps(const Workload& w0, const std::string& communicator, const std::string& wire,
                  const std::string& mode) {
  const Workload w = resolved(w0);
  if (mode != "overlap" && mode != "no_overlap" && mode != "double_buffering") {
    throw std::runtime_error("bench_scaling_model step: unknown mode '" + mode +
                             "' (overlap, no_overlap, double_buffering)");
  }
  rensa::set_num_threads(w.threads);
  Built b = build(w);
  auto comm = rensa::mn::create_communicator(communicator, {.allreduce_grad_dtype = rensa::dtype_from_name(wire)});
  rensa::mn::add_multi_node_stage(*b.optimizer, comm,
                                  {.double_buffering = mode == "double_buffering", .overlap = mode == "overlap"});
  b.optimizer->setup(*b.model);
  return timed([&] { b.optimizer->update([&] { return b.loss(); }); }, w.steps, w.warmup, w.repeats, MPI_COMM_WORLD);
}

}  // namespace rensa_bench::scaling
