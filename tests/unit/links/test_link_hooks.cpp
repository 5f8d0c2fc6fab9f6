// Link hooks: thread-wide (LinkHookScope) and per link (Link::add_hook), the order of callbacks
// through nested links and links with their own call operators, and link_hooks::TimerHook.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "rensa/rensa.h"
#include "tests/unit/test_util.h"

namespace rensa {
namespace {

namespace F = functions;
namespace L = links;
using test::expect_error;

class LinkRecorder : public LinkHook {
 public:
  explicit LinkRecorder(std::string name = "LinkRecorder") : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  void added(Link* link) override { events.push_back(link ? "added link" : "added"); }
  void deleted(Link* link) override { events.push_back(link ? "deleted link" : "deleted"); }
  void forward_preprocess(const LinkForwardCall& c) override {
    events.push_back("pre " + detail::short_class_name(typeid(c.link)) + " args=" + std::to_string(c.args.size()));
  }
  void forward_postprocess(const LinkForwardCall& c) override {
    events.push_back("post " + detail::short_class_name(typeid(c.link)) + " out=" + std::to_string(c.out.size()));
    if (!c.out.empty()) last_out = c.out[0];
  }
  std::vector<std::string> events;
  Variable last_out;

 private:
  std::string name_;
};

struct TwoLayer : Chain {
  L::Linear l1{3, 4}, l2{4, 2};
  TwoLayer() {
    add_link("l1", l1);
    add_link("l2", l2);
  }
  Variable forward(const Variable& x) override { return l2(F::relu(l1(x))); }
  using Link::forward;
};

TEST(LinkHook, AScopeSeesEveryLinkCalledInsideIt) {
  TwoLayer net;
  LinkRecorder rec;
  Variable x(test::randn({2, 3}, Dtype::float32));
  Variable y;
  {
    LinkHookScope scope(rec);
    EXPECT_EQ(get_link_hooks(), std::vector<LinkHook*>{&rec});
    y = net(x);
  }
  net(x);  // not seen
  EXPECT_EQ(rec.events, (std::vector<std::string>{"added", "pre TwoLayer args=1", "pre Linear args=1",
                                                  "post Linear out=1", "pre Linear args=1", "post Linear out=1",
                                                  "post TwoLayer out=1", "deleted"}));
  EXPECT_TRUE(rec.last_out.is(y));
  EXPECT_TRUE(get_link_hooks().empty());
}

TEST(LinkHook, AHookAddedToALinkSeesOnlyThatLink) {
  TwoLayer net;
  auto rec = std::make_shared<LinkRecorder>();
  net.l2.add_hook(rec);
  EXPECT_EQ(net.l2.local_link_hooks().size(), 1u);
  net(Variable(test::randn({2, 3}, Dtype::float32)));
  net.l2.delete_hook("LinkRecorder");
  net(Variable(test::randn({2, 3}, Dtype::float32)));
  EXPECT_EQ(rec->events, (std::vector<std::string>{"added link", "pre Linear args=1", "post Linear out=1",
                                                   "deleted link"}));
}

TEST(LinkHook, BadInstallationsAreRefused) {
  L::Linear l(2, 2);
  l.add_hook(std::make_shared<LinkRecorder>(), "a");
  expect_error<KeyError>([&] { l.add_hook(std::make_shared<LinkRecorder>(), "a"); },
                         {"Link::add_hook", "'a'", "Linear"});
  expect_error<KeyError>([&] { l.delete_hook("b"); }, {"Link::delete_hook", "'b'", "Linear"});
  expect_error<ValueError>([&] { l.add_hook(nullptr); }, {"Link::add_hook", "null"});
  LinkRecorder r1, r2;
  LinkHookScope scope(r1);
  expect_error<KeyError>([&] { LinkHookScope again(r2); }, {"LinkHookScope", "LinkRecorder", "already"});
}

TEST(LinkHook, AForwardThatThrowsStillGetsItsPostprocess) {
  L::Linear l(3, 2);
  auto rec = std::make_shared<LinkRecorder>();
  l.add_hook(rec);
  EXPECT_THROW(l(Variable(Array::zeros({2, 5}))), ShapeError);
  EXPECT_EQ(rec->events, (std::vector<std::string>{"added link", "pre Linear args=1", "post Linear out=0"}));
}

TEST(LinkHook, LinksWithTheirOwnCallOperatorsAreHooked) {
  L::LSTM lstm(3, 2);
  auto rec = std::make_shared<LinkRecorder>();
  lstm.add_hook(rec);
  Variable x(test::randn({1, 3}, Dtype::float32));
  lstm(x);  // the stateful call: one argument, one output
  EXPECT_EQ(rec->events.back(), "post LSTM out=1");
}

TEST(LinkTimerHook, TimesEachLinkClass) {
  TwoLayer net;
  link_hooks::TimerHook timer;
  {
    LinkHookScope scope(timer);
    for (int i = 0; i < 2; ++i) net(Variable(test::randn({2, 3}, Dtype::float32)));
  }
  const auto& s = timer.summary();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].first, "Linear");  // the first to finish
  EXPECT_EQ(s[0].second.occurrence, 4);
  EXPECT_EQ(s[1].first, "TwoLayer");
  EXPECT_EQ(s[1].second.occurrence, 2);
  EXPECT_NEAR(timer.total_time(), s[1].second.elapsed_time, 1e-12);  // the outermost calls only
  std::ostringstream os;
  timer.print_report(os, "us");
  EXPECT_EQ(os.str().rfind("LinkName  ElapsedTime  Occurrence\n", 0), 0u) << os.str();
}

}  // namespace
}  // namespace rensa
