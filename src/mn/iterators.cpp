// Multi-node and synchronized iterators: the master's batches broadcast to every rank, or every rank
// shuffling with rank 0's seed.
#include "rensa/mn/iterators.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "rensa/core/error.h"
#include "rensa/datasets/concat_examples.h"
#include "rensa/mn/object.h"

namespace rensa::mn {
namespace {

// Control record broadcast before each batch.
enum Ctrl { kStop, kNewEpoch, kEpoch, kEpochDetail, kPrevious, kColumns, kBatch, kCtrlSize };

class MultiNodeIterator final : public iterators::Iterator {
 public:
  MultiNodeIterator(std::unique_ptr<iterators::Iterator> actual, Communicator comm, int master)
      : actual_(std::move(actual)), comm_(std::move(comm)), master_(master) {
    const bool is_master = comm_.rank() == master_;
    const int64_t mine = is_master ? (actual_ ? actual_->batch_size() : -1) : 0;
    batch_size_ = bcast_obj(comm_, mine, master_);
    RENSA_CHECK(batch_size_ >= 0, ValueError, "create_multi_node_iterator: the master (rank ", master_,
                ") has a null actual_iterator");
  }

  std::optional<iterators::Batch> next() override {
    const bool is_master = comm_.rank() == master_;
    std::vector<double> ctrl(kCtrlSize, 0.0);
    std::vector<Array> cols;
    if (is_master) {
      std::optional<iterators::Batch> batch = actual_->next();
      ctrl[kStop] = batch ? 0 : 1;
      if (batch) {
        cols = datasets::concat_examples(*batch);
        ctrl[kBatch] = static_cast<double>(batch->size());
        ctrl[kColumns] = static_cast<double>(cols.size());
      }
      ctrl[kNewEpoch] = actual_->is_new_epoch() ? 1 : 0;
      ctrl[kEpoch] = static_cast<double>(actual_->epoch());
      ctrl[kEpochDetail] = actual_->epoch_detail();
      const auto prev = actual_->previous_epoch_detail();
      ctrl[kPrevious] = prev ? *prev : std::numeric_limits<double>::quiet_NaN();
    }
    ctrl = bcast_obj(comm_, ctrl, master_);
    is_new_epoch_ = ctrl[kNewEpoch] != 0;
    epoch_ = static_cast<int64_t>(ctrl[kEpoch]);
    epoch_detail_ = ctrl[kEpochDetail];
    previous_ = std::isnan(ctrl[kPrevious]) ? std::nullopt : std::optional<double>(ctrl[kPrevious]);
    if (ctrl[kStop] != 0) return std::nullopt;
    const auto n_cols = static_cast<std::size_t>(ctrl[kColumns]);
    const auto n = static_cast<int64_t>(ctrl[kBatch]);
    cols.resize(n_cols);
    for (std::size_t c = 0; c < n_cols; ++c) cols[c] = comm_.bcast(is_master ? cols[c] : Array(), master_);
    return batch_of(cols, n);
  }

  int64_t epoch() const override { return epoch_; }
  double epoch_detail() const override { return epoch_detail_; }
  std::optional<double> previous_epoch_detail() const override { return previous_; }
  bool is_new_epoch() const override { return is_new_epoch_; }
  int64_t batch_size() const override { return batch_size_; }
  void reset() override {
    if (actual_ && comm_.rank() == master_) actual_->reset();
    epoch_ = 0;
    epoch_detail_ = 0;
    previous_.reset();
    is_new_epoch_ = false;
  }
  void serialize(serializers::Serializer& s) override {
    if (actual_ && comm_.rank() == master_) actual_->serialize(s);
  }

 private:
  static iterators::Batch batch_of(const std::vector<Array>& cols, int64_t n) {
    iterators::Batch batch(static_cast<std::size_t>(n));
    for (int64_t b = 0; b < n; ++b) {
      for (const Array& col : cols) {
        const Shape& s = col.shape();
        Shape tail(std::vector<int64_t>(s.begin() + 1, s.end()));
        batch[static_cast<std::size_t>(b)].push_back(col.slice(0, b, b + 1).reshape(tail));
      }
    }
    return batch;
  }

  std::unique_ptr<iterators::Iterator> actual_;
  Communicator comm_;
  int master_;
  int64_t batch_size_ = 0, epoch_ = 0;
  double epoch_detail_ = 0;
  std::optional<double> previous_;
  bool is_new_epoch_ = false;
};

}  // namespace

std::unique_ptr<iterators::Iterator> create_multi_node_iterator(std::unique_ptr<iterators::Iterator> actual_iterator,
                                                                Communicator communicator, int rank_master) {
  RENSA_CHECK(communicator.valid(), ValueError, "create_multi_node_iterator: null communicator (default-constructed)");
  RENSA_CHECK(rank_master >= 0 && rank_master < communicator.size(), ValueError,
              "create_multi_node_iterator: rank_master ", rank_master, " is not a rank of a communicator of size ",
              communicator.size());
  if (communicator.rank() != rank_master) actual_iterator.reset();
  return std::make_unique<MultiNodeIterator>(std::move(actual_iterator), std::move(communicator), rank_master);
}

std::unique_ptr<iterators::SerialIterator> create_synchronized_iterator(const datasets::DatasetPtr& dataset,
                                                                        int64_t batch_size,
                                                                        const Communicator& communicator,
                                                                        iterators::SerialIteratorOptions options) {
  RENSA_CHECK(communicator.valid(), ValueError,
              "create_synchronized_iterator: null communicator (default-constructed)");
  const int64_t size = dataset ? dataset->size() : -1;
  const std::vector<int64_t> sizes = allgather_obj(communicator, size);
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    RENSA_CHECK(sizes[r] == sizes[0] && sizes[0] >= 0, ValueError, "create_synchronized_iterator: rank 0 has ",
                sizes[0] < 0 ? "no dataset" : rensa::detail::concat(sizes[0], " examples"), " but rank ", r, " has ",
                sizes[r] < 0 ? "no dataset" : rensa::detail::concat(sizes[r], " examples"));
  }
  // Rank 0's iterator draws (or takes) the seed; the others use it.
  // Its error, if any, goes to every rank so that none waits for the seed.
  std::pair<std::string, uint64_t> made{"", 0};
  std::unique_ptr<iterators::SerialIterator> it;
  if (communicator.rank() == 0) {
    try {
      it = std::make_unique<iterators::SerialIterator>(dataset, batch_size, options);
      made.second = it->seed();
    } catch (const Error& e) {
      made.first = e.what();
    }
  }
  made = bcast_obj(communicator, made, 0);
  RENSA_CHECK(made.first.empty(), ValueError,
              "create_synchronized_iterator: rank 0 could not make its iterator: ", made.first);
  const uint64_t seed = made.second;
  if (communicator.rank() != 0) {
    options.seed = seed;
    it = std::make_unique<iterators::SerialIterator>(dataset, batch_size, options);
  }
  return it;
}

}  // namespace rensa::mn
