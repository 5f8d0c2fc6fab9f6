// GEMM micro-benchmark: OpenBLAS (cblas_sgemm) vs oneDNN (dnnl_sgemm).
//
// Standalone: uses no rensa headers. Times single-precision, row-major
// C = op(A) * B on the matrix shapes of an MLP training step (batch 100,
// 784-1000-1000-10) and on two large squares, at 1 and 2 threads.
//
// Build by hand (Debian 12: g++ 12, libopenblas-openmp-dev, libdnnl-dev,
// libbenchmark-dev), from the repository root:
//
//   g++ -std=c++20 -O2 -fopenmp bench/gemm.cpp -o bench_gemm $(pkg-config --cflags --libs openblas) -ldnnl -lbenchmark -lpthread
//
// Run:
//
//   ./bench_gemm --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Before any benchmark runs, main() checks that both libraries produce the
// same C on every shape (and that both match a naive double-precision
// reference on one transposed shape); the program exits with status 1 on a
// mismatch.
//
// Threads: the benchmark argument "threads" is applied with
// omp_set_num_threads() only. Both libraries run on the one libgomp pool:
// OpenBLAS is its OpenMP build (0.3.21 reads omp_get_max_threads() on every
// call) and oneDNN is built with the OMP CPU runtime.
//
// Counters per benchmark:
//   GFLOPS      2*M*N*K per call, as a rate over wall-clock time (UseRealTime)
//   omp_threads omp_get_max_threads() seen inside the benchmark
//   cpu_util    process CPU time / wall time over the timed loop (about 1.0
//               when one core works, about 2.0 when two do; OpenMP
//               spin-waiting also counts)

#include <benchmark/benchmark.h>
#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

struct Shape {
  const char* name;
  long M, K, N;
  bool transA;  // A stored as [K, M] row-major and used transposed
};

// C[M,N] = op(A)[M,K] * B[K,N]
const Shape kShapes[] = {
    {"fwd_x_W1", 100, 784, 1000, false},     // x[100,784] W1[784,1000]
    {"fwd_h_W2", 100, 1000, 1000, false},    // h[100,1000] W2[1000,1000]
    {"fwd_h_W3", 100, 1000, 10, false},      // h[100,1000] W3[1000,10]
    {"bwd_gy_W", 100, 1000, 784, false},     // gy[100,1000] W[1000,784]
    {"bwd_gyT_x", 1000, 100, 784, true},     // gy^T[1000,100] x[100,784]
    {"bwd_gyT_h", 1000, 100, 1000, true},    // gy^T[1000,100] h[100,1000]
    {"square_1024", 1024, 1024, 1024, false},
    {"square_2048", 2048, 2048, 2048, false},
};

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<float[], FreeDeleter>;

Buffer alloc(long n) {
  const std::size_t bytes = ((n * sizeof(float) + 63) / 64) * 64;
  return Buffer(static_cast<float*>(std::aligned_alloc(64, bytes)));
}

struct Operands {
  Buffer a, b, c;
  long lda, ldb, ldc;
};

Operands make_operands(const Shape& s, unsigned seed) {
  Operands o{alloc(s.M * s.K), alloc(s.K * s.N), alloc(s.M * s.N),
             s.transA ? s.M : s.K, s.N, s.N};
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (long i = 0; i < s.M * s.K; ++i) o.a[i] = dist(gen);
  for (long i = 0; i < s.K * s.N; ++i) o.b[i] = dist(gen);
  std::fill_n(o.c.get(), s.M * s.N, 0.0f);
  return o;
}

void gemm_openblas(const Shape& s, Operands& o) {
  cblas_sgemm(CblasRowMajor, s.transA ? CblasTrans : CblasNoTrans,
              CblasNoTrans, s.M, s.N, s.K, 1.0f, o.a.get(), o.lda, o.b.get(),
              o.ldb, 0.0f, o.c.get(), o.ldc);
}

void gemm_dnnl(const Shape& s, Operands& o) {
  // dnnl_sgemm is row-major.
  const dnnl_status_t st =
      dnnl_sgemm(s.transA ? 'T' : 'N', 'N', s.M, s.N, s.K, 1.0f, o.a.get(),
                 o.lda, o.b.get(), o.ldb, 0.0f, o.c.get(), o.ldc);
  if (st != dnnl_success) {
    std::fprintf(stderr, "dnnl_sgemm failed with status %d\n", int(st));
    std::abort();
  }
}

double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

double wall_seconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

