// TupleDataset, SubDataset, TransformDataset, ConcatenatedDataset and the dataset splitters.

#include <algorithm>
#include <numeric>
#include <sstream>

#include "rensa/core/error.h"
#include "rensa/datasets/concatenated_dataset.h"
#include "rensa/datasets/sub_dataset.h"
#include "rensa/datasets/transform_dataset.h"
#include "rensa/datasets/example_key.h"
#include "rensa/datasets/tuple_dataset.h"
#include "src/datasets/common.h"

namespace rensa::datasets {

// ---- TupleDataset ---------------------------------------------------------------------------------

TupleDataset::TupleDataset(std::vector<Array> columns) : columns_(std::move(columns)) {
  RENSA_CHECK(!columns_.empty(), ValueError, "TupleDataset: needs at least one column");
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    RENSA_CHECK(!columns_[c].is_null(), ValueError, "TupleDataset: column ", c, " is a null array");
    RENSA_CHECK(columns_[c].ndim() >= 1, ShapeError, "TupleDataset: column ", c,
                " is 0-dimensional; every column needs an axis 0 to index examples along");
  }
  size_ = columns_[0].shape()[0];
  for (const Array& col : columns_) {
    if (col.shape()[0] != size_) {
      std::ostringstream shapes;
      for (std::size_t c = 0; c < columns_.size(); ++c) shapes << (c ? ", " : "") << columns_[c].shape();
      RENSA_THROW(ShapeError, "TupleDataset: the columns have different lengths along axis 0: shapes ", shapes.str());
    }
  }
}

Example TupleDataset::get_example(int64_t i) const {
  detail::check_index("TupleDataset", i, size_);
  Example ex;
  ex.reserve(columns_.size());
  for (const Array& col : columns_) ex.push_back(detail::row_view(col, i));
  return ex;
}

// ---- permutation / SubDataset ---------------------------------------------------------------------

std::vector<int64_t> permutation(int64_t n, Generator& gen) {
  RENSA_CHECK(n >= 0, ValueError, "permutation: negative length ", n);
  std::vector<int64_t> p(static_cast<std::size_t>(n));
  std::iota(p.begin(), p.end(), int64_t{0});
  const uint64_t base = gen.advance(static_cast<uint64_t>(n));
  // Fisher-Yates: position i swaps with a uniform j in [0, i], drawn from counter base + i so the
  // result depends only on (seed, offset). The 64x64->128 multiply maps 64 random bits onto
  // [0, i] with a relative bias of at most (i + 1) / 2^64: below 2^-40 up to 16M examples.
  for (int64_t i = n - 1; i > 0; --i) {
    uint32_t r[4];
    rensa::detail::philox4x32(base + static_cast<uint64_t>(i), gen.seed(), r);
    const int64_t j = detail::uniform_below(r[0], r[1], i + 1);
    std::swap(p[static_cast<std::size_t>(i)], p[static_cast<std::size_t>(j)]);
  }
  return p;
}

SubDataset::SubDataset(DatasetPtr base, int64_t start, int64_t finish, std::optional<std::vector<int64_t>> order)
    : base_(std::move(base)), start_(start), finish_(finish) {
  RENSA_CHECK(base_ != nullptr, ValueError, "SubDataset: the base dataset is null");
  const int64_t n = base_->size();
  RENSA_CHECK(0 <= start_ && start_ <= finish_ && finish_ <= n, ValueError, "SubDataset: the range [", start_, ", ",
              finish_, ") does not fit a base dataset of size ", n);
  if (order) {
    RENSA_CHECK(static_cast<int64_t>(order->size()) == n, ValueError, "SubDataset: the order has ", order->size(),
                " entries but the base dataset has ", n, " examples");
    for (std::size_t k = 0; k < order->size(); ++k) {
      const int64_t v = (*order)[k];
      RENSA_CHECK(v >= 0 && v < n, IndexError, "SubDataset: order[", k, "] = ", v,
                  " is out of range for a base dataset of size ", n);
    }
    order_ = std::move(*order);
  }
}

int64_t SubDataset::base_index(int64_t i) const {
  detail::check_index("SubDataset", i, size());
  return order_.empty() ? start_ + i : order_[static_cast<std::size_t>(start_ + i)];
}

Example SubDataset::get_example(int64_t i) const { return base_->get_example(base_index(i)); }

std::optional<std::string> SubDataset::encode_subset(const std::vector<int64_t>& indices) const {
  std::vector<int64_t> in_base;
  in_base.reserve(indices.size());
  for (const int64_t i : indices) in_base.push_back(base_index(i));
  return base_->encode_subset(in_base);
}

std::pair<DatasetPtr, DatasetPtr> split_dataset(const DatasetPtr& dataset, int64_t first_size,
                                                std::optional<std::vector<int64_t>> order) {
  RENSA_CHECK(dataset != nullptr, ValueError, "split_dataset: the dataset is null");
  const int64_t n = dataset->size();
  RENSA_CHECK(first_size >= 0 && first_size <= n, ValueError, "split_dataset: first_size ", first_size,
              " is outside [0, ", n, "] (the size of the dataset)");
  auto first = std::make_shared<SubDataset>(dataset, 0, first_size, order);
  auto second = std::make_shared<SubDataset>(dataset, first_size, n, std::move(order));
  return {std::move(first), std::move(second)};
}

