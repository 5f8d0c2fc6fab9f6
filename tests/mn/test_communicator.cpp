// Collectives of rensa::mn::Communicator under mpirun with 2 and 4 ranks: every collective and dtype
// with rank-dependent values, odd sizes, size 0, every variant's gradient averaging in every wire
// dtype, and errors (which every rank must raise alike, so the ranks stay in step).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rensa/mn/communicator.h"
#include "rensa/mn/mpi.h"
#include "rensa/mn/object.h"
#include "tests/mn/mn_test_util.h"
#include "tests/unit/test_util.h"

namespace rensa::mn {
namespace {

using rensa::test::expect_error;
using testing::runs_here;
using testing::test_options;
using testing::variant;
using testing::world;

constexpr Dtype kAllDtypes[] = {Dtype::float32, Dtype::float64, Dtype::float16, Dtype::bfloat16,
                                Dtype::int32,   Dtype::int64,   Dtype::uint8,   Dtype::bool_};
constexpr int64_t kSizes[] = {0, 1, 7, 1001, 40000};

// Rank-dependent values, small integers so every dtype (and every sum of them) holds them exactly.
double value(Dtype dtype, int rank, int64_t i) {
  if (dtype == Dtype::bool_) return (rank + i) % 3 == 0 ? 1.0 : 0.0;
  if (dtype == Dtype::uint8) return static_cast<double>((rank * 3 + i) % 7);
  return static_cast<double>((rank + 1) * (i % 5) - 2 * (i % 3));
}

Array make(Dtype dtype, int rank, const Shape& shape) {
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = value(dtype, rank, static_cast<int64_t>(i));
  return Array::from_vector(v, shape).astype(dtype);
}

// The expected elementwise reduction over `size` ranks, in double.
std::vector<double> expected_reduce(Dtype dtype, ReduceOp op, int size, int64_t n) {
  std::vector<double> out(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double acc = value(dtype, 0, i);
    for (int r = 1; r < size; ++r) {
      const double v = value(dtype, r, i);
      switch (op) {
        case ReduceOp::sum:
        case ReduceOp::mean:
          acc = dtype == Dtype::bool_ ? double(acc != 0 || v != 0) : acc + v;
          break;
        case ReduceOp::max:
          acc = std::max(acc, v);
          break;
        case ReduceOp::min:
          acc = std::min(acc, v);
          break;
      }
    }
    if (op == ReduceOp::mean) acc /= size;
    out[static_cast<std::size_t>(i)] = acc;
  }
  return out;
}

void expect_values(const Array& a, const std::vector<double>& expected, const std::string& what) {
  ASSERT_EQ(a.size(), static_cast<int64_t>(expected.size())) << what;
  const auto got = a.to_vector<double>();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    ASSERT_NEAR(got[i], expected[i], 1e-9 + 1e-6 * std::abs(expected[i])) << what << " at " << i;
  }
}

// ---- attributes and creation -----------------------------------------------------------------------

// How the ranks of MPI_COMM_WORLD group by host name: host index and index within the host of each
// rank (hosts numbered in order of their first rank). One machine gives one host; the simulated
// hosts of scripts/netns-cluster give several.
struct HostLayout {
  std::vector<int> host, local;
  int hosts = 0;
};
HostLayout host_layout() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0, size = 0;
  MPI_Get_processor_name(name, &len);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<char> all(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
  HostLayout l;
  std::vector<std::string> names;
  std::vector<int> counts;
  for (int r = 0; r < size; ++r) {
    const std::string n(&all[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME]);
    const auto it = std::find(names.begin(), names.end(), n);
    const int h = static_cast<int>(it - names.begin());
    if (it == names.end()) {
      names.push_back(n);
      counts.push_back(0);
    }
    l.host.push_back(h);
    l.local.push_back(counts[static_cast<std::size_t>(h)]++);
  }
  l.hosts = static_cast<int>(names.size());
  return l;
}

TEST(Communicator, Attributes) {
  Communicator& comm = world();
  int rank = -1, size = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EXPECT_EQ(comm.rank(), rank);
  EXPECT_EQ(comm.size(), size);
  EXPECT_EQ(comm.name(), "flat");
  // Ranks grouped by host name (one machine: one host holding every rank).
  const HostLayout l = host_layout();
  const auto r = static_cast<std::size_t>(rank);
  EXPECT_EQ(comm.inter_size(), l.hosts);
  EXPECT_EQ(comm.inter_rank(), l.host[r]);
  EXPECT_EQ(comm.intra_size(), static_cast<int>(std::count(l.host.begin(), l.host.end(), l.host[r])));
  EXPECT_EQ(comm.intra_rank(), l.local[r]);
  // The simulated-host runs (scripts/netns-cluster, scripts/uts-host) say how many hosts they made.
  if (const char* hosts = std::getenv("RENSA_TEST_HOSTS")) {
    EXPECT_EQ(l.hosts, std::atoi(hosts));
  }
  EXPECT_FALSE(comm.host().empty());
  EXPECT_TRUE(comm.check_collectives());
  Communicator alias = comm;  // a handle
  EXPECT_EQ(&alias.impl(), &comm.impl());
  int cmp = MPI_UNEQUAL;
  MPI_Comm_compare(mpi_comm(comm), MPI_COMM_WORLD, &cmp);
  EXPECT_EQ(cmp, MPI_CONGRUENT);  // a duplicate
}

TEST(Communicator, OverAnMpiCommOfTheProgram) {
  const int world_rank = world().rank();
  MPI_Comm half = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half);
  Communicator comm = create_communicator("flat", half, test_options());
  MPI_Comm_free(&half);  // the communicator holds its own duplicate
  EXPECT_EQ(comm.size(), world().size() / 2);
  EXPECT_EQ(comm.rank(), world_rank / 2);
  // The sum of the world ranks of the same parity.
  int expected = 0;
  for (int r = world_rank % 2; r < world().size(); r += 2) expected += r;
  EXPECT_EQ(comm.allreduce(Array::scalar(world_rank, Dtype::int32)).item<int>(), expected);
  expect_error<ValueError>([] { create_communicator("nope", MPI_COMM_WORLD); }, {"unknown communicator 'nope'"});
}

