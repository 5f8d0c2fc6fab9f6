#include "rensa/core/timeline.h"

#include <chrono>
#include <mutex>

#include "rensa/core/error.h"

namespace rensa::timeline {
namespace detail {
std::atomic<bool> g_recording{false};
}  // namespace detail

namespace {

struct State {
  std::mutex mutex;
  bool active = false;
  int64_t begin_ns = 0;
  int64_t max_events = 0;
  std::vector<Event> events;
  int64_t dropped = 0;
  Totals totals;
  std::vector<std::string> thread_names;
  int next_thread = 0;
};
State& state() {
  static auto* s = new State();  // leaked: threads may record while the process exits
  return *s;
}

struct ThreadInfo {
  int number = -1;
  std::string name;
};
thread_local ThreadInfo t_thread;

// The calling thread's number; the lock is held.
int thread_number(State& s) {
  if (t_thread.number < 0) t_thread.number = s.next_thread++;
  const auto n = static_cast<std::size_t>(t_thread.number);
  if (s.thread_names.size() <= n) s.thread_names.resize(n + 1);
  if (!t_thread.name.empty()) s.thread_names[n] = t_thread.name;
  return t_thread.number;
}

}  // namespace

const char* category_name(Category c) {
  static const char* const names[kCategories] = {"step", "data", "forward", "backward",  "update",
                                                 "wait", "comm", "copy",    "extension", "other"};
  return names[static_cast<int>(c)];
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void detail::record(std::string_view name, Category category, int64_t begin_ns, int64_t arg) {
  const int64_t end = now_ns();
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.active || begin_ns < s.begin_ns) return;  // a span begun before this recording
  const int c = static_cast<int>(category);
  s.totals.ns[c] += end - begin_ns;
  ++s.totals.count[c];
  if (static_cast<int64_t>(s.events.size()) >= s.max_events) {
    ++s.dropped;
    return;
  }
  s.events.push_back(Event{std::string(name), category, thread_number(s), begin_ns, end, arg});
}

void set_thread_name(std::string name) {
  t_thread.name = std::move(name);
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  thread_number(s);
}

Recording::Recording(int64_t max_events) : begin_ns_(now_ns()) {
  RENSA_CHECK(max_events >= 0, ValueError, "timeline::Recording: max_events must not be negative, got ", max_events);
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  RENSA_CHECK(!s.active, ValueError, "timeline::Recording: a recording is already active in this process");
  s.active = true;
  s.begin_ns = begin_ns_;
  s.max_events = max_events;
  s.events.clear();
  s.dropped = 0;
  s.totals = Totals{};
  detail::g_recording.store(true, std::memory_order_relaxed);
}

Recording::~Recording() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.active = false;
  detail::g_recording.store(false, std::memory_order_relaxed);
}

std::vector<Event> Recording::events() const {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.events;
}

Totals Recording::totals() const {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.totals;
}

int64_t Recording::dropped() const {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.dropped;
}

std::vector<std::string> Recording::thread_names() const {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.thread_names;
}

}  // namespace rensa::timeline
