// Communicator::split under mpirun with 2 and 4 ranks: halves, odd and even ranks, keys reversed, a
// rank alone in its color, a rank without a color, nested splits; collectives, every variant's
// gradient averaging (hosts regrouped) and a multi-node optimizer step inside the groups; and bad
// arguments, which every rank must raise alike.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "rensa/mn/multi_node_optimizer.h"
#include "rensa/mn/object.h"
#include "tests/mn/train_test_util.h"
#include "tests/unit/test_util.h"

namespace rensa::mn::test {
namespace {

namespace O = ::rensa::optimizers;
using rensa::test::expect_error;
using testing::world;

// The world ranks of `sub`'s ranks, in its rank order.
std::vector<int> members(Communicator sub) {
  return allgather_obj(sub, world().rank());
}

// The world ranks that pass `color`, ordered by (key, world rank): what MPI_Comm_split gives.
template <class ColorFn, class KeyFn>
std::vector<int> expected_members(int color, ColorFn color_of, KeyFn key_of) {
  std::vector<std::pair<int, int>> keyed;
  for (int r = 0; r < world().size(); ++r) {
    if (color_of(r) == color) keyed.emplace_back(key_of(r), r);
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<int> out;
  for (const auto& kr : keyed) out.push_back(kr.second);
  return out;
}

int index_of(const std::vector<int>& v, int x) {
  return static_cast<int>(std::find(v.begin(), v.end(), x) - v.begin());
}

int sum_of(const std::vector<int>& v) {
  int s = 0;
  for (int x : v) s += x;
  return s;
}

// allreduce, bcast, gather, allgather, scatter, alltoall, barrier and the object collectives inside
// `sub`, whose ranks are the world ranks `expected`.
void expect_collectives(Communicator sub, const std::vector<int>& expected) {
  const int me = world().rank();
  const int n = static_cast<int>(expected.size());
  ASSERT_EQ(sub.size(), n);
  ASSERT_EQ(sub.rank(), index_of(expected, me));
  EXPECT_EQ(members(sub), expected);
  EXPECT_EQ(sub.allreduce(Array::scalar(me, Dtype::int32)).item<int>(), sum_of(expected));
  // Large enough for the shared-memory path when the group is on one host.
  const Array big = Array::full({50000}, static_cast<double>(me + 1), Dtype::float32);
  const Array mean = sub.allreduce(big, ReduceOp::mean);
  EXPECT_FLOAT_EQ(mean.to_vector<float>()[49999], static_cast<float>(sum_of(expected) + n) / static_cast<float>(n));
  EXPECT_EQ(sub.bcast(Array::scalar(me, Dtype::int64), n - 1).item<int64_t>(), expected.back());
  const std::vector<Array> gathered = sub.gather(Array::full({sub.rank() + 1}, me, Dtype::int32), 0);
  if (sub.rank() == 0) {
    ASSERT_EQ(static_cast<int>(gathered.size()), n);
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(gathered[static_cast<std::size_t>(i)].shape(), Shape({i + 1}));
      EXPECT_EQ(gathered[static_cast<std::size_t>(i)].to_vector<int32_t>()[0], expected[static_cast<std::size_t>(i)]);
    }
  } else {
    EXPECT_TRUE(gathered.empty());
  }
  const std::vector<Array> all = sub.allgather(Array::scalar(me, Dtype::int32));
  ASSERT_EQ(static_cast<int>(all.size()), n);
  for (int i = 0; i < n; ++i)
    EXPECT_EQ(all[static_cast<std::size_t>(i)].item<int>(), expected[static_cast<std::size_t>(i)]);
  std::vector<Array> parts;
  for (int i = 0; i < n; ++i) parts.push_back(Array::scalar(100 * me + i, Dtype::int32));
  EXPECT_EQ(sub.scatter(parts, 0).item<int>(), 100 * expected[0] + sub.rank());
  const std::vector<Array> swapped = sub.alltoall(parts);
  for (int j = 0; j < n; ++j) {
    EXPECT_EQ(swapped[static_cast<std::size_t>(j)].item<int>(),
              100 * expected[static_cast<std::size_t>(j)] + sub.rank());
  }
  sub.barrier();
  EXPECT_EQ(bcast_obj(sub, std::string("from ").append(std::to_string(me))),
            std::string("from ").append(std::to_string(expected[0])));
  EXPECT_EQ(allreduce_obj(sub, me, ReduceOp::max), *std::max_element(expected.begin(), expected.end()));
}

TEST(Split, Halves) {
  const int me = world().rank(), n = world().size();
  const auto color_of = [&](int r) { return r < n / 2 ? 0 : 1; };
  Communicator sub = world().split(color_of(me), me);
  ASSERT_TRUE(sub.valid());
  EXPECT_EQ(sub.name(), "flat");
  EXPECT_EQ(sub.options().timeout, world().options().timeout);
  EXPECT_EQ(sub.options().check_collectives, world().options().check_collectives);
  EXPECT_NE(&sub.impl(), &world().impl());
  expect_collectives(sub, expected_members(color_of(me), color_of, [](int r) { return r; }));
}

TEST(Split, OddAndEvenWithKeysReversed) {
  const int me = world().rank();
  const auto color_of = [](int r) { return r % 2; };
  const auto key_of = [](int r) { return -r; };
  Communicator sub = world().split(color_of(me), key_of(me));
  const std::vector<int> expected = expected_members(color_of(me), color_of, key_of);
  EXPECT_TRUE(std::is_sorted(expected.rbegin(), expected.rend()));
  expect_collectives(sub, expected);
}

TEST(Split, EqualKeysKeepTheRankOrder) {
  const int me = world().rank();
  Communicator sub = world().split(0, 7);
  expect_collectives(sub, expected_members(
                              0, [](int) { return 0; }, [](int r) { return r; }));
  EXPECT_EQ(sub.rank(), me);
}

TEST(Split, ARankAloneInItsColor) {
  const int me = world().rank(), n = world().size();
  const auto color_of = [&](int r) { return r == n - 1 ? 1 : 0; };
  Communicator sub = world().split(color_of(me), 0);
  expect_collectives(sub, expected_members(color_of(me), color_of, [](int r) { return r; }));
  if (me == n - 1) {
    EXPECT_EQ(sub.size(), 1);
    EXPECT_EQ(sub.intra_size(), 1);
    EXPECT_EQ(sub.inter_size(), 1);
    expect_error<ValueError>([&] { sub.send(Array::scalar(1.0f), 0); }, {"send", "another rank"});
  }
}

TEST(Split, ARankWithoutAColorGetsANullCommunicator) {
  const int me = world().rank();
  const auto color_of = [](int r) { return r == 0 ? -1 : 5; };
  Communicator sub = world().split(me == 0 ? std::nullopt : std::optional<int>(5), me);
  if (me == 0) {
    EXPECT_FALSE(sub.valid());
    expect_error<ValueError>([&] { (void)sub.size(); }, {"null communicator"});
  } else {
    expect_collectives(sub, expected_members(5, color_of, [](int r) { return r; }));
  }
  world().barrier();
}

TEST(Split, NestedSplits) {
  const int me = world().rank(), n = world().size();
  // Every rank, in reverse order; then pairs of that order; then each pair again.
  Communicator reversed = world().split(0, n - 1 - me);
  ASSERT_EQ(reversed.rank(), n - 1 - me);
  Communicator pairs = reversed.split(reversed.rank() / 2, reversed.rank());
  std::vector<int> pair;
  for (int r = n - 1; r >= 0; --r) {
    if ((n - 1 - r) / 2 == (n - 1 - me) / 2) pair.push_back(r);
  }
  Communicator again = pairs.split(0, 0);
  // Interleaved use of all levels keeps each in step.
  EXPECT_EQ(reversed.allreduce(Array::scalar(me, Dtype::int32)).item<int>(), n * (n - 1) / 2);
  expect_collectives(pairs, pair);
  EXPECT_EQ(world().allreduce(Array::scalar(1, Dtype::int32)).item<int>(), n);
  expect_collectives(again, pair);
  expect_collectives(reversed, expected_members(
                                   0, [](int) { return 0; }, [&](int r) { return n - 1 - r; }));
}

// Options of a parent with simulated hosts of two ranks (one host for a variant that needs one).
CommunicatorOptions host_options(const std::string& name) {
  CommunicatorOptions o = testing::test_options();
  o.ranks_per_host = testing::runs_here(testing::variant(name), 2) ? 2 : world().size();
  return o;
}

TEST(Split, EveryVariantAveragesGradientsInsideItsGroups) {
  const int me = world().rank(), n = world().size();
  for (const std::string& name : communicator_names()) {
    Communicator parent = create_communicator(name, host_options(name));
    for (int how = 0; how < 2; ++how) {
      const auto color_of = [&](int r) { return how == 0 ? r % 2 : (r < n / 2 ? 0 : 1); };
      Communicator sub = parent.split(color_of(me), me);
      const std::vector<int> expected = expected_members(color_of(me), color_of, [](int r) { return r; });
      SCOPED_TRACE(name + (how == 0 ? " odd/even" : " halves"));
      ASSERT_EQ(sub.name(), name);
      EXPECT_EQ(sub.options().ranks_per_host, parent.options().ranks_per_host);
      // Each rank keeps its parent's host; hosts are numbered anew among the group's ranks.
      EXPECT_EQ(sub.host(), parent.host());
      const std::vector<std::string> hosts = allgather_obj(sub, sub.host());
      EXPECT_EQ(sub.inter_size(), static_cast<int>(std::set<std::string>(hosts.begin(), hosts.end()).size()));
      EXPECT_EQ(sub.intra_size(), static_cast<int>(std::count(hosts.begin(), hosts.end(), sub.host())));
      EXPECT_EQ(sub.intra_rank(), static_cast<int>(std::count(hosts.begin(), hosts.begin() + sub.rank(), sub.host())));
      expect_collectives(sub, expected);
      Net net(3, 4, 2, 7);
      for (const auto& [path, p] : net.namedparams(false)) {
        p.set_grad(Variable(Array::full(p.shape(), static_cast<double>(me + 1), p.dtype())));
      }
      sub.multi_node_mean_grad(net);
      const double want = name == "dummy" ? me + 1 : static_cast<double>(sum_of(expected) + sub.size()) / sub.size();
      for (const auto& [path, p] : net.namedparams(false)) {
        for (float v : p.grad().array().to_vector<float>()) EXPECT_FLOAT_EQ(v, static_cast<float>(want)) << path;
      }
    }
  }
}

TEST(Split, MultiNodeOptimizerStepInsideGroups) {
  const int me = world().rank();
  constexpr int64_t kIn = 4, kOut = 2, kLocal = 3;
  Communicator sub = world().split(me % 2, me);
  const int group = me % 2;
  // The group's ranks start from different values: the optimizer broadcasts its rank 0's.
  Net net(kIn, 5, kOut, 7);
  if (sub.rank() != 0) {
    for (const auto& [path, p] : net.namedparams(false)) {
      p.array().assign(rensa::test::randn(p.shape(), Dtype::float32, 40 + static_cast<uint64_t>(me)));
    }
  }
  auto opt = create_multi_node_optimizer(std::make_unique<O::SGD>(0.1), sub);
  opt->setup(net);
  Net ref(kIn, 5, kOut, 7);
  O::SGD ref_opt(0.1);
  ref_opt.setup(ref);
  const int64_t global = kLocal * sub.size();
  for (int step = 0; step < 3; ++step) {
    const int64_t lo = kLocal * sub.rank();
    auto [x, y] = batch_rows(10 * group + step, global, kIn, kOut, lo, lo + kLocal);
    opt->update([&, &x = x, &y = y] { return F::mean_squared_error(net(Variable(x)), Variable(y)); });
    auto [gx, gy] = batch_rows(10 * group + step, global, kIn, kOut, 0, global);
    ref_opt.update([&, &gx = gx, &gy = gy] { return F::mean_squared_error(ref(Variable(gx)), Variable(gy)); });
  }
  EXPECT_LT(max_rel_diff(param_values(net), param_values(ref)), 2e-5);
  // Every rank of the group holds the same bits.
  const std::vector<std::vector<double>> all = allgather_obj(sub, flatten(param_values(net)));
  for (std::size_t r = 1; r < all.size(); ++r) EXPECT_EQ(all[r], all[0]) << "rank " << r;
}

TEST(Split, ANegativeColorFailsEveryRank) {
  const int n = world().size();
  expect_error<ValueError>(
      [&] { world().split(world().rank() == n - 1 ? -3 : 0, 0); },
      {"split #", std::string("rank ").append(std::to_string(n - 1)).append(" passed color -3"), "non-negative"});
  // The ranks are still in step.
  EXPECT_EQ(world().allreduce(Array::scalar(1, Dtype::int32)).item<int>(), n);
}

TEST(Split, AGroupTheVariantCannotRunOnFailsEveryRank) {
  const int me = world().rank(), n = world().size();
  if (n != 4) GTEST_SKIP() << "needs 4 ranks";
  // Simulated hosts {0, 1} and {2, 3}: the group {0, 1, 2} has hosts of 2 and 1 ranks.
  Communicator parent = create_communicator("two_dimensional", host_options("two_dimensional"));
  expect_error<ValueError>([&] { parent.split(me < 3 ? 0 : 1, me); },
                           {"split", "color 0", "two_dimensional", "same number of ranks"});
  EXPECT_EQ(parent.allreduce(Array::scalar(1, Dtype::int32)).item<int>(), n);
}

TEST(Split, ErrorsInsideAGroupNameWorldRanksToo) {
  const int me = world().rank(), n = world().size();
  Communicator sub = world().split(0, n - 1 - me);
  const std::string prefix = std::string("rank ")
                                 .append(std::to_string(sub.rank()))
                                 .append(" (world rank ")
                                 .append(std::to_string(me))
                                 .append(") on host ");
  expect_error<ValueError>([&] { sub.bcast(Array::scalar(1.0), n); }, {prefix, ": bcast #", "root"});
}

TEST(Split, ANullCommunicatorCannotSplit) {
  expect_error<ValueError>([] { Communicator().split(0, 0); }, {"split", "null communicator"});
}

}  // namespace
}  // namespace rensa::mn::test
