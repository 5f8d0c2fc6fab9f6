// The timeline recorder: spans while a recording is on, nothing while it is off, totals by category,
// thread numbers and names, the event cap, and one recording at a time.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <thread>

#include "rensa/core/timeline.h"
#include "tests/unit/test_util.h"

namespace rensa {
namespace {

using timeline::Category;
using timeline::Recording;
using timeline::Span;

TEST(Timeline, SpansAreRecordedOnlyWhileRecording) {
  { Span before("before", Category::other); }
  EXPECT_FALSE(timeline::recording());
  std::vector<timeline::Event> events;
  {
    Recording r;
    EXPECT_TRUE(timeline::recording());
    {
      Span outer("step", Category::step);
      Span inner("forward", Category::forward, 3);
    }
    Span ended("data", Category::data);
    ended.end();
    ended.end();  // once only
    events = r.events();
    const timeline::Totals t = r.totals();
    EXPECT_EQ(t.count[static_cast<int>(Category::step)], 1);
    EXPECT_EQ(t.count[static_cast<int>(Category::forward)], 1);
    EXPECT_EQ(t.count[static_cast<int>(Category::data)], 1);
    EXPECT_GE(t.ns[static_cast<int>(Category::step)], t.ns[static_cast<int>(Category::forward)]);
  }
  EXPECT_FALSE(timeline::recording());
  ASSERT_EQ(events.size(), 3u);
  // In the order they ended: the inner span first.
  EXPECT_EQ(events[0].name, "forward");
  EXPECT_EQ(events[0].arg, 3);
  EXPECT_EQ(events[1].name, "step");
  EXPECT_EQ(events[1].arg, -1);
  EXPECT_LE(events[1].begin_ns, events[0].begin_ns);
  EXPECT_GE(events[1].end_ns, events[0].end_ns);
  EXPECT_EQ(events[2].category, Category::data);
  EXPECT_STREQ(timeline::category_name(Category::wait), "wait");
}

TEST(Timeline, ThreadsAreNumberedAndNamed) {
  Recording r;
  timeline::set_thread_name("training");
  { Span s("here", Category::other); }
  std::thread t([] {
    timeline::set_thread_name("communication");
    Span s("there", Category::comm);
  });
  t.join();
  const auto events = r.events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_NE(events[0].thread, events[1].thread);
  const auto names = r.thread_names();
  EXPECT_EQ(names.at(static_cast<std::size_t>(events[0].thread)), "training");
  EXPECT_EQ(names.at(static_cast<std::size_t>(events[1].thread)), "communication");
}

TEST(Timeline, EventsPastTheCapAreCountedNotKept) {
  Recording r(2);
  for (int i = 0; i < 5; ++i) Span s("x", Category::other, i);
  EXPECT_EQ(r.events().size(), 2u);
  EXPECT_EQ(r.dropped(), 3);
  EXPECT_EQ(r.totals().count[static_cast<int>(Category::other)], 5);
}

TEST(Timeline, OneRecordingAtATime) {
  Recording r;
  test::expect_error<ValueError>([] { Recording again; }, {"timeline::Recording", "already active"});
  test::expect_error<ValueError>([] { Recording bad(-1); }, {"max_events", "-1"});
}

TEST(Timeline, ASpanBegunBeforeTheRecordingIsNotKept) {
  std::optional<Recording> first;
  first.emplace();
  auto straddling = std::make_unique<Span>("old", Category::other);
  first.reset();
  Recording second;
  straddling.reset();
  EXPECT_TRUE(second.events().empty());
}

}  // namespace
}  // namespace rensa
