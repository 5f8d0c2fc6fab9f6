// MultithreadIterator: the state machine runs on the caller's thread, ahead of the returned batch;
// worker threads read the examples of the batches planned ahead and, with `stack`, write each one
// into its row of a reusable batch buffer as soon as it is read.

#include "rensa/iterators/multithread_iterator.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <string>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <span>
#include <thread>

#include "rensa/core/error.h"
#include "rensa/datasets/concat_examples.h"
#include "rensa/datasets/example_key.h"
#include "src/datasets/batch_row.h"
#include "src/datasets/common.h"

namespace rensa::iterators {

namespace {

/// One planned batch: its indices, the iterator state after it, and the examples as they arrive.
struct Pending {
  std::vector<int64_t> indices;
  std::vector<int64_t> epochs;  // the epoch of each index
  detail::IteratorState state_after;
  bool end = false;  // the iterator had finished: next() returns std::nullopt
  Batch examples;
  std::vector<Array> arrays;   // stacked by the workers (options.stack)
  std::vector<Array> buffers;  // where the workers stack each example as it is read; empty: not yet known
  std::atomic<bool> misfit{false};  // an example did not fit `buffers`: stacked again by concat_examples
  bool restacked = false;           // guarded by Impl::mutex; `arrays` came from concat_examples
  int chunks_left = 0;        // guarded by Impl::mutex
  bool done = false;          // guarded by Impl::mutex
  std::exception_ptr error;   // guarded by Impl::mutex; the first error of any chunk
  int64_t error_index = -1;   // guarded by Impl::mutex; the dataset index that failed (-1: stacking)
  std::atomic<bool> cancelled{false};
};

/// A slice [begin, end) of a planned batch for one worker.
struct Task {
  std::shared_ptr<Pending> batch;
  std::size_t begin = 0, end = 0;
};

/// Copies `example` into row `b` of `buffers` (one array per column, batch axis first); false when
/// it does not fit (columns, null, shape, dtype or device differ), which concat_examples then reports
/// or handles.
bool stack_row(const std::vector<Array>& buffers, int64_t b, const datasets::Example& example) {
  if (example.size() != buffers.size()) return false;
  for (std::size_t c = 0; c < buffers.size(); ++c) {
    const Array& x = example[c];
    const Array& buffer = buffers[c];
    if (x.is_null() || x.dtype() != buffer.dtype() || x.device() != buffer.device() || x.ndim() + 1 != buffer.ndim()) {
      return false;
    }
    for (int64_t d = 0; d < x.ndim(); ++d) {
      if (x.shape()[static_cast<std::size_t>(d)] != buffer.shape()[static_cast<std::size_t>(d) + 1]) return false;
    }
  }
  // A transform may have written into the offered row (column 0's) whatever it made, for any column:
  // a column that is exactly its own row is in place; one that lies anywhere else in the buffers
  // (a view of the row, or another column's image made there) is copied out before any row is
  // written.
  std::vector<Array> sources(example.begin(), example.end());
  for (std::size_t c = 0; c < buffers.size(); ++c) {
    Array& x = sources[c];
    const bool in_buffers = std::any_of(buffers.begin(), buffers.end(),
                                        [&](const Array& buffer) { return x.storage() == buffer.storage(); });
    if (!in_buffers) continue;
    const bool own_row = x.storage() == buffers[c].storage() && x.is_contiguous() &&
                         x.raw_data() == datasets::detail::row_view(buffers[c], b).raw_data();
    x = own_row ? Array() : x.copy();  // null: already in place
  }
  for (std::size_t c = 0; c < buffers.size(); ++c) {
    const Array& x = sources[c];
    if (x.is_null()) continue;
    const Array row = datasets::detail::row_view(buffers[c], b);
    if (x.is_contiguous()) {
      if (row.nbytes() != 0) std::memcpy(row.raw_data(), x.raw_data(), row.nbytes());
    } else {
      row.assign(x);
    }
  }
  return true;
}

}  // namespace

struct MultithreadIterator::Impl {
  detail::IterationPlan plan;
  int n_threads;
  int n_prefetch;
  bool stack;
  double dataset_timeout;

  detail::IteratorState state;      // after the last returned batch
  detail::IteratorState lookahead;  // after the last planned batch
  double previous_epoch_detail = -1.0;

