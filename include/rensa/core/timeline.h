#pragma once
/// \file
/// The timeline recorder: spans of time on each thread (a training step, its forward, backward and
/// update, data waits, each gradient bucket's allreduce, extensions), kept while recording is on and
/// written by extensions::Timeline in the Chrome trace format. Off, a Span costs one relaxed load.
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rensa::timeline {

/// What a span's time is spent on. The summary adds spans up by category.
enum class Category : uint8_t {
  step,       ///< one training iteration (the updater's update)
  data,       ///< waiting for the next batch
  forward,    ///< the loss function
  backward,   ///< loss.backward()
  update,     ///< the optimizer's update (with gradient averaging under rensa::mn)
  wait,       ///< the training thread waiting for communication: exposed, not overlapped
  comm,       ///< communication work (an allreduce request, on whichever thread runs it)
  copy,       ///< packing and unpacking of communicated buffers
  extension,  ///< a trainer extension (evaluation, snapshots, logs)
  other,
};
/// Number of Category values.
inline constexpr int kCategories = 10;
/// "step", "data", ...
const char* category_name(Category c);

/// One finished span.
struct Event {
  /// The span's name.
  std::string name;
  /// What kind of work the span timed.
  Category category = Category::other;
  /// This process's thread number (0: the first thread that recorded).
  int thread = 0;        // this process's thread number (0: the first thread that recorded)
  /// Start, in nanoseconds of the steady clock.
  int64_t begin_ns = 0;  // steady clock
  /// End, in nanoseconds of the steady clock.
  int64_t end_ns = 0;
  /// A number attached to the span (the bucket's number, ...); -1 for none.
  int64_t arg = -1;  // e.g. the bucket's number; -1: none
};

namespace detail {
extern std::atomic<bool> g_recording;
void record(std::string_view name, Category category, int64_t begin_ns, int64_t arg);
}  // namespace detail

/// Nanoseconds on the steady clock (the clock of Event).
int64_t now_ns();

/// Whether spans are being recorded (by any thread).
inline bool recording() {
  return detail::g_recording.load(std::memory_order_relaxed);
}

/// Records the time from its construction to its destruction on the calling thread while recording
/// is on. `name` is copied only then.
class Span {
 public:
  /// Starts a span of `category` named `name`; `arg` as Event::arg.
  explicit Span(std::string_view name, Category category, int64_t arg = -1) {
    if (recording()) {
      name_ = name;
      category_ = category;
      arg_ = arg;
      begin_ns_ = now_ns();
    }
  }
  ~Span() { end(); }
  /// Ends the span before its scope does.
  void end() {
    if (begin_ns_ != 0) detail::record(name_, category_, begin_ns_, arg_);
    begin_ns_ = 0;
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

 private:
  std::string_view name_;
  Category category_ = Category::other;
  int64_t arg_ = -1;
  int64_t begin_ns_ = 0;
};

/// Names the calling thread in written timelines ("main", "communication").
void set_thread_name(std::string name);

/// Totals since recording began: per category, the time of its spans (nested spans of one category
/// count once per span), and the number of spans.
struct Totals {
  /// Nanoseconds spent in spans of each category, indexed by Category.
  int64_t ns[kCategories] = {};
  /// Number of spans of each category, indexed by Category.
  int64_t count[kCategories] = {};
};

/// The process-wide recording. One may be active at a time.
class Recording {
 public:
  /// Starts recording; ValueError when one is already active. Keeps at most `max_events` events (the
  /// totals go on counting after that).
  explicit Recording(int64_t max_events = int64_t{1} << 20);
  /// Stops recording.
  ~Recording();
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;

  /// The events so far, in the order they ended.
  std::vector<Event> events() const;
  /// Per-category totals since recording began.
  Totals totals() const;
  /// Events not kept because max_events was reached.
  int64_t dropped() const;
  /// Thread names by thread number ("" where none was set).
  std::vector<std::string> thread_names() const;
  /// The steady clock when recording began.
  int64_t begin_ns() const { return begin_ns_; }

 private:
  int64_t begin_ns_;
};

}  // namespace rensa::timeline
