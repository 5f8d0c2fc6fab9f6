// How long training waits for a snapshot of 269 MB (four 4096 x 4096 float32 layers) with each
// writer: SimpleWriter writes (and fsyncs) before training goes on; ThreadWriter and
// ThreadQueueWriter copy the arrays and write on a thread. The write itself is waited for outside
// the timed region. Files go to the system's temporary directory.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "rensa/rensa.h"
#include "rensa/training.h"

namespace E = rensa::extensions;

namespace {

struct Counter : rensa::training::Updater {
  void update() override { ++iteration_; }
  int64_t epoch() const override { return 0; }
  double epoch_detail() const override { return 0.0; }
  bool is_new_epoch() const override { return false; }
  std::map<std::string, rensa::optimizers::Optimizer*> get_all_optimizers() override { return {}; }
};

template <class Writer>
void BM_Snapshot(benchmark::State& state) {
  rensa::Chain model;
  std::vector<std::shared_ptr<rensa::links::Linear>> layers;
  for (int i = 0; i < 4; ++i) {
    layers.push_back(std::make_shared<rensa::links::Linear>(4096, 4096));
    model.add_link("l" + std::to_string(i), layers.back());
  }
  const auto dir = std::filesystem::temp_directory_path() / "rensa_bench_snapshot";
  std::filesystem::create_directories(dir);
  Counter updater;
  rensa::training::Trainer trainer(updater, {1, "iteration"}, dir.string());
  auto writer = std::make_shared<Writer>();
  E::Snapshot snapshot =
      E::snapshot_object(model, "model_{.updater.iteration}.npz", {1, "iteration"}, {.writer = writer, .n_retains = 1});
  for (auto _ : state) {
    updater.update();
    snapshot(trainer);
    state.PauseTiming();
    writer->finalize();
    state.ResumeTiming();
  }
  state.SetBytesProcessed(state.iterations() * 4 * 4096 * 4097 * 4);
  std::filesystem::remove_all(dir);
}

BENCHMARK(BM_Snapshot<E::SimpleWriter>)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_Snapshot<E::ThreadWriter>)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_Snapshot<E::ThreadQueueWriter>)->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace

BENCHMARK_MAIN();