TEST(Communicator, RanksPerHostGroupsRanksIntoHosts) {
  const int size = world().size();
  for (int per_host : {1, 2, 3}) {
    CommunicatorOptions o = test_options();
    o.ranks_per_host = per_host;
    Communicator comm = create_communicator("hierarchical", o);
    const int rank = comm.rank();
    EXPECT_EQ(comm.inter_rank(), rank / per_host) << per_host;
    EXPECT_EQ(comm.inter_size(), (size + per_host - 1) / per_host) << per_host;
    EXPECT_EQ(comm.intra_rank(), rank % per_host) << per_host;
    EXPECT_EQ(comm.intra_size(), std::min(per_host, size - rank / per_host * per_host)) << per_host;
    EXPECT_EQ(comm.host(), "host" + std::to_string(rank / per_host));
  }
}

TEST(Communicator, EveryVariantCreates) {
  for (const CommunicatorVariant& v : communicator_variants()) {
    if (!runs_here(v)) {
      expect_error<ValueError>([&] { create_communicator(v.name, test_options()); }, {v.name, "hosts", "use naive, flat"});
      continue;
    }
    Communicator comm = create_communicator(v.name, test_options());
    EXPECT_EQ(comm.name(), v.name);
    EXPECT_EQ(comm.size(), world().size());
  }
}

// ChainerMN's names come first, in its order; each variant has a summary and runs on one host.
TEST(Communicator, VariantTable) {
  const std::vector<std::string> chainermn{"naive", "flat", "hierarchical", "two_dimensional", "single_node", "dummy"};
  const auto& names = communicator_names();
  ASSERT_GE(names.size(), chainermn.size());
  EXPECT_TRUE(std::equal(chainermn.begin(), chainermn.end(), names.begin()));
  for (const CommunicatorVariant& v : communicator_variants()) {
    EXPECT_FALSE(v.summary.empty()) << v.name;
    EXPECT_TRUE(v.accepts({3})) << v.name << ": every variant runs on one host";
  }
  EXPECT_FALSE(variant("single_node").accepts({2, 2}));
  EXPECT_TRUE(variant("two_dimensional").accepts({2, 2}));
  EXPECT_FALSE(variant("two_dimensional").accepts({3, 1}));
  EXPECT_TRUE(variant("hierarchical").accepts({3, 1}));
  EXPECT_FALSE(variant("dummy").communicates);
}

