// send_obj and recv_obj under mpirun with 2 and 4 ranks: round trips of nested values, a ring, inside
// a split communicator; a type mismatch and a plain Communicator::send are clear errors that leave
// nothing behind; bad arguments.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "rensa/mn/communicator.h"
#include "rensa/mn/object.h"
#include "tests/mn/mn_test_util.h"
#include "tests/unit/test_util.h"

namespace rensa::mn {
namespace {

using rensa::test::expect_error;
using testing::world;

using Nested = std::map<std::string, std::vector<std::pair<int32_t, std::string>>>;

Nested nested(int r) {
  Nested m;
  m["empty"] = {};
  m[std::string("rank ").append(std::to_string(r))] = {{r, "a"}, {-r, std::string("b\0c", 3)}};
  m["many"] = std::vector<std::pair<int32_t, std::string>>(static_cast<std::size_t>(100 + r), {7, "x"});
  return m;
}

TEST(SendObj, RoundTripsOfNestedValues) {
  const int me = world().rank(), n = world().size();
  if (me == 0) {
    for (int r = 1; r < n; ++r) {
      send_obj(world(), nested(r), r, r);
      send_obj(world(), std::vector<std::vector<double>>{{0.5, -1.0}, {}, {static_cast<double>(r)}}, r, r);
      send_obj(world(), std::vector<bool>{true, false, r % 2 == 1}, r, r);
      send_obj(world(), std::make_pair('z', int64_t{1} << 40), r, r);
      send_obj(world(), std::string(), r, r);
    }
    for (int r = 1; r < n; ++r) EXPECT_EQ(recv_obj<double>(world(), r, 100 + r), 0.25 * r);
  } else {
    EXPECT_EQ(recv_obj<Nested>(world(), 0, me), nested(me));
    EXPECT_EQ((recv_obj<std::vector<std::vector<double>>>(world(), 0, me)),
              (std::vector<std::vector<double>>{{0.5, -1.0}, {}, {static_cast<double>(me)}}));
    EXPECT_EQ(recv_obj<std::vector<bool>>(world(), 0, me), (std::vector<bool>{true, false, me % 2 == 1}));
    EXPECT_EQ((recv_obj<std::pair<char, int64_t>>(world(), 0, me)), std::make_pair('z', int64_t{1} << 40));
    EXPECT_EQ(recv_obj<std::string>(world(), 0, me), "");
    send_obj(world(), 0.25 * me, 0, 100 + me);
  }
  world().barrier();
}

TEST(SendObj, AroundARing) {
  const int me = world().rank(), n = world().size();
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  const std::map<std::string, double> mine{{"rank", me}, {"half", me / 2.0}};
  std::map<std::string, double> got;
  // Even ranks send first, odd ones receive first: no rank waits on a send that no one receives.
  if (me % 2 == 0) {
    send_obj(world(), mine, next, 3);
    got = recv_obj<std::map<std::string, double>>(world(), prev, 3);
  } else {
    got = recv_obj<std::map<std::string, double>>(world(), prev, 3);
    send_obj(world(), mine, next, 3);
  }
  EXPECT_EQ(got, (std::map<std::string, double>{{"rank", prev}, {"half", prev / 2.0}}));
}

TEST(SendObj, InsideASplitCommunicator) {
  const int me = world().rank();
  Communicator sub = world().split(me % 2, -me);  // reversed: sub rank 0 is the highest world rank
  if (sub.size() < 2) GTEST_SKIP() << "groups of one rank";
  if (sub.rank() == 0) {
    send_obj(sub, std::string("from world rank ").append(std::to_string(me)), 1, 9);
  } else if (sub.rank() == 1) {
    EXPECT_EQ(recv_obj<std::string>(sub, 0, 9), std::string("from world rank ").append(std::to_string(me + 2)));
  }
}

TEST(SendObj, ATypeMismatchIsAnErrorAndLeavesNothingBehind) {
  const int me = world().rank();
  if (me == 0) {
    send_obj(world(), std::vector<int32_t>{1, 2, 3}, 1, 5);
    send_obj(world(), std::vector<float>{1.0f, 2.0f}, 1, 5);  // the same bytes as int32
    send_obj(world(), std::map<std::string, double>{{"a", 1.0}}, 1, 5);
    send_obj(world(), 42, 1, 5);
  } else if (me == 1) {
    expect_error<CommunicationError>(
        [] { recv_obj<std::vector<int64_t>>(world(), 0, 5); },
        {"recv_obj", "rank 1 receives a vector<int64>", "from rank 0", "tag 5", "rank 0 sent a vector<int32>"});
    expect_error<CommunicationError>([] { recv_obj<std::vector<int32_t>>(world(), 0, 5); },
                                     {"vector<int32>", "vector<float32>"});
    expect_error<CommunicationError>([] { recv_obj<std::map<std::string, float>>(world(), 0, 5); },
                                     {"map<string, float32>", "map<string, float64>"});
    EXPECT_EQ(recv_obj<int>(world(), 0, 5), 42);
  }
  world().barrier();
}

TEST(SendObj, APlainArrayIsNotAnObject) {
  const int me = world().rank();
  if (me == 0) {
    world().send(Array::full({2, 3}, 1.0), 1, 6);
    send_obj(world(), std::string("after"), 1, 6);
  } else if (me == 1) {
    expect_error<CommunicationError>(
        [] { recv_obj<std::string>(world(), 0, 6); },
        {"recv_obj", "rank 1 expected a string", "rank 0", "tag 6", "float32 (2, 3)", "send_obj did not send"});
    EXPECT_EQ(recv_obj<std::string>(world(), 0, 6), "after");
  }
  world().barrier();
}

TEST(SendObj, BadArguments) {
  const int me = world().rank(), n = world().size();
  expect_error<ValueError>([&] { send_obj(world(), 1, me, 0); }, {"send_obj", "destination", "another rank"});
  expect_error<ValueError>([&] { send_obj(world(), 1, n, 0); }, {"send_obj", "destination", "size"});
  expect_error<ValueError>([&] { send_obj(world(), 1, (me + 1) % n, -1); }, {"send_obj", "tag -1"});
  expect_error<ValueError>([&] { recv_obj<int>(world(), -1, 0); }, {"recv_obj", "source -1"});
  expect_error<ValueError>([&] { recv_obj<int>(world(), (me + 1) % n, -2); }, {"recv_obj", "tag -2"});
  expect_error<ValueError>([] { send_obj(Communicator(), 1, 0); }, {"send_obj", "null communicator"});
  expect_error<ValueError>([] { recv_obj<int>(Communicator(), 0); }, {"recv_obj", "null communicator"});
}

}  // namespace
}  // namespace rensa::mn