  std::mutex mutex;
  std::condition_variable work_cv;  // workers: a task arrived or stop
  std::condition_variable done_cv;  // caller: a batch finished
  std::deque<Task> tasks;           // guarded by mutex
  bool stop = false;                // guarded by mutex
  std::deque<std::shared_ptr<Pending>> pipeline;  // caller's thread only
  std::vector<std::thread> workers;
  // Reusable batch buffers (options.stack), caller's thread only. The column layout (shape without
  // the batch axis, dtype) is learned from the last batch concat_examples stacked; a set is reused
  // once nothing but the pool holds its memory (the step, its graph and the user have let go).
  std::vector<std::pair<Shape, Dtype>> layout;
  std::vector<std::vector<Array>> pool;
  std::size_t pool_next = 0;  // the entry replaced next when the pool is full and every set is in use

  Impl(datasets::DatasetPtr dataset, int64_t batch_size, const MultithreadIteratorOptions& o)
      : plan("MultithreadIterator", std::move(dataset), batch_size, o.repeat, o.shuffle, o.seed, o.order_sampler),
        n_threads(o.n_threads),
        n_prefetch(o.n_prefetch),
        stack(o.stack),
        dataset_timeout(o.dataset_timeout) {
    RENSA_CHECK(dataset_timeout >= 0, ValueError, "MultithreadIterator: dataset_timeout must be >= 0 seconds, got ",
                dataset_timeout);
    RENSA_CHECK(n_threads >= 1, ValueError, "MultithreadIterator: n_threads must be at least 1, got ", n_threads);
    RENSA_CHECK(n_prefetch >= 1, ValueError, "MultithreadIterator: n_prefetch must be at least 1, got ", n_prefetch);
    state = plan.initial_state();
    lookahead = state;
  }

  ~Impl() {
    {
      std::lock_guard lock(mutex);
      stop = true;
      for (auto& p : pipeline) p->cancelled = true;
      tasks.clear();
    }
    work_cv.notify_all();
    for (auto& t : workers) t.join();
  }

  void start_workers() {
    if (!workers.empty()) return;
    workers.reserve(static_cast<std::size_t>(n_threads));
    for (int k = 0; k < n_threads; ++k) workers.emplace_back([this] { worker_loop(); });
  }

  void worker_loop() {
    // Kernels called by get_example run single-threaded here: the cores belong to the model.
    omp_set_num_threads(1);
    for (;;) {
      Task task;
      {
        std::unique_lock lock(mutex);
        work_cv.wait(lock, [&] { return stop || !tasks.empty(); });
        if (stop) return;
        task = std::move(tasks.front());
        tasks.pop_front();
      }
      Pending& p = *task.batch;
      std::exception_ptr error;
      int64_t error_index = -1;
      if (!p.cancelled) {
        std::size_t k = task.begin;
        try {
          for (; k < task.end && !p.cancelled; ++k) {
            const datasets::EpochScope epoch(p.epochs[k]);
            if (p.buffers.empty()) {
              p.examples[k] = plan.dataset->get_example(p.indices[k]);
              continue;
            }
            {
              // A transform making the image may write it straight into its row (batch_row.h).
              const datasets::detail::BatchRowOffer offer(datasets::detail::row_view(p.buffers[0], static_cast<int64_t>(k)));
              p.examples[k] = plan.dataset->get_example(p.indices[k]);
            }
            // Stacked while the example is still in this core's cache.
            if (!p.misfit && !stack_row(p.buffers, static_cast<int64_t>(k), p.examples[k])) p.misfit = true;
          }
        } catch (...) {
          error = std::current_exception();
          error_index = p.indices[k];
        }
      }
      bool last, stack_it;
      {
        std::lock_guard lock(mutex);
        // Moved, not copied: the exception must not outlive the batch on this thread.
        if (error && !p.error) {
          p.error = std::move(error);
          p.error_index = error_index;
        }
        error = nullptr;
        last = --p.chunks_left == 0;
        stack_it = last && stack && !p.error && !p.cancelled;
        if (last && !stack_it) p.done = true;
      }
      if (stack_it) {
        // The last chunk finishes the batch; the others are done, so the examples are settled. When
        // an example did not fit the buffers (or there were none yet), concat_examples stacks them
        // all (and reports what is wrong, if anything).
        std::exception_ptr stack_error;
        bool restacked = false;
        try {
          if (!p.buffers.empty() && !p.misfit) {
            p.arrays = std::move(p.buffers);
          } else {
            p.arrays = datasets::concat_examples(p.examples);
            restacked = true;
          }
        } catch (...) {
          stack_error = std::current_exception();
        }
        std::lock_guard lock(mutex);
        p.error = std::move(stack_error);
        p.restacked = restacked;
        p.done = true;
      }
      if (last) done_cv.notify_all();
    }
  }

