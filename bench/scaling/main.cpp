// bench_scaling_model: a cost model of data-parallel training (docs/scaling.md).
//   measure  (under mpirun) times the model's step on this host at the job's load and the
//            collectives it runs, adding them to a profile:
//              scripts/mpirun -n 2 build/release/bench/bench_scaling_model measure --model mlp -p prof.json
//   step     (under mpirun) times real training steps through a communicator, to check predictions:
//              scripts/mpirun -n 2 build/release/bench/bench_scaling_model step --model mlp --communicator flat
//   median   the median of several profiles of this machine, one per round of measure runs:
//              build/release/bench/bench_scaling_model median -o prof.json prof1.json prof2.json prof3.json
//   predict  the step time, efficiency and share of the dummy ceiling of N ranks on M hosts:
//              build/release/bench/bench_scaling_model predict -p prof.json --ranks 2 --communicator flat
// bench/scaling_check runs them over every configuration this machine can hold.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <vector>

#include "bench/scaling/cost_model.h"
#include "bench/scaling/measure.h"
#include "bench/scaling/profile.h"
#include "rensa/mn.h"

namespace S = rensa_bench::scaling;

namespace {

void add_workload(CLI::App* app, S::Workload& w) {
  app->add_option("-m,--model", w.model, "mlp (train_mnist's), cnn or resnet (train_cnn's)")
      ->check(CLI::IsMember({"mlp", "cnn", "resnet"}));
  app->add_option("-b,--batchsize", w.batch, "Examples per rank (default 100 for mlp, else 64)")
      ->check(CLI::Range(int64_t{1}, int64_t{100000}));
  app->add_option("-t,--threads", w.threads, "Threads per rank")->check(CLI::Range(1, 1024));
  app->add_option("--steps", w.steps, "Timed steps per repeat")->check(CLI::Range(1, 100000));
  app->add_option("--warmup", w.warmup, "Untimed steps first")->check(CLI::Range(0, 100000));
  app->add_option("--repeats", w.repeats, "Repeats (the median counts)")->check(CLI::Range(1, 1000));
}

const std::vector<std::string> kModes = {"overlap", "no_overlap", "double_buffering"};
const std::vector<std::string> kWires = {"float32", "float16", "bfloat16"};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Cost model of data-parallel training: measure a host, time steps, predict N ranks on M hosts"};
  app.require_subcommand(1);
  S::Workload w;
  std::string profile_path = "scaling_profile.json", link, communicator = "flat", wire = "float32", mode = "overlap";

  CLI::App* measure = app.add_subcommand("measure", "Add this host's measurements at the job's load to a profile");
  add_workload(measure, w);
  measure->add_option("-p,--profile", profile_path, "Profile file (created or added to)");
  measure->add_option("--link", link, "Name of the link between the hosts (with several hosts), e.g. 1gbit");

  CLI::App* step = app.add_subcommand("step", "Time training steps through a communicator");
  add_workload(step, w);
  step->add_option("-c,--communicator", communicator)->check(CLI::IsMember(S::modeled_communicators()));
  step->add_option("-g,--grad-dtype", wire, "Gradients on the wire")->check(CLI::IsMember(kWires));
  step->add_option("--mode", mode)->check(CLI::IsMember(kModes));

  CLI::App* median = app.add_subcommand("median", "Write the median of several profiles of this machine");
  std::vector<std::string> median_inputs;
  median
      ->add_option("-o,--output", profile_path,
                   "Profile file to write; entries it holds already stay, but for those the inputs hold")
      ->required();
  median->add_option("profiles", median_inputs, "Profiles to take the median of")->required()->check(CLI::ExistingFile);

