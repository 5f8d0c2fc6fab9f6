// rensa::mn::timeline: the per-rank and merged trace files, clock offsets, the slowest rank.
#include "rensa/mn/timeline.h"

#include <algorithm>
#include <filesystem>

#include "rensa/training/trainer.h"
#include "src/serializers/atomic_file.h"

namespace rensa::mn {
namespace {

void write_file(const std::filesystem::path& path, const std::string& text) {
  serializers::detail::write_file_atomically(path.string(), text, "mn::timeline");
}

class MultiNodeTimeline : public extensions::Timeline {
 public:
  MultiNodeTimeline(Communicator comm, extensions::TimelineOptions options)
      : Timeline(std::move(options)), comm_(std::move(comm)) {}

  void initialize(training::Trainer& trainer) override {
    Timeline::initialize(trainer);
    // This rank's clock minus rank 0's, read by every rank right after a barrier (the median of 5
    // rounds, so one late wake-up does not shift a rank).
    std::vector<int64_t> offsets;
    for (int round = 0; round < 5; ++round) {
      comm_.barrier();
      const int64_t mine = timeline::now_ns();
      const Array first = comm_.bcast(Array::from_vector(std::vector<int64_t>{mine}), 0);
      offsets.push_back(mine - first.to_vector<int64_t>()[0]);
    }
    std::nth_element(offsets.begin(), offsets.begin() + 2, offsets.end());
    offset_ns_ = offsets[2];
    // Rank 0's recording began at its clock's zero of the merged file.
    zero_ns_ = comm_.bcast(Array::from_vector(std::vector<int64_t>{recording_begin_ns() - offset_ns_}), 0)
                   .to_vector<int64_t>()[0];
  }

 protected:
  void report(training::Trainer& trainer, const extensions::TimelineSummary& s) override {
    Timeline::report(trainer, s);
    const auto steps = comm_.allgather(Array::from_vector(std::vector<double>{s.step}));
    int slowest = 0;
    double worst = -1;
    for (std::size_t r = 0; r < steps.size(); ++r) {
      const double v = steps[r].to_vector<double>()[0];
      if (v > worst) {
        worst = v;
        slowest = static_cast<int>(r);
      }
    }
    auto& obs = trainer.observation();
    obs["timeline/slowest_rank"] = slowest;
    obs["timeline/slowest_step"] = worst;
  }

  // After an error the other ranks may not reach finalize: no collective then, only this rank's file.
  void on_error(training::Trainer& trainer, const std::exception_ptr& error) override {
    failed_ = true;
    Timeline::on_error(trainer, error);
  }

  void write(training::Trainer& trainer, const timeline::Recording& recording) override {
    const int rank = comm_.rank();
    const std::filesystem::path name(options().filename);
    const std::filesystem::path dir(trainer.out());
    const std::string process = "rank " + std::to_string(rank);
    write_file(dir / (name.stem().string() + ".rank" + std::to_string(rank) + name.extension().string()),
               extensions::trace_document({extensions::trace_events(recording, rank, process, recording.begin_ns())}));
    if (failed_) return;
    const std::vector<std::string> all =
        comm_.gather_bytes(extensions::trace_events(recording, rank, process, zero_ns_, offset_ns_), 0);
    if (rank == 0) write_file(dir / name, extensions::trace_document(all));
  }

 private:
  Communicator comm_;
  int64_t offset_ns_ = 0;
  int64_t zero_ns_ = 0;
  bool failed_ = false;
};

}  // namespace

std::shared_ptr<extensions::Timeline> timeline(Communicator comm, extensions::TimelineOptions options) {
  RENSA_CHECK(comm.valid(), ValueError, "mn::timeline: null communicator (default-constructed)");
  return std::make_shared<MultiNodeTimeline>(std::move(comm), std::move(options));
}

}  // namespace rensa::mn