  /// Plans the batch after `lookahead` and hands its slices to the workers.
  void plan_one() {
    auto p = std::make_shared<Pending>();
    std::optional<std::vector<int64_t>> indices = plan.advance(lookahead, &p->epochs);
    p->state_after = lookahead;
    if (!indices) {
      p->end = true;
      p->done = true;
      pipeline.push_back(std::move(p));
      return;
    }
    p->indices = std::move(*indices);
    const std::size_t n = p->indices.size();
    p->examples.resize(n);
    if (n == 0) {
      p->done = true;
      pipeline.push_back(std::move(p));
      return;
    }
    if (stack && !layout.empty()) p->buffers = acquire_buffers(static_cast<int64_t>(n));
    // One slice per worker (at least one example each), so a batch is spread over all of them.
    const std::size_t n_chunks = std::min<std::size_t>(n, static_cast<std::size_t>(n_threads));
    const std::size_t per = (n + n_chunks - 1) / n_chunks;
    std::vector<Task> new_tasks;
    for (std::size_t b = 0; b < n; b += per) new_tasks.push_back({p, b, std::min(n, b + per)});
    {
      std::lock_guard lock(mutex);
      p->chunks_left = static_cast<int>(new_tasks.size());
      for (auto& t : new_tasks) tasks.push_back(std::move(t));
    }
    work_cv.notify_all();
    pipeline.push_back(std::move(p));
  }

  /// Returns the next finished batch, keeping n_prefetch more planned behind it.
  std::shared_ptr<Pending> take() {
    start_workers();
    // A planned end repeats itself: nothing after it is worth planning.
    while (static_cast<int>(pipeline.size()) < n_prefetch + 1 && !(!pipeline.empty() && pipeline.back()->end)) {
      plan_one();
    }
    std::shared_ptr<Pending> p = std::move(pipeline.front());
    pipeline.pop_front();
    {
      std::unique_lock lock(mutex);
      if (dataset_timeout > 0) {
        // Chainer's dataset_timeout: say so when a batch is late, and keep waiting.
        const auto start = std::chrono::steady_clock::now();
        while (!done_cv.wait_for(lock, std::chrono::duration<double>(dataset_timeout), [&] { return p->done; })) {
          const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          std::cerr << "MultithreadIterator: waited " << waited << " s (dataset_timeout " << dataset_timeout
                    << " s) for a batch of " << p->indices.size() << " examples starting at dataset index "
                    << (p->indices.empty() ? -1 : p->indices.front())
                    << "; a get_example call may be stalled (slow storage or a hung reader)\n";
        }
      } else {
        done_cv.wait(lock, [&] { return p->done; });
      }
    }
    if (p->restacked && !p->error) learn_layout(p->arrays);
    previous_epoch_detail = plan.epoch_detail(state);
    state = p->state_after;
    if (p->end) lookahead = state;  // plan again from the end (it stays the end until reset)
    if (p->error) {
      // Taken out of the batch: the exception then dies on this thread, not with the batch.
      std::exception_ptr error = std::move(p->error);
      if (p->error_index < 0) std::rethrow_exception(error);
      try {
        std::rethrow_exception(error);
      } catch (...) {
        rethrow_with_context("MultithreadIterator: reading dataset index " + std::to_string(p->error_index) + ": ");
      }
    }
    return p;
  }

  /// Batch buffers: at most this many sets are kept, enough for the batches in flight, the one the
  /// step uses and one more its graph or an evaluation may still hold.
  std::size_t pool_capacity() const { return static_cast<std::size_t>(n_prefetch) + 3; }

  /// A set of buffers for a batch of `rows` examples of the known layout: a pooled one that nothing
  /// else holds, else a new one (kept in the pool).
  std::vector<Array> acquire_buffers(int64_t rows) {
    auto fits = [&](const std::vector<Array>& set) {
      if (set.size() != layout.size()) return false;
      for (std::size_t c = 0; c < layout.size(); ++c) {
        if (set[c].shape()[0] != rows || set[c].dtype() != layout[c].second) return false;
        if (set[c].shape().size() != layout[c].first.size() + 1) return false;
        for (std::size_t d = 0; d < layout[c].first.size(); ++d) {
          if (set[c].shape()[d + 1] != layout[c].first[d]) return false;
        }
      }
      return true;
    };
    for (const auto& set : pool) {
      if (unused(set) && fits(set)) return set;
    }
    std::vector<Array> fresh;
    fresh.reserve(layout.size());
    for (const auto& [row_shape, dtype] : layout) {
      Shape shape = row_shape;
      shape.insert(0, rows);
      fresh.push_back(Array::empty(shape, dtype, Device::cpu()));
    }
    keep(fresh);
    return fresh;
  }

