// scatter_index and scatter_dataset: every rank agrees on the root's size, order and shard rule,
// then takes its shard as a view (or receives it from the root when it has no dataset).
#include "rensa/datasets/image_dataset.h"
#include "rensa/mn/scatter.h"

#include <cstring>
#include <sstream>
#include <utility>

#include "rensa/core/error.h"
#include "rensa/core/random.h"
#include "rensa/datasets/concat_examples.h"
#include "rensa/datasets/sub_dataset.h"
#include "rensa/datasets/tuple_dataset.h"

namespace rensa::mn {
namespace {

constexpr int kShardTag = 7301;

/// The split every rank uses (the root's settings).
struct Plan {
  int64_t n = 0;
  bool shuffle = false;
  uint64_t seed = 0;
  bool force_equal_length = true;
  std::vector<int64_t> sizes;  // each rank's dataset size (-1: none)
};

std::string list(const std::vector<int64_t>& v) {
  std::ostringstream os;
  os << "[";
  for (std::size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

// One allgather of every rank's settings; every rank then checks the same things, so they throw
// together instead of leaving some ranks waiting.
Plan agree(const char* who, int64_t n_local, Communicator& comm, const ScatterOptions& o, bool allow_missing) {
  const int size = comm.size();
  RENSA_CHECK(o.root >= 0 && o.root < size, ValueError, who, ": root ", o.root, " is not a rank of a communicator of ",
              size);
  const std::vector<int64_t> mine{n_local, o.root, o.shuffle ? 1 : 0, static_cast<int64_t>(o.seed),
                                  o.force_equal_length ? 1 : 0};
  const std::vector<Array> all = comm.allgather(Array::from_vector(mine));
  Plan plan;
  std::vector<int64_t> roots;
  for (const Array& a : all) {
    const std::vector<int64_t> v = a.to_vector<int64_t>();
    RENSA_CHECK(v.size() == mine.size(), ValueError, who, ": ranks disagree on the protocol");
    plan.sizes.push_back(v[0]);
    roots.push_back(v[1]);
  }
  for (int64_t r : roots) {
    RENSA_CHECK(r == o.root, ValueError, who, ": ranks pass different roots: ", list(roots));
  }
  const std::vector<int64_t> root = all[static_cast<std::size_t>(o.root)].to_vector<int64_t>();
  plan.n = root[0];
  plan.shuffle = root[2] != 0;
  plan.seed = static_cast<uint64_t>(root[3]);
  plan.force_equal_length = root[4] != 0;
  RENSA_CHECK(plan.n >= 0, ValueError, who, ": the root (rank ", o.root, ") has ",
              allow_missing ? "no dataset" : "a negative size", "; sizes by rank: ", list(plan.sizes));
  for (int64_t s : plan.sizes) {
    const bool ok = s == plan.n || (allow_missing && s == -1);
    RENSA_CHECK(ok, ValueError, who, ": the ranks' dataset sizes differ: ", list(plan.sizes),
                allow_missing ? " (-1: no dataset)" : "");
  }
  return plan;
}

std::vector<int64_t> order_of(const Plan& plan) {
  if (plan.shuffle) {
    Generator gen(plan.seed);
    return datasets::permutation(plan.n, gen);
  }
  std::vector<int64_t> order(static_cast<std::size_t>(plan.n));
  for (int64_t i = 0; i < plan.n; ++i) order[static_cast<std::size_t>(i)] = i;
  return order;
}

std::vector<int64_t> shard_of(const Plan& plan, const std::vector<int64_t>& order, int rank, int size) {
  const int64_t n = plan.n;
  const int64_t begin = n * rank / size;
  std::vector<int64_t> out;
  if (!plan.force_equal_length) {
    const int64_t end = n * (rank + 1) / size;
    out.assign(order.begin() + begin, order.begin() + end);
    return out;
  }
  const int64_t k = n == 0 ? 0 : (n + size - 1) / size;
  out.reserve(static_cast<std::size_t>(k));
  for (int64_t j = 0; j < k; ++j) out.push_back(order[static_cast<std::size_t>((begin + j) % n)]);
  return out;
}

/// Example i is base[indices[i]].
class IndexedDataset final : public datasets::Dataset {
 public:
  IndexedDataset(datasets::DatasetPtr base, std::vector<int64_t> indices)
      : base_(std::move(base)), indices_(std::move(indices)) {}
  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  datasets::Example get_example(int64_t i) const override {
    RENSA_CHECK(i >= 0 && i < size(), IndexError, "scatter_dataset: index ", i, " out of range for a shard of ",
                size(), " examples");
    return base_->get_example(indices_[static_cast<std::size_t>(i)]);
  }

 private:
  datasets::DatasetPtr base_;
  std::vector<int64_t> indices_;
};

// The shard's examples stacked by column; zero-length columns shaped like example 0 for an empty shard.
std::vector<Array> stack_shard(const datasets::Dataset& dataset, const std::vector<int64_t>& indices) {
  if (!indices.empty()) {
    std::vector<datasets::Example> batch;
    batch.reserve(indices.size());
    for (int64_t i : indices) batch.push_back(dataset.get_example(i));
    return datasets::concat_examples(batch);
  }
  std::vector<Array> cols;
  if (dataset.size() == 0) return cols;
  for (const Array& c : dataset.get_example(0)) {
    Shape s = c.shape();
    s.insert(0, 0);
    cols.push_back(Array::empty(s, c.dtype()));
  }
  return cols;
}

}  // namespace

std::vector<int64_t> scatter_index(int64_t n, Communicator comm, const ScatterOptions& options) {
  const Plan plan = agree("scatter_index", n, comm, options, false);
  return shard_of(plan, order_of(plan), comm.rank(), comm.size());
}

datasets::DatasetPtr scatter_dataset(const datasets::DatasetPtr& dataset, Communicator comm,
                                     const ScatterOptions& options) {
  const Plan plan = agree("scatter_dataset", dataset ? dataset->size() : -1, comm, options, true);
  const int size = comm.size();
  const int rank = comm.rank();
  const std::vector<int64_t> order = order_of(plan);
  if (rank == options.root) {
    // Ranks without a dataset get their shard's examples from the root, one rank at a time. A header
    // of {-1, 0} tells a receiver the root failed, so it throws instead of waiting.
    std::string error;
    int failed_rank = -1;
    for (int r = 0; r < size; ++r) {
      if (plan.sizes[static_cast<std::size_t>(r)] != -1) continue;
      // A file-list dataset travels as its shard's file names ({-2, bytes} then the bytes).
      std::optional<std::string> description;
      std::vector<Array> cols;
      if (error.empty()) {
        try {
          const std::vector<int64_t> shard = shard_of(plan, order, r, size);
          description = dataset->encode_subset(shard);
          if (!description) cols = stack_shard(*dataset, shard);
        } catch (const Error& e) {
          error = e.what();
          failed_rank = r;
        }
      }
      if (error.empty() && description) {
        comm.send(Array::from_vector(std::vector<int64_t>{-2, static_cast<int64_t>(description->size())}), r,
                  kShardTag);
        Array bytes = Array::empty(Shape{static_cast<int64_t>(description->size())}, Dtype::uint8);
        if (!description->empty()) std::memcpy(bytes.raw_data(), description->data(), description->size());
        comm.send(bytes, r, kShardTag);
        continue;
      }
      const int64_t k = !error.empty() ? -1 : cols.empty() ? 0 : cols.front().shape()[0];
      comm.send(Array::from_vector(std::vector<int64_t>{k, static_cast<int64_t>(cols.size())}), r, kShardTag);
      for (const Array& c : cols) comm.send(c, r, kShardTag);
    }
    RENSA_CHECK(error.empty(), ValueError, "scatter_dataset: cannot stack the shard of rank ", failed_rank, ": ",
                error);
  }
  if (dataset != nullptr) {
    return std::make_shared<IndexedDataset>(dataset, shard_of(plan, order, rank, size));
  }
  const std::vector<int64_t> header = comm.recv(options.root, kShardTag).to_vector<int64_t>();
  if (header.size() == 2 && header[0] == -2) {
    const Array bytes = comm.recv(options.root, kShardTag);
    const std::string description(static_cast<const char*>(bytes.raw_data()), static_cast<std::size_t>(bytes.size()));
    return datasets::decode_dataset(description);
  }
  RENSA_CHECK(header.size() == 2 && header[0] >= 0, ValueError, "scatter_dataset: rank ", rank,
              " got no shard: the root (rank ", options.root, ") failed to stack the examples");
  std::vector<Array> cols;
  for (int64_t c = 0; c < header[1]; ++c) cols.push_back(comm.recv(options.root, kShardTag));
  if (cols.empty()) return std::make_shared<IndexedDataset>(nullptr, std::vector<int64_t>{});
  return std::make_shared<datasets::TupleDataset>(std::move(cols));
}

}  // namespace rensa::mn
