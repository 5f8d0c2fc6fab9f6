#pragma once
/// \file
/// The key of the example being read, (epoch, index), which keys the random draws of transforms
/// (transforms::RandomStream): an augmented example then depends only on the seed, the epoch and
/// its index, not on which worker thread reads it or when, and a resumed run draws the same.
///
/// TransformDataset sets the index (the one it is asked for) around its transform; the iterators
/// set the epoch the example belongs to around get_example. Both are per thread.
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace rensa::datasets {

/// Which example a transform is working on.
struct ExampleKey {
  /// The epoch of the iterator that reads the example (0 outside an iterator).
  int64_t epoch = 0;
  /// The example's index in the TransformDataset that applies the transform.
  int64_t index = 0;
};

/// The key of the example this thread is transforming; std::nullopt outside a TransformDataset.
std::optional<ExampleKey> current_example_key();

/// Sets this thread's epoch for the examples read in its lifetime (the iterators use it).
class EpochScope {
 public:
  /// Sets this thread's epoch to `epoch` until the scope ends.
  explicit EpochScope(int64_t epoch);
  ~EpochScope();
  EpochScope(const EpochScope&) = delete;
  EpochScope& operator=(const EpochScope&) = delete;

 private:
  int64_t saved_;
};

/// Marks this thread as transforming example `index` (TransformDataset uses it); restarts the
/// per-example draw counts of the random streams, and restores the outer key on exit.
class ExampleIndexScope {
 public:
  /// Marks example `index` until the scope ends.
  explicit ExampleIndexScope(int64_t index);
  ~ExampleIndexScope();
  ExampleIndexScope(const ExampleIndexScope&) = delete;
  ExampleIndexScope& operator=(const ExampleIndexScope&) = delete;

 private:
  int64_t saved_index_;
  std::vector<std::pair<const void*, uint64_t>> saved_draws_;
};

namespace detail {
/// The draw number of the stream identified by `stream` within the current example (0, 1, ...).
uint64_t next_draw_in_example(const void* stream);
}  // namespace detail

}  // namespace rensa::datasets
