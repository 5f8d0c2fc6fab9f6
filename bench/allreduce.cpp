// Sum-allreduce bandwidth of float32 buffers, 1 KiB to 256 MiB, MPI_Allreduce against rensa. Bus
// bandwidth as NCCL's tests define it: bytes / time * 2 (n - 1) / n, with the float32 bytes.
//   mpirun -n 2 build/release/bench/bench_allreduce [--max-mib 256] [--seconds 0.3] [--repeats 5]
// compares with rensa's shared-memory allreduce (what the communicators use within a host; every
// rank on one host);
//   ... bench_allreduce --communicator hierarchical [--wire float16]
// with gradient averaging (multi_node_mean_grad of one float32 parameter) through a communicator,
// gradients travelling as `--wire` (any hosts, e.g. the simulated ones of scripts/netns-cluster).
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "rensa/mn.h"
#include "src/mn/shm_allreduce.h"

namespace {

// Median seconds per call of `fn` (each of `repeats` timings runs it enough times to last ~seconds).
double time_call(const std::function<void()>& fn, double seconds, int repeats) {
  fn();  // warm up (and first-touch the buffers)
  // Agree on an iteration count from one timed call, so every rank runs the same number.
  double t0 = MPI_Wtime();
  fn();
  double one = MPI_Wtime() - t0;
  MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  const int iters = std::max(1, static_cast<int>(seconds / std::max(one, 1e-7)));
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) fn();
    double t = (MPI_Wtime() - t0) / iters;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    times.push_back(t);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

std::string human(std::size_t bytes) {
  char buf[32];
  if (bytes >= (std::size_t{1} << 20)) {
    std::snprintf(buf, sizeof buf, "%zu MiB", bytes >> 20);
  } else {
    std::snprintf(buf, sizeof buf, "%zu KiB", bytes >> 10);
  }
  return buf;
}

// MPI_Allreduce against multi_node_mean_grad through the communicator `name`, gradients on the
// wire as `wire`.
void run_communicator(const std::string& name, const std::string& wire, std::size_t max_mib, double seconds,
                      int repeats) {
  rensa::mn::Communicator comm =
      rensa::mn::create_communicator(name, {.allreduce_grad_dtype = rensa::dtype_from_name(wire)});
  const int size = comm.size();
  const double factor = 2.0 * (size - 1) / size;
  if (comm.rank() == 0) {
    std::printf(
        "float32 gradient averaging, %d ranks on %d hosts, %s communicator, %s on the wire; bus "
        "bandwidth in GB/s (median of %d)\n",
        size, comm.inter_size(), name.c_str(), wire.c_str(), repeats);
    std::printf("%10s %16s %16s %8s\n", "size", "MPI_Allreduce", "rensa", "ratio");
  }
  for (std::size_t bytes = 1024; bytes <= (max_mib << 20); bytes *= 4) {
    const auto n = static_cast<int64_t>(bytes / sizeof(float));
    std::vector<float> buf(static_cast<std::size_t>(n), 1.0f);
    const double t_mpi = time_call(
        [&] { MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); },
        seconds, repeats);
    rensa::Link link;
    rensa::Variable p = link.add_param("p", rensa::Array::zeros({n}, rensa::Dtype::float32));
    p.set_grad(rensa::Array::full({n}, 1.0 + comm.rank(), rensa::Dtype::float32));
    const double t_rensa = time_call([&] { comm.multi_node_mean_grad(link); }, seconds, repeats);
    if (comm.rank() == 0) {
      const double bw_mpi = static_cast<double>(bytes) / t_mpi * factor / 1e9;
      const double bw_rensa = static_cast<double>(bytes) / t_rensa * factor / 1e9;
      std::printf("%10s %16.2f %16.2f %8.2f\n", human(bytes).c_str(), bw_mpi, bw_rensa, bw_rensa / bw_mpi);
      std::fflush(stdout);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::size_t max_mib = 256;
  double seconds = 0.3;
  int repeats = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--max-mib")) max_mib = std::strtoul(argv[i + 1], nullptr, 10);
    if (!std::strcmp(argv[i], "--seconds")) seconds = std::strtod(argv[i + 1], nullptr);
    if (!std::strcmp(argv[i], "--repeats")) repeats = std::atoi(argv[i + 1]);
  }
  std::string communicator, wire = "float32";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--communicator")) communicator = argv[i + 1];
    if (!std::strcmp(argv[i], "--wire")) wire = argv[i + 1];
  }
  if (!communicator.empty()) {
    run_communicator(communicator, wire, max_mib, seconds, repeats);
    MPI_Finalize();
    return 0;
  }
  MPI_Comm intra;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &intra);
  int intra_size = 0;
  MPI_Comm_size(intra, &intra_size);
  if (intra_size != size) {
    if (rank == 0) std::fprintf(stderr, "bench_allreduce: run every rank on one host\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  {
    rensa::mn::detail::ShmAllreduce shm;
    if (!shm.init(intra)) {
      if (rank == 0) std::fprintf(stderr, "bench_allreduce: the shared-memory segment could not be mapped\n");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const double factor = 2.0 * (size - 1) / size;
    if (rank == 0) {
      std::printf("float32 sum-allreduce, %d ranks; bus bandwidth in GB/s (median of %d)\n", size, repeats);
      std::printf("%10s %16s %16s %8s\n", "size", "MPI_Allreduce", "rensa shm", "ratio");
    }
    for (std::size_t bytes = 1024; bytes <= (max_mib << 20); bytes *= 4) {
      const std::size_t n = bytes / sizeof(float);
      std::vector<float> buf(n, 1.0f + static_cast<float>(rank));
      const double t_mpi = time_call(
          [&] { MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); },
          seconds, repeats);
      std::fill(buf.begin(), buf.end(), 1.0f + static_cast<float>(rank));
      const double t_shm = time_call(
          [&] {
            shm.allreduce(buf.data(), buf.data(), static_cast<int64_t>(n), rensa::Dtype::float32,
                          rensa::mn::ReduceOp::sum);
          },
          seconds, repeats);
      // Check the result once: ones plus twos ... summed, then summed again by each later call.
      std::vector<float> check(n, 1.0f + static_cast<float>(rank));
      shm.allreduce(check.data(), check.data(), static_cast<int64_t>(n), rensa::Dtype::float32,
                    rensa::mn::ReduceOp::sum);
      const float expected = static_cast<float>(size * (size + 1) / 2);
      if (check.front() != expected || check.back() != expected) {
        std::fprintf(stderr, "bench_allreduce: rank %d: wrong sum %g (expected %g)\n", rank, check.back(), expected);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      if (rank == 0) {
        const double bw_mpi = static_cast<double>(bytes) / t_mpi * factor / 1e9;
        const double bw_shm = static_cast<double>(bytes) / t_shm * factor / 1e9;
        std::printf("%10s %16.2f %16.2f %8.2f\n", human(bytes).c_str(), bw_mpi, bw_shm, bw_shm / bw_mpi);
        std::fflush(stdout);
      }
    }
  }
  MPI_Comm_free(&intra);
  MPI_Finalize();
  return 0;
}