  CLI::App* predict = app.add_subcommand("predict", "Predict the step time of N ranks on M hosts from a profile");
  S::Config c;
  std::vector<int> ranks{1};
  bool seconds_only = false;
  double link_alpha = -1, link_beta = -1;
  predict->add_option("-p,--profile", profile_path, "Profile file")->check(CLI::ExistingFile);
  predict->add_option("-m,--model", c.model)->check(CLI::IsMember({"mlp", "cnn", "resnet"}));
  predict->add_option("-b,--batchsize", c.batch, "Examples per rank (default 100 for mlp, else 64)")
      ->check(CLI::Range(int64_t{1}, int64_t{100000}));
  predict->add_option("-t,--threads", c.threads)->check(CLI::Range(1, 1024));
  predict->add_option("-n,--ranks", ranks, "Ranks (one line each)")->check(CLI::Range(1, 1 << 20));
  int per_host = 0;
  predict->add_option("--per-host", per_host, "Ranks per host (default: every rank on one host)")
      ->check(CLI::Range(1, 4096));
  predict->add_option("-c,--communicator", c.communicator)->check(CLI::IsMember(S::modeled_communicators()));
  predict->add_option("-g,--grad-dtype", c.wire)->check(CLI::IsMember(kWires));
  predict->add_option("--mode", c.mode)->check(CLI::IsMember(kModes));
  predict->add_option("--link", c.link, "The profile's inter-host link");
  predict->add_option("--cpu-link", c.cpu_link, "The link whose cost is all CPU time (default unshaped)");
  predict->add_option("--link-alpha", link_alpha, "A link not measured: latency of one message, seconds")
      ->check(CLI::Range(0.0, 1.0));
  predict->add_option("--link-beta", link_beta, "A link not measured: seconds per byte")->check(CLI::Range(0.0, 1.0));
  predict
      ->add_option("--machine-procs", c.machine_procs,
                   "Processes on the machine the compute was measured with (simulated hosts: all ranks)")
      ->check(CLI::Range(1, 4096));
  predict->add_option("--cores", c.cores, "Cores per host (default: the profile's machine)")
      ->check(CLI::Range(1, 4096));
  predict->add_flag("--offload", c.offload, "The link moves bytes without the cores (RDMA): its wire time may hide");
  predict->add_flag("--seconds", seconds_only, "Print only the step time in seconds");

  CLI11_PARSE(app, argc, argv);
  try {
    if (measure->parsed() || step->parsed()) {
      // MPI with threads, as training starts it (the multi-node optimizer's background thread).
      auto world = rensa::mn::create_communicator("flat", argc, argv);
      try {
        if (measure->parsed()) {
          S::measure(w, profile_path, link);
        } else {
          const double t = S::time_steps(w, communicator, wire, mode);
          if (world.rank() == 0) std::printf("%.6f s per step\n", t);
        }
      } catch (const std::exception& e) {  // the other ranks may wait in a collective: end them all
        std::fprintf(stderr, "bench_scaling_model: rank %d: %s\n", world.rank(), e.what());
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      return 0;
    }
    if (median->parsed()) {
      std::vector<S::Profile> profiles;
      for (const std::string& path : median_inputs) profiles.push_back(S::Profile::load(path));
      S::Profile out = S::Profile::load(profile_path);
      const S::Profile m = S::median_profile(profiles);
      for (auto it = m.entries().begin(); it != m.entries().end(); ++it) out.set(it.key(), it.value());
      out.machine() = m.machine();
      out.save(profile_path);
      return 0;
    }
    const S::Profile profile = S::Profile::load(profile_path);
    if (c.batch == 100 && c.model != "mlp") c.batch = 64;
    if (link_alpha >= 0 && link_beta >= 0) {
      c.link_alpha = link_alpha;
      c.link_beta = link_beta;
    }
    for (const int n : ranks) {
      c.ranks = n;
      const int k = per_host > 0 ? per_host : n;
      if (n % k != 0)
        throw std::runtime_error("predict: " + std::to_string(n) + " ranks do not fill hosts of " + std::to_string(k));
      c.hosts = n / k;
      const S::Prediction p = S::predict(profile, c);
      if (seconds_only) {
        std::printf("%.6f\n", p.step);
        continue;
      }
      std::printf(
          "%d ranks on %d hosts, %s, %s wire, %s: step %.2f ms (dummy %.2f, collectives %.2f cpu + %.2f wire, "
          "%.2f exposed, contention %.2f (link %.2f), straggle %.2f), efficiency %.3f, of dummy %.3f\n",
          n, c.hosts, c.communicator.c_str(), c.wire.c_str(), c.mode.c_str(), p.step * 1e3, p.dummy * 1e3,
          p.comm_cpu * 1e3, p.comm_wire * 1e3, p.exposed * 1e3, p.contention * 1e3, p.contention_link * 1e3,
          p.straggle * 1e3, p.efficiency, p.of_dummy);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_scaling_model: %s\n", e.what());
    return 1;
  }
  return 0;
}
