// MultithreadIterator: the state machine runs on the caller's thread, ahead of the returned batch;
// worker threads read the examples of the batches planned ahead.

#include "rensa/iterators/multithread_iterator.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <string>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "rensa/core/error.h"
#include "rensa/datasets/concat_examples.h"
#include "rensa/datasets/example_key.h"

namespace rensa::iterators {

namespace {

/// One planned batch: its indices, the iterator state after it, and the examples as they arrive.
struct Pending {
  std::vector<int64_t> indices;
  std::vector<int64_t> epochs;  // the epoch of each index
  detail::IteratorState state_after;
  bool end = false;  // the iterator had finished: next() returns std::nullopt
  Batch examples;
  std::vector<Array> arrays;  // stacked by the workers (options.stack)
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
            p.examples[k] = plan.dataset->get_example(p.indices[k]);
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
        // The last chunk stacks the batch; the others are finished, so the examples are settled.
        std::exception_ptr stack_error;
        try {
          p.arrays = datasets::concat_examples(p.examples);
        } catch (...) {
          stack_error = std::current_exception();
        }
        std::lock_guard lock(mutex);
        p.error = std::move(stack_error);
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