std::pair<DatasetPtr, DatasetPtr> split_dataset_random(const DatasetPtr& dataset, int64_t first_size, uint64_t seed) {
  RENSA_CHECK(dataset != nullptr, ValueError, "split_dataset_random: the dataset is null");
  RENSA_CHECK(first_size >= 0 && first_size <= dataset->size(), ValueError, "split_dataset_random: first_size ",
              first_size, " is outside [0, ", dataset->size(), "] (the size of the dataset)");
  Generator gen(seed);
  return split_dataset(dataset, first_size, permutation(dataset->size(), gen));
}

std::vector<std::pair<DatasetPtr, DatasetPtr>> get_cross_validation_datasets(const DatasetPtr& dataset,
                                                                             int64_t n_folds,
                                                                             std::optional<std::vector<int64_t>> order) {
  RENSA_CHECK(dataset != nullptr, ValueError, "get_cross_validation_datasets: the dataset is null");
  const int64_t n = dataset->size();
  RENSA_CHECK(n_folds >= 2 && n_folds <= n, ValueError, "get_cross_validation_datasets: n_folds ", n_folds,
              " is outside [2, ", n, "] (the size of the dataset)");
  std::vector<int64_t> base_order(static_cast<std::size_t>(n));
  if (order) {
    RENSA_CHECK(static_cast<int64_t>(order->size()) == n, ValueError, "get_cross_validation_datasets: the order has ",
                order->size(), " entries but the dataset has ", n, " examples");
    base_order = std::move(*order);
  } else {
    std::iota(base_order.begin(), base_order.end(), int64_t{0});
  }
  std::vector<std::pair<DatasetPtr, DatasetPtr>> folds;
  const int64_t whole = n / n_folds, rest = n % n_folds;
  int64_t begin = 0;
  for (int64_t k = 0; k < n_folds; ++k) {
    const int64_t len = whole + (k < rest ? 1 : 0);
    // Rotate the order so fold k's test share comes last: train = [0, n - len), test = [n - len, n).
    std::vector<int64_t> rotated;
    rotated.reserve(base_order.size());
    rotated.insert(rotated.end(), base_order.begin() + begin + len, base_order.end());
    rotated.insert(rotated.end(), base_order.begin(), base_order.begin() + begin + len);
    auto train = std::make_shared<SubDataset>(dataset, 0, n - len, rotated);
    auto test = std::make_shared<SubDataset>(dataset, n - len, n, std::move(rotated));
    folds.emplace_back(std::move(train), std::move(test));
    begin += len;
  }
  return folds;
}

std::vector<std::pair<DatasetPtr, DatasetPtr>> get_cross_validation_datasets_random(const DatasetPtr& dataset,
                                                                                    int64_t n_folds, uint64_t seed) {
  RENSA_CHECK(dataset != nullptr, ValueError, "get_cross_validation_datasets_random: the dataset is null");
  Generator gen(seed);
  return get_cross_validation_datasets(dataset, n_folds, permutation(dataset->size(), gen));
}

// ---- TransformDataset -----------------------------------------------------------------------------

TransformDataset::TransformDataset(DatasetPtr base, Transform transform)
    : base_(std::move(base)), transform_(std::move(transform)) {
  RENSA_CHECK(base_ != nullptr, ValueError, "TransformDataset: the base dataset is null");
  RENSA_CHECK(static_cast<bool>(transform_), ValueError, "TransformDataset: the transform is empty");
}

Example TransformDataset::get_example(int64_t i) const {
  detail::check_index("TransformDataset", i, base_->size());
  Example example = base_->get_example(i);
  const ExampleIndexScope key(i);  // keys the transform's random draws (example_key.h)
  return transform_(std::move(example));
}

// ---- ConcatenatedDataset --------------------------------------------------------------------------

ConcatenatedDataset::ConcatenatedDataset(std::vector<DatasetPtr> datasets) : datasets_(std::move(datasets)) {
  offsets_.reserve(datasets_.size() + 1);
  offsets_.push_back(0);
  for (std::size_t k = 0; k < datasets_.size(); ++k) {
    RENSA_CHECK(datasets_[k] != nullptr, ValueError, "ConcatenatedDataset: dataset ", k, " is null");
    offsets_.push_back(offsets_.back() + datasets_[k]->size());
  }
}

Example ConcatenatedDataset::get_example(int64_t i) const {
  detail::check_index("ConcatenatedDataset", i, size());
  // The last k with offsets_[k] <= i; empty datasets share their offset with the next one, and
  // upper_bound skips past them.
  const auto it = std::upper_bound(offsets_.begin(), offsets_.end(), i);
  const auto k = static_cast<std::size_t>(it - offsets_.begin() - 1);
  return datasets_[k]->get_example(i - offsets_[k]);
}

}  // namespace rensa::datasets