template <void (*Gemm)(const Shape&, Operands&)>
void run_gemm(benchmark::State& state, const Shape& s) {
  const int threads = int(state.range(0));
  omp_set_num_threads(threads);
  Operands o = make_operands(s, 42);
  Gemm(s, o);  // warm-up: JIT kernels, thread pool, first-touch pages

  const double cpu0 = process_cpu_seconds();
  const double wall0 = wall_seconds();
  for (auto _ : state) {
    Gemm(s, o);
    benchmark::DoNotOptimize(o.c.get());
    benchmark::ClobberMemory();
  }
  const double cpu = process_cpu_seconds() - cpu0;
  const double wall = wall_seconds() - wall0;

  const double flops = 2.0 * double(s.M) * double(s.N) * double(s.K);
  state.counters["GFLOPS"] = benchmark::Counter(
      flops * 1e-9 * double(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["omp_threads"] = omp_get_max_threads();
  state.counters["cpu_util"] = wall > 0 ? cpu / wall : 0.0;
}

// max |C_openblas - C_dnnl| on every shape, and both against a naive
// double-precision reference on one transposed shape.
bool check_results() {
  omp_set_num_threads(omp_get_num_procs());
  bool ok = true;
  for (const Shape& s : kShapes) {
    Operands ob = make_operands(s, 7);
    Operands od = make_operands(s, 7);
    gemm_openblas(s, ob);
    gemm_dnnl(s, od);
    double diff = 0.0, mag = 0.0;
    for (long i = 0; i < s.M * s.N; ++i) {
      diff = std::max(diff, double(std::fabs(ob.c[i] - od.c[i])));
      mag = std::max(mag, double(std::fabs(ob.c[i])));
    }
    const double tol = 1e-5 * double(s.K);
    const bool good = diff <= tol && mag > 0.0;
    std::printf("check %-12s M=%-4ld K=%-4ld N=%-4ld transA=%c  max|C_blas - C_dnnl| = %.3g"
                "  (max|C| = %.3g, tol %.1g)%s\n",
                s.name, s.M, s.K, s.N, s.transA ? 'T' : 'N', diff, mag, tol,
                good ? "" : "  MISMATCH");
    ok = ok && good;

    if (s.transA && std::string(s.name) == "bwd_gyT_x") {
      double eb = 0.0, ed = 0.0;
      for (long i = 0; i < s.M; ++i)
        for (long j = 0; j < s.N; ++j) {
          double acc = 0.0;
          for (long k = 0; k < s.K; ++k)
            acc += double(ob.a[k * ob.lda + i]) * double(ob.b[k * ob.ldb + j]);
          eb = std::max(eb, std::fabs(acc - double(ob.c[i * s.N + j])));
          ed = std::max(ed, std::fabs(acc - double(od.c[i * s.N + j])));
        }
      const bool ref_good = eb <= tol && ed <= tol;
      std::printf("check %-12s vs naive reference: OpenBLAS %.3g, oneDNN %.3g%s\n",
                  s.name, eb, ed, ref_good ? "" : "  MISMATCH");
      ok = ok && ref_good;
    }
  }
  return ok;
}

void print_environment() {
  const dnnl_version_t* v = dnnl_version();
  const char* rt = v->cpu_runtime == DNNL_RUNTIME_OMP        ? "OMP"
                   : v->cpu_runtime == DNNL_RUNTIME_TBB      ? "TBB"
                   : v->cpu_runtime == DNNL_RUNTIME_SEQ      ? "SEQ"
                   : v->cpu_runtime == DNNL_RUNTIME_THREADPOOL ? "THREADPOOL"
                                                              : "other";
  std::printf("oneDNN %d.%d.%d (hash %s), cpu_runtime=%u (%s)\n", v->major,
              v->minor, v->patch, v->hash ? v->hash : "-", v->cpu_runtime, rt);
  std::printf("OpenBLAS config: %s\n", openblas_get_config());
  std::printf("OpenBLAS core: %s, openblas_get_parallel()=%d (2 = OpenMP)\n",
              openblas_get_corename(), openblas_get_parallel());
  std::printf("omp_get_num_procs()=%d, omp_get_max_threads()=%d at start\n",
              omp_get_num_procs(), omp_get_max_threads());
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  print_environment();
  if (!check_results()) {
    std::fprintf(stderr, "result check failed: OpenBLAS and oneDNN disagree\n");
    return 1;
  }
  std::fflush(stdout);

  for (const Shape& s : kShapes) {
    const std::string dims = "/" + std::to_string(s.M) + "x" +
                             std::to_string(s.K) + "x" + std::to_string(s.N) +
                             (s.transA ? "_tA" : "");
    for (int lib = 0; lib < 2; ++lib) {
      const std::string name =
          std::string(lib == 0 ? "openblas/" : "onednn/") + s.name + dims;
      auto* b = lib == 0
                    ? benchmark::RegisterBenchmark(name.c_str(),
                                                   run_gemm<gemm_openblas>, s)
                    : benchmark::RegisterBenchmark(name.c_str(),
                                                   run_gemm<gemm_dnnl>, s);
      b->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime()->Unit(
          benchmark::kMicrosecond);
    }
  }

  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