// docs/mn.md's table of variants is the library's: a row "| `name` | summary |" for each, in order.
TEST(Communicator, DocsListEveryVariant) {
  std::ifstream in(std::string(RENSA_SOURCE_DIR) + "/docs/mn.md");
  ASSERT_TRUE(in) << "docs/mn.md";
  std::vector<std::string> rows;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| `", 0) == 0) rows.push_back(line);
  }
  std::size_t at = 0;
  for (const CommunicatorVariant& v : communicator_variants()) {
    const std::string row = "| `" + v.name + "` | " + v.summary + " |";
    const auto it = std::find(rows.begin() + static_cast<std::ptrdiff_t>(at), rows.end(), row);
    ASSERT_NE(it, rows.end()) << "docs/mn.md has no row, after the previous variant's, reading\n" << row;
    at = static_cast<std::size_t>(it - rows.begin()) + 1;
  }
}

TEST(Communicator, UnknownNameListsTheValidOnes) {
  std::vector<std::string> expected{"create_communicator", "pure_nccl"};
  for (const std::string& name : communicator_names()) expected.push_back(name);
  expect_error<ValueError>([] { create_communicator("pure_nccl", test_options()); }, expected);
}

TEST(Communicator, InvalidOptions) {
  CommunicatorOptions o = test_options();
  o.allreduce_grad_dtype = Dtype::int32;
  expect_error<ValueError>([&] { create_communicator("flat", o); },
                           {"allreduce_grad_dtype", "float32, float16, bfloat16 or float64", "int32"});
  o = test_options();
  o.timeout = std::chrono::milliseconds(-1);
  expect_error<ValueError>([&] { create_communicator("flat", o); }, {"timeout", "negative"});
  o = test_options();
  o.check_collectives = 2;
  expect_error<ValueError>([&] { create_communicator("flat", o); }, {"check_collectives", "2"});
  o = test_options();
  o.ranks_per_host = -1;
  expect_error<ValueError>([&] { create_communicator("flat", o); }, {"ranks_per_host"});
}

TEST(Communicator, SingleNodeNeedsOneHost) {
  CommunicatorOptions o = test_options();
  o.ranks_per_host = 1;
  expect_error<ValueError>([&] { create_communicator("single_node", o); },
                           {"single_node", "on " + std::to_string(world().size()) + " hosts", "use naive, flat"});
}

TEST(Communicator, TwoDimensionalNeedsEqualHosts) {
  if (world().size() < 3) GTEST_SKIP() << "needs hosts of different sizes";
  CommunicatorOptions o = test_options();
  o.ranks_per_host = world().size() - 1;
  expect_error<ValueError>([&] { create_communicator("two_dimensional", o); },
                           {"two_dimensional", "same number of ranks", "hierarchical"});
}

TEST(Communicator, NullHandleThrows) {
  Communicator none;
  EXPECT_FALSE(none.valid());
  expect_error<ValueError>([&] { (void)none.rank(); }, {"Communicator::rank", "null communicator"});
  expect_error<ValueError>([&] { none.barrier(); }, {"Communicator::barrier"});
}

// ---- allreduce ---------------------------------------------------------------------------------------

TEST(Allreduce, EveryDtypeAndOpWithOddSizes) {
  CommunicatorOptions no_shm = test_options();
  no_shm.shared_memory = false;
  // Through shared memory (every rank is on this machine) and through MPI_Allreduce.
  for (Communicator comm : {world(), create_communicator("flat", no_shm)}) {
    for (Dtype dtype : kAllDtypes) {
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean, ReduceOp::max, ReduceOp::min}) {
        if (op == ReduceOp::mean && !is_floating(dtype)) continue;
        for (int64_t n : kSizes) {
          const std::string what =
              std::string(dtype_name(dtype)) + " op " + std::to_string(int(op)) + " n " + std::to_string(n);
          Array x = make(dtype, comm.rank(), {n});
          Array y = comm.allreduce(x, op);
          ASSERT_EQ(y.dtype(), dtype) << what;
          ASSERT_EQ(y.shape(), x.shape()) << what;
          EXPECT_FALSE(y.shares_storage(x)) << what;
          expect_values(y, expected_reduce(dtype, op, comm.size(), n), what);
        }
      }
    }
  }
}

TEST(Allreduce, SharedMemoryGivesEveryRankTheSameBits) {
  Communicator& comm = world();
  // 300000 float32 elements: several chunks of the shared segment, with a partial last one.
  Array x = rensa::test::randn({300000}, Dtype::float32, 7 + static_cast<uint64_t>(comm.rank()));
  Array y = comm.allreduce(x);
  std::vector<Array> all = comm.allgather(y);
  for (const Array& a : all) EXPECT_TRUE(array_equal(a, all[0]));
  CommunicatorOptions no_shm = test_options();
  no_shm.shared_memory = false;
  EXPECT_TRUE(allclose(y, create_communicator("flat", no_shm).allreduce(x), 1e-5, 1e-5));
}

TEST(Allreduce, ShapesScalarsNonContiguousAndDevices) {
  Communicator& comm = world();
  const int n = comm.size();
  // 0-d
  Array s = comm.allreduce(Array::scalar(comm.rank() + 1.0, Dtype::float64));
  EXPECT_EQ(s.ndim(), 0);
  EXPECT_EQ(s.item<double>(), n * (n + 1) / 2.0);
  // a transposed view: reduced by logical position
  Array m = Array::from_vector<float>({0, 1, 2, 3, 4, 5}, {2, 3});
  Array mt = m.transpose();
  ASSERT_FALSE(mt.is_contiguous());
  Array r = comm.allreduce(mt, ReduceOp::max);
  EXPECT_EQ(r.shape(), Shape({3, 2}));
  EXPECT_TRUE(array_equal(r, mt));
  // the reference device: the result stays there
  Array ref = Array::full({4}, comm.rank(), Dtype::int64).to(Device::reference());
  Array rr = comm.allreduce(ref, ReduceOp::sum);
  EXPECT_EQ(rr.device(), Device::reference());
  for (int64_t v : rr.to_vector<int64_t>()) EXPECT_EQ(v, n * (n - 1) / 2);
}

TEST(Allreduce, HalfMeanDividesBeforeTheSum) {
  // 40000 in every rank would overflow float16 (max 65504) if summed first.
  Communicator& comm = world();
  Array x = Array::full({5}, 40000.0, Dtype::float16);
  Array y = comm.allreduce(x, ReduceOp::mean);
  for (float v : y.to_vector<float>()) EXPECT_EQ(v, 40000.0f);
  Array b = Array::full({5}, 3.0e38, Dtype::bfloat16);  // near bfloat16's max too
  for (float v : comm.allreduce(b, ReduceOp::mean).to_vector<float>()) EXPECT_TRUE(std::isfinite(v));
}

TEST(Allreduce, Errors) {
  Communicator& comm = world();
  expect_error<DtypeError>([&] { comm.allreduce(Array::zeros({3}, Dtype::int32), ReduceOp::mean); },
                           {"allreduce #", "mean", "int32", "(3,)"});
  expect_error<ValueError>([&] { comm.allreduce(Array()); }, {"allreduce", "null"});
}

TEST(Allreduce, MismatchIsCaughtAndNamesBothSides) {
  Communicator& comm = world();
  const int64_t n = comm.rank() == 1 ? 4 : 3;
  const std::string host = comm.host();
  expect_error<CommunicationError>(
      [&] { comm.allreduce(Array::zeros({n})); },
      {"rank " + std::to_string(comm.rank()) + " on host " + host + ": allreduce #", "(flat, ", "collective mismatch",
       "rank 0 calls allreduce(sum, float32, 3 elements)", "rank 1 calls allreduce(sum, float32, 4 elements)"});
  // A different operation.
  expect_error<CommunicationError>(
      [&] {
        if (comm.rank() == 0) {
          comm.bcast(Array::zeros({2}), 0);
        } else {
          comm.allreduce(Array::zeros({2}));
        }
      },
      {"collective mismatch", "rank 0 calls bcast(float32, 2 elements, root 0)", "calls allreduce(sum"});
  // The ranks are still in step afterwards.
  Array y = comm.allreduce(Array::ones({2}));
  EXPECT_EQ(y.to_vector<float>()[0], comm.size());
}

// ---- bcast, gather, allgather, scatter, alltoall -----------------------------------------------------

TEST(Bcast, EveryDtypeFromEveryRoot) {
  Communicator& comm = world();
  for (int root : {0, comm.size() - 1}) {
    for (Dtype dtype : kAllDtypes) {
      for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{40000}}) {
        const Shape shape = n == 7 ? Shape{7, 1} : Shape{n};
        Array x = comm.rank() == root ? make(dtype, root, shape) : Array();
        Array y = comm.bcast(x, root);
        ASSERT_EQ(y.dtype(), dtype);
        ASSERT_EQ(y.shape(), shape);
        if (comm.rank() == root) {
          EXPECT_FALSE(y.shares_storage(x));
        }
        std::vector<double> expected(static_cast<std::size_t>(n));
        for (int64_t i = 0; i < n; ++i) expected[static_cast<std::size_t>(i)] = value(dtype, root, i);
        expect_values(y, expected, std::string("bcast ") + std::string(dtype_name(dtype)));
      }
    }
  }
  // Other ranks' arrays are ignored whatever they are; 0-d travels as 0-d.
  Array s = comm.bcast(comm.rank() == 0 ? Array::scalar(2.5, Dtype::float64) : Array::zeros({9}, Dtype::int32));
  EXPECT_EQ(s.ndim(), 0);
  EXPECT_EQ(s.item<double>(), 2.5);
}

TEST(Bcast, Errors) {
  Communicator& comm = world();
  expect_error<ValueError>([&] { comm.bcast(Array::zeros({1}), comm.size()); },
                           {"bcast", "root " + std::to_string(comm.size()), "size " + std::to_string(comm.size())});
  expect_error<ValueError>([&] { comm.bcast(Array(), 0); }, {"bcast", "root (rank 0)", "null"});
}

TEST(Gather, ShapesDifferPerRank) {
  Communicator& comm = world();
  const int root = comm.size() - 1;
  for (Dtype dtype : kAllDtypes) {
    Array x = make(dtype, comm.rank(), {comm.rank(), 3});  // rank 0 sends (0, 3)
    std::vector<Array> all = comm.gather(x, root);
    if (comm.rank() != root) {
      EXPECT_TRUE(all.empty());
      continue;
    }
    ASSERT_EQ(all.size(), static_cast<std::size_t>(comm.size()));
    for (int r = 0; r < comm.size(); ++r) {
      EXPECT_EQ(all[r].shape(), Shape({r, 3}));
      EXPECT_EQ(all[r].dtype(), dtype);
      EXPECT_TRUE(array_equal(all[r], make(dtype, r, {r, 3}))) << r;
    }
  }
}

TEST(Allgather, ShapesDifferPerRank) {
  Communicator& comm = world();
  for (Dtype dtype : kAllDtypes) {
    Array x = make(dtype, comm.rank(), {2, comm.rank() + 1}).transpose();  // non-contiguous input
    std::vector<Array> all = comm.allgather(x);
    ASSERT_EQ(all.size(), static_cast<std::size_t>(comm.size()));
    for (int r = 0; r < comm.size(); ++r) {
      EXPECT_TRUE(array_equal(all[r], make(dtype, r, {2, r + 1}).transpose())) << r;
    }
  }
  std::vector<Array> zeros = comm.allgather(Array::zeros({0}));
  ASSERT_EQ(zeros.size(), static_cast<std::size_t>(comm.size()));
  for (const Array& z : zeros) EXPECT_EQ(z.size(), 0);
}

TEST(Gather, DtypesMustAgreeOnEveryRank) {
  Communicator& comm = world();
  comm.set_check_collectives(false);  // the fingerprint would catch it first
  Array x = Array::zeros({2}, comm.rank() == 1 ? Dtype::int32 : Dtype::float32);
  expect_error<DtypeError>([&] { comm.gather(x, 0); }, {"gather", "rank 0 passes float32", "rank 1 passes int32"});
  expect_error<DtypeError>([&] { comm.allgather(x); }, {"allgather", "rank 1 passes int32"});
  expect_error<ValueError>([&] { comm.allgather(comm.rank() == 1 ? Array() : Array::zeros({1})); },
                           {"allgather", "rank 1 passed a null array"});
  comm.set_check_collectives(true);
}

TEST(Scatter, EachRankGetsItsPart) {
  Communicator& comm = world();
  for (int root : {0, comm.size() - 1}) {
    for (Dtype dtype : kAllDtypes) {
      std::vector<Array> parts;
      if (comm.rank() == root) {
        for (int r = 0; r < comm.size(); ++r) parts.push_back(make(dtype, r, {r, 2}));
      }
      Array mine = comm.scatter(parts, root);
      EXPECT_TRUE(array_equal(mine, make(dtype, comm.rank(), {comm.rank(), 2})));
      EXPECT_EQ(mine.dtype(), dtype);
    }
  }
}

TEST(Scatter, WrongCountFailsEveryRank) {
  Communicator& comm = world();
  std::vector<Array> parts(comm.rank() == 0 ? 1 : 0, Array::zeros({1}));
  expect_error<ValueError>([&] { comm.scatter(parts, 0); },
                           {"scatter", "root (rank 0) passed 1 arrays for " + std::to_string(comm.size()) + " ranks"});
}

TEST(Alltoall, PersonalizedExchange) {
  Communicator& comm = world();
  const int me = comm.rank();
  for (Dtype dtype : {Dtype::float32, Dtype::int64, Dtype::float16, Dtype::bool_}) {
    std::vector<Array> xs;
    for (int j = 0; j < comm.size(); ++j) xs.push_back(Array::full({j + 1}, me * 10 + j, dtype));
    std::vector<Array> got = comm.alltoall(xs);
    ASSERT_EQ(got.size(), static_cast<std::size_t>(comm.size()));
    for (int j = 0; j < comm.size(); ++j) {
      EXPECT_TRUE(array_equal(got[j], Array::full({me + 1}, j * 10 + me, dtype))) << j;
    }
  }
  comm.set_check_collectives(false);  // show that the argument check itself keeps every rank in step
  std::vector<Array> wrong(comm.rank() == 1 ? 1 : comm.size(), Array::zeros({1}));
  expect_error<ValueError>([&] { comm.alltoall(wrong); },
                           {"alltoall", "rank 1 passed 1 arrays for " + std::to_string(comm.size()) + " ranks"});
  comm.set_check_collectives(true);
}

// ---- point to point ----------------------------------------------------------------------------------

TEST(SendRecv, PairsExchangeEveryDtype) {
  Communicator& comm = world();
  const int me = comm.rank();
  const int peer = me ^ 1;  // sizes are even: 0-1, 2-3
  for (Dtype dtype : kAllDtypes) {
    for (int64_t n : {int64_t{0}, int64_t{5}, int64_t{1} << 20}) {  // 1M elements: past the eager limit
      Array mine = make(dtype, me, {n});
      Array theirs;
      if (me % 2 == 0) {
        comm.send(mine, peer, 3);
        theirs = comm.recv(peer, 3);
      } else {
        theirs = comm.recv(peer, 3);
        comm.send(mine, peer, 3);
      }
      EXPECT_TRUE(array_equal(theirs, make(dtype, peer, {n}))) << dtype_name(dtype) << " " << n;
    }
  }
  // Tags select messages: receive them in the opposite order.
  if (me % 2 == 0) {
    comm.send(Array::full({2}, 1.0), peer, 1);
    comm.send(Array::full({3}, 2.0), peer, 2);
  } else {
    EXPECT_EQ(comm.recv(peer, 2).shape(), Shape({3}));
    EXPECT_EQ(comm.recv(peer, 1).shape(), Shape({2}));
  }
  comm.barrier();
}

TEST(SendRecv, Errors) {
  Communicator& comm = world();
  expect_error<ValueError>([&] { comm.send(Array::zeros({1}), comm.rank()); }, {"send", "another rank"});
  expect_error<ValueError>([&] { comm.send(Array::zeros({1}), comm.size()); }, {"send", "destination"});
  expect_error<ValueError>([&] { comm.send(Array::zeros({1}), comm.rank() ^ 1, -1); }, {"send", "tag -1"});
  expect_error<ValueError>([&] { comm.recv(-1); }, {"recv", "source -1"});
}

// ---- bytes and objects ---------------------------------------------------------------------------------

TEST(Bytes, Collectives) {
  Communicator& comm = world();
  const int root = comm.size() - 1;
  const std::string mine(static_cast<std::size_t>(comm.rank() * 3), static_cast<char>('a' + comm.rank()));
  EXPECT_EQ(comm.bcast_bytes(comm.rank() == root ? std::string("hello\0world", 11) : std::string("x"), root),
            std::string("hello\0world", 11));
  auto gathered = comm.gather_bytes(mine, root);
  auto all = comm.allgather_bytes(mine);
  ASSERT_EQ(all.size(), static_cast<std::size_t>(comm.size()));
  for (int r = 0; r < comm.size(); ++r) {
    EXPECT_EQ(all[r], std::string(static_cast<std::size_t>(r * 3), static_cast<char>('a' + r)));
  }
  if (comm.rank() == root) {
    EXPECT_EQ(gathered, all);
  } else {
    EXPECT_TRUE(gathered.empty());
  }
  std::vector<std::string> parts;
  if (comm.rank() == 0) {
    for (int r = 0; r < comm.size(); ++r) parts.push_back(std::string(static_cast<std::size_t>(r), 'z'));
  }
  EXPECT_EQ(comm.scatter_bytes(parts, 0), std::string(static_cast<std::size_t>(comm.rank()), 'z'));
  std::vector<std::string> wrong(comm.rank() == 0 ? 1 : 0);
  expect_error<ValueError>([&] { comm.scatter_bytes(wrong, 0); }, {"scatter_bytes", "passed 1 parts"});
}

TEST(Objects, BcastGatherAllgather) {
  Communicator& comm = world();
  const int me = comm.rank();
  using Metrics = std::map<std::string, double>;
  Metrics m{{"loss", 0.5 * me}, {"rank" + std::to_string(me), 1.0}};
  EXPECT_EQ(bcast_obj(comm, m, 0), (Metrics{{"loss", 0.0}, {"rank0", 1.0}}));
  const std::vector<std::string> words{"a", "", "rank " + std::to_string(me)};
  const auto all_words = allgather_obj(comm, words);
  ASSERT_EQ(all_words.size(), static_cast<std::size_t>(comm.size()));
  EXPECT_EQ(all_words[1][2], "rank 1");
  const auto pairs = gather_obj(comm, std::make_pair(me, std::vector<double>(me, 1.5)), 0);
  if (me == 0) {
    ASSERT_EQ(pairs.size(), static_cast<std::size_t>(comm.size()));
    EXPECT_EQ(pairs[3 % comm.size()].first, 3 % comm.size());
    EXPECT_EQ(pairs[1].second, std::vector<double>(1, 1.5));
  } else {
    EXPECT_TRUE(pairs.empty());
  }
  EXPECT_EQ(bcast_obj(comm, me == 1 ? true : false, 1), true);
  EXPECT_EQ(bcast_obj(comm, std::string(me == 0 ? "root" : ""), 0), "root");
  EXPECT_EQ(allgather_obj(comm, int64_t{me} << 40).back(), int64_t{comm.size() - 1} << 40);
}

TEST(Objects, Allreduce) {
  Communicator& comm = world();
  const int n = comm.size();
  const int me = comm.rank();
  EXPECT_EQ(allreduce_obj(comm, me + 1), n * (n + 1) / 2);
  EXPECT_EQ(allreduce_obj(comm, me, ReduceOp::max), n - 1);
  EXPECT_EQ(allreduce_obj(comm, me, ReduceOp::min), 0);
  EXPECT_DOUBLE_EQ(allreduce_obj(comm, double(me), ReduceOp::mean), (n - 1) / 2.0);
  EXPECT_EQ(allreduce_obj(comm, std::vector<int64_t>{me, 1, -me}),
            (std::vector<int64_t>{n * (n - 1) / 2, n, -n * (n - 1) / 2}));
  // Per-rank metrics: a key only some ranks have is reduced over those ranks.
  std::map<std::string, double> m{{"loss", double(me)}};
  if (me == 1) m["only1"] = 7.0;
  const auto mean = allreduce_obj(comm, m, ReduceOp::mean);
  EXPECT_DOUBLE_EQ(mean.at("loss"), (n - 1) / 2.0);
  EXPECT_DOUBLE_EQ(mean.at("only1"), 7.0);
  expect_error<ValueError>([&] { allreduce_obj(comm, std::vector<double>(me == 1 ? 2 : 3)); },
                           {"allreduce_obj", "rank 0 passes 3 elements but rank 1 passes 2"});
  expect_error<DtypeError>([&] { allreduce_obj(comm, me, ReduceOp::mean); }, {"allreduce_obj", "mean"});
}

// ---- bcast_data and gradient averaging --------------------------------------------------------------

// A small model: parameters of odd sizes and several dtypes, a child link, a persistent value, and
// an uninitialized parameter.
struct Model : Chain {
  std::shared_ptr<Link> child = std::make_shared<Link>();
  Variable W, b, h, v;
  explicit Model(int rank) {
    W = add_param("W", Array::full({3, 5}, rank + 1.0));
    b = add_param("b", Array::full({7}, -rank - 0.5, Dtype::float64));
    h = add_param("h", Array::full({0}, 1.0));
    add_param("lazy");
    add_persistent("count", Array::full({}, rank * 10, Dtype::int64));
    v = child->add_param("v", Array::full({4}, rank * 2.0, Dtype::float16));
    add_link("child", child);
  }
};

TEST(BcastData, CopiesRankZerosValuesInPlace) {
  Communicator& comm = world();
  Model m(comm.rank());
  Array W_before = m.W.array();  // a handle: must see the new values
  comm.bcast_data(m);
  EXPECT_TRUE(array_equal(W_before, Array::full({3, 5}, 1.0)));
  EXPECT_TRUE(array_equal(m.b.array(), Array::full({7}, -0.5, Dtype::float64)));
  EXPECT_TRUE(array_equal(m.v.array(), Array::full({4}, 0.0, Dtype::float16)));
  EXPECT_EQ(m.persistent("count").item<int64_t>(), 0);
  EXPECT_TRUE(m.param("lazy").array().is_null());
}

TEST(BcastData, StructureMustAgree) {
  Communicator& comm = world();
  {
    Model m(comm.rank());
    if (comm.rank() == 1) m.param("lazy").set_array(Array::zeros({2}));
    expect_error<ValueError>([&] { comm.bcast_data(m); }, {"bcast_data", "rank 0 has parameter /lazy (uninitialized)",
                                                           "rank 1 has parameter /lazy (2,) float32"});
  }
  {
    Model m(comm.rank());
    if (comm.rank() == 1) m.W.set_array(Array::zeros({5, 3}));
    expect_error<ValueError>([&] { comm.bcast_data(m); }, {"bcast_data", "/W (3, 5) float32", "/W (5, 3) float32"});
  }
}

struct GradCase {
  std::string name;
  int ranks_per_host;
  Dtype wire;
  bool shared_memory = true;
  bool communicates = true;
};

std::vector<GradCase> grad_cases() {
  std::vector<GradCase> cases;
  const int size = world().size();
  for (const CommunicatorVariant& v : communicator_variants()) {
    // Every grouping the variant runs on: one host, hosts of one to three ranks (of 4: 3 and 1).
    for (int rph : {0, 1, 2, 3}) {
      if (rph > size || !runs_here(v, rph)) continue;
      for (Dtype wire : {Dtype::float32, Dtype::float16, Dtype::bfloat16, Dtype::float64}) {
        cases.push_back({v.name, rph, wire, true, v.communicates});
        if (v.communicates) cases.push_back({v.name, rph, wire, false, true});
      }
    }
  }
  return cases;
}

std::string case_name(const GradCase& c) {
  return c.name + " ranks_per_host " + std::to_string(c.ranks_per_host) + " wire " + std::string(dtype_name(c.wire)) +
         (c.shared_memory ? "" : " without shared memory");
}

// Sets rank-dependent gradients: values small enough that every wire dtype carries the mean exactly.
void set_grads(Model& m, int rank) {
  auto g = [&](const Variable& p, double scale) {
    std::vector<double> v(static_cast<std::size_t>(p.size()));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = scale * ((rank + 1) * double(i % 4 + 1));
    p.set_grad(Variable(Array::from_vector(v, p.shape()).astype(p.dtype())));
  };
  g(m.W, 1.0);
  g(m.b, -0.5);
  g(m.h, 1.0);
  g(m.v, 2.0);
}

double mean_grad_value(int size, double scale, std::size_t i) {
  double sum = 0;
  for (int r = 0; r < size; ++r) sum += scale * ((r + 1) * double(i % 4 + 1));
  return sum / size;
}

void expect_mean_grads(const Model& m, int size, const std::string& what) {
  auto check = [&](const Variable& p, double scale) {
    const auto got = p.grad().array().to_vector<double>();
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], mean_grad_value(size, scale, i), 1e-9) << what << " " << p.name() << " at " << i;
    }
  };
  check(m.W, 1.0);
  check(m.b, -0.5);
  check(m.h, 1.0);
  check(m.v, 2.0);
}

TEST(MeanGrad, EveryVariantAndWireDtype) {
  for (const GradCase& c : grad_cases()) {
    CommunicatorOptions o = test_options();
    o.allreduce_grad_dtype = c.wire;
    o.ranks_per_host = c.ranks_per_host;
    o.shared_memory = c.shared_memory;
    Communicator comm = create_communicator(c.name, o);
    Model m(comm.rank());
    set_grads(m, comm.rank());
    Array W_grad = m.W.grad().array();
    comm.multi_node_mean_grad(m);
    EXPECT_TRUE(m.W.grad().array().shares_storage(W_grad)) << "averaged in place";
    if (!c.communicates) {  // the local gradients stay
      Model local(comm.rank());
      set_grads(local, comm.rank());
      EXPECT_TRUE(allclose(m.W.grad().array(), local.W.grad().array())) << case_name(c);
      continue;
    }
    expect_mean_grads(m, comm.size(), case_name(c));
    EXPECT_EQ(m.b.grad().dtype(), Dtype::float64);
    EXPECT_EQ(m.v.grad().dtype(), Dtype::float16);
  }
}

// Gradients are packed straight into the shared segment's 1 MiB chunks and unpacked out of them:
// arrays that straddle chunk boundaries, an empty one, and a float64 one travelling apart.
TEST(MeanGrad, GradientsStraddlingSharedMemoryChunks) {
  for (const char* wire : {"float32", "bfloat16"}) {
    CommunicatorOptions o = test_options();
    o.allreduce_grad_dtype = dtype_from_name(wire);
    Communicator comm = create_communicator("flat", o);
    Link l;
    std::vector<Variable> ps;
    const std::vector<int64_t> sizes = {300001, 7, 0, 262144, 100000};
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      std::string name = std::to_string(i);
      name.insert(0, 1, 'p');  // not "p" + ...: GCC 12 warns of a false overlap (-Wrestrict) there
      ps.push_back(l.add_param(name, Array::zeros({sizes[i]})));
      // 0.25 steps: exact in bfloat16 too for these magnitudes.
      std::vector<float> g(static_cast<std::size_t>(sizes[i]));
      for (std::size_t j = 0; j < g.size(); ++j) g[j] = static_cast<float>((j % 8) * 0.25 + comm.rank() + i);
      ps.back().set_grad(Variable(Array::from_vector(g)));
    }
    Variable d = l.add_param("d", Array::zeros({70000}, Dtype::float64));
    d.set_grad(Variable(Array::full({70000}, 1.0 + comm.rank(), Dtype::float64)));
    comm.multi_node_mean_grad(l);
    const double mean_rank = (comm.size() - 1) / 2.0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const std::vector<float> g = ps[i].grad().array().to_vector<float>();
      ASSERT_EQ(static_cast<int64_t>(g.size()), sizes[i]);
      for (std::size_t j = 0; j < g.size(); j += 997) {
        EXPECT_NEAR(g[j], (static_cast<double>(j % 8)) * 0.25 + mean_rank + i, 1e-5)
            << wire << " p" << i << "[" << j << "]";
      }
      if (!g.empty()) {
        EXPECT_NEAR(g.back(), static_cast<double>((g.size() - 1) % 8) * 0.25 + mean_rank + i, 1e-5) << wire;
      }
    }
    EXPECT_EQ(d.grad().array().to_vector<double>()[69999], 1.0 + mean_rank);
  }
}

TEST(MeanGrad, Float64GradientsKeepTheirPrecision) {
  Communicator comm = create_communicator("flat", test_options());
  Link l;
  Variable p = l.add_param("p", Array::zeros({3}, Dtype::float64));
  p.set_grad(Variable(Array::full({3}, 1.0 + 1e-12 * comm.rank(), Dtype::float64)));
  comm.multi_node_mean_grad(l);
  const int n = comm.size();
  EXPECT_NEAR(p.grad().array().to_vector<double>()[0], 1.0 + 1e-12 * (n - 1) / 2.0, 1e-15);
}

// Regression: the background thread kept the request's arrays until after wait() returned, so a
// communicator torn down at exit could free them on that thread while statics were being destroyed.
TEST(MeanGrad, RequestHoldsNoArraysAfterWait) {
  Communicator comm = create_communicator("flat", test_options());
  Array g = Array::full({1000}, 1.0 + comm.rank());
  for (int i = 0; i < 20; ++i) {
    Communicator::Request r = comm.start_mean_grad({g});
    r.wait();
    EXPECT_EQ(g.storage().use_count(), 1) << "request " << i << " still holds the array";
  }
}

TEST(MeanGrad, HalfWireCannotOverflow) {
  CommunicatorOptions o = test_options();
  o.allreduce_grad_dtype = Dtype::float16;
  Communicator comm = create_communicator("flat", o);
  Link l;
  Variable p = l.add_param("p", Array::zeros({4}));
  p.set_grad(Variable(Array::full({4}, 60000.0)));  // a sum over ranks would exceed 65504
  comm.multi_node_mean_grad(l);
  for (float v : p.grad().array().to_vector<float>()) EXPECT_NEAR(v, 60000.0f, 32.0f);
}

TEST(MeanGrad, ZeroFillAndMissingGradients) {
  Communicator comm = create_communicator("flat", test_options());
  const int n = comm.size();
  {
    Link l;
    Variable p = l.add_param("p", Array::zeros({2}));
    if (comm.rank() != 0) p.set_grad(Variable(Array::full({2}, 4.0)));
    comm.multi_node_mean_grad(l, /*zero_fill=*/true);
    ASSERT_FALSE(p.grad().is_null());
    EXPECT_FLOAT_EQ(p.grad().array().to_vector<float>()[0], 4.0f * (n - 1) / n);
  }
  {
    Link l;
    Variable p = l.add_param("p", Array::zeros({2}));
    Variable q = l.add_param("q", Array::zeros({2}));
    p.set_grad(Variable(Array::ones({2})));
    if (comm.rank() != 0) q.set_grad(Variable(Array::ones({2})));
    expect_error<ValueError>(
        [&] { comm.multi_node_mean_grad(l); },
        {"multi_node_mean_grad", "gradients differ", "rank 0 has (nothing)", "has gradient /q (2,) float32"});
  }
}

TEST(MeanGrad, FirstStepChecksThenOff) {
  CommunicatorOptions o = test_options();
  o.check_collectives = -1;
  Communicator comm = create_communicator("flat", o);
  EXPECT_TRUE(comm.check_collectives());
  Link l;
  Variable p = l.add_param("p", Array::zeros({2}));
  p.set_grad(Variable(Array::ones({2})));
  comm.multi_node_mean_grad(l);
#ifdef NDEBUG
  EXPECT_FALSE(comm.check_collectives());
#endif
  o.check_collectives = 0;
  EXPECT_FALSE(create_communicator("flat", o).check_collectives());
}

TEST(StartMeanGrad, RequestsRunInOrderBesideBlockingCollectives) {
  const int size = world().size();
  const int ranks_per_host = size >= 4 ? 2 : 1;
  for (const CommunicatorVariant& variant : communicator_variants()) {
    if (!variant.communicates || !runs_here(variant, ranks_per_host)) continue;
    const std::string& name = variant.name;
    for (Dtype wire : {Dtype::float32, Dtype::float16}) {
      CommunicatorOptions o = test_options();
      o.allreduce_grad_dtype = wire;
      o.ranks_per_host = ranks_per_host;
      Communicator comm = create_communicator(name, o);
      const int me = comm.rank();
      std::vector<std::vector<Array>> buckets;
      std::vector<Communicator::Request> requests;
      for (int b = 0; b < 5; ++b) {
        buckets.push_back(
            {Array::full({b * 3 + 1}, (me + 1) * (b + 1.0)), Array::full({2, 2}, me * 4.0, Dtype::float64)});
        requests.push_back(comm.start_mean_grad(buckets.back()));
        // A blocking collective while requests are in flight uses its own MPI communicator.
        Array s = comm.allreduce(Array::full({3}, 1.0));
        EXPECT_EQ(s.to_vector<float>()[0], size);
      }
      // Wait out of order.
      for (int b : {3, 0, 4, 1, 2}) requests[static_cast<std::size_t>(b)].wait();
      for (int b = 0; b < 5; ++b) {
        EXPECT_TRUE(requests[static_cast<std::size_t>(b)].ready());
        const float expected = (b + 1.0f) * (size + 1) / 2.0f;
        for (float v : buckets[b][0].to_vector<float>()) EXPECT_FLOAT_EQ(v, expected) << name << " bucket " << b;
        for (double v : buckets[b][1].to_vector<double>()) EXPECT_DOUBLE_EQ(v, 4.0 * (size - 1) / 2.0);
      }
    }
  }
}

TEST(StartMeanGrad, Errors) {
  Communicator& comm = world();
  expect_error<DtypeError>([&] { comm.start_mean_grad({Array::zeros({2}, Dtype::int32)}); },
                           {"start_mean_grad", "int32"});
  expect_error<ValueError>(
      [&] {
        comm.start_mean_grad({Array::zeros({2, 3}).transpose()});
      },
      {"start_mean_grad", "contiguous host array", "(3, 2)"});
  expect_error<ValueError>([] { Communicator::Request().wait(); }, {"wait", "invalid"});
  // A mismatch on the background channel reaches wait() on every rank.
  Array g = Array::zeros({comm.rank() == 0 ? 2 : 3});
  auto r = comm.start_mean_grad({g});
  expect_error<CommunicationError>([&] { r.wait(); }, {"mean_grad #", "background", "collective mismatch"});
}

}  // namespace
}  // namespace rensa::mn