  /// True when only the pool holds the set's memory (no batch, view, graph or user).
  static bool unused(const std::vector<Array>& set) {
    return std::all_of(set.begin(), set.end(), [](const Array& a) { return a.storage().use_count() == 1; });
  }

  /// Adds a set to the pool; when full, it takes the place of an unused set, else of the next one in
  /// turn (whose memory then goes when its holder lets go).
  void keep(const std::vector<Array>& set) {
    if (pool.size() < pool_capacity()) {
      pool.push_back(set);
      return;
    }
    for (auto& entry : pool) {
      if (unused(entry)) {
        entry = set;
        return;
      }
    }
    pool[pool_next++ % pool.size()] = set;
  }

  /// Learns the column layout from a batch stacked by concat_examples, whose arrays join the pool.
  void learn_layout(const std::vector<Array>& arrays) {
    if (arrays.empty()) return;
    std::vector<std::pair<Shape, Dtype>> seen;
    for (const Array& a : arrays) {
      if (a.ndim() < 1 || a.device() != Device::cpu() || !a.is_contiguous()) return;
      seen.emplace_back(Shape(std::span<const int64_t>(a.shape().data() + 1, a.shape().size() - 1)), a.dtype());
    }
    if (seen != layout) {
      layout = std::move(seen);
      pool.clear();
    }
    keep(arrays);
  }

  /// Drops the planned batches (workers skip what they have not started) and plans from `state`.
  void drop_pipeline() {
    {
      std::lock_guard lock(mutex);
      for (auto& p : pipeline) p->cancelled = true;
      std::erase_if(tasks, [](const Task& t) { return t.batch->cancelled.load(); });
    }
    pipeline.clear();
    lookahead = state;
  }
};

MultithreadIterator::MultithreadIterator(datasets::DatasetPtr dataset, int64_t batch_size,
                                         const MultithreadIteratorOptions& options)
    : impl_(std::make_unique<Impl>(std::move(dataset), batch_size, options)) {}

MultithreadIterator::~MultithreadIterator() = default;

std::optional<Batch> MultithreadIterator::next() {
  std::shared_ptr<Pending> p = impl_->take();
  if (p->end) return std::nullopt;
  return std::move(p->examples);
}

std::optional<std::vector<Array>> MultithreadIterator::next_arrays() {
  std::shared_ptr<Pending> p = impl_->take();
  if (p->end) return std::nullopt;
  if (!p->arrays.empty()) return std::move(p->arrays);
  if (p->examples.empty()) return std::vector<Array>{};  // an empty dataset's batch
  return datasets::concat_examples(p->examples);  // not stacked ahead
}

bool MultithreadIterator::stacks_ahead() const { return impl_->stack; }
int64_t MultithreadIterator::epoch() const { return impl_->state.epoch; }
double MultithreadIterator::epoch_detail() const { return impl_->plan.epoch_detail(impl_->state); }
std::optional<double> MultithreadIterator::previous_epoch_detail() const {
  if (impl_->previous_epoch_detail < 0) return std::nullopt;
  return impl_->previous_epoch_detail;
}
bool MultithreadIterator::is_new_epoch() const { return impl_->state.is_new_epoch; }
int64_t MultithreadIterator::batch_size() const { return impl_->plan.batch_size; }
int64_t MultithreadIterator::current_position() const { return impl_->state.current_position; }
bool MultithreadIterator::repeat() const { return impl_->plan.repeat; }
bool MultithreadIterator::shuffle() const { return impl_->plan.shuffle; }
uint64_t MultithreadIterator::seed() const { return impl_->plan.seed; }
const datasets::DatasetPtr& MultithreadIterator::dataset() const { return impl_->plan.dataset; }

void MultithreadIterator::reset() {
  impl_->state = impl_->plan.initial_state();
  impl_->previous_epoch_detail = -1.0;
  impl_->drop_pipeline();
}

void MultithreadIterator::serialize(serializers::Serializer& s) {
  impl_->plan.serialize("MultithreadIterator", s, impl_->state, impl_->previous_epoch_detail);
  if (s.is_loading()) impl_->drop_pipeline();
}

}  // namespace rensa::iterators
