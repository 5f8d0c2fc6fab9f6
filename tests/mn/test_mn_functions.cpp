// Differentiable communication (rensa::mn::functions) under mpirun with 2 and 4 ranks: send/recv with
// delegate variables and pseudo_connect, float64 gradient checks of the collectives against central
// differences of the loss summed over every rank, double backprop of allgather/alltoall, and bad
// input (clear errors naming the function, ranks, tags and shapes).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "rensa/mn/functions.h"
#include "rensa/rensa.h"
#include "tests/mn/mn_test_util.h"
#include "tests/unit/test_util.h"

namespace rensa::mn {
namespace {

namespace F = ::rensa::functions;
namespace MF = ::rensa::mn::functions;
using rensa::test::expect_error;
using testing::world;

// Smooth, rank- and salt-dependent values.
Array values(const Shape& shape, int rank, int salt) {
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(1.3 * static_cast<double>(i) + 0.7 * rank + 2.1 * salt);
  return Array::from_vector(v, shape);
}

double dot(const Array& a, const Array& b) {
  return F::sum(F::mul(a.astype(Dtype::float64), b.astype(Dtype::float64))).array().item<double>();
}

double sum_over_ranks(double v) {
  return world().allreduce(Array::from_vector(std::vector<double>{v})).to_vector<double>()[0];
}

void expect_near_array(const Array& a, const Array& b, double tol = 1e-12) {
  ASSERT_EQ(a.shape(), b.shape());
  const auto va = a.astype(Dtype::float64).to_vector<double>(), vb = b.astype(Dtype::float64).to_vector<double>();
  for (std::size_t i = 0; i < va.size(); ++i) EXPECT_NEAR(va[i], vb[i], tol) << "element " << i;
}

// Checks a collective's backward on every rank at once: with random output gradients gy and
// directions d, sum over ranks of <gx, d> (backward) must equal the central difference of
// sum over ranks of <gy, f(x)> along d. Outputs that are delegates (scalar zeros) get gy too.
using Fn = std::function<std::vector<Variable>(const std::vector<Variable>&)>;
void check_collective_backward(const Fn& f, const std::vector<Array>& xs) {
  const int rank = world().rank();
  std::vector<Variable> in;
  for (const Array& x : xs) in.emplace_back(x.copy(), true);
  std::vector<Variable> ys = f(in);
  std::vector<Variable> gys;
  for (std::size_t i = 0; i < ys.size(); ++i) {
    gys.emplace_back(values(ys[i].shape(), rank, 10 + static_cast<int>(i)).astype(ys[i].dtype()));
  }
  rensa::backward(ys, gys);
  double analytic = 0;
  std::vector<Array> ds;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    ds.push_back(values(xs[k].shape(), rank, 30 + static_cast<int>(k)));
    if (!in[k].grad().is_null()) analytic += dot(in[k].grad().array(), ds[k]);
  }
  const double eps = 1e-6;
  auto shifted = [&](double s) {
    std::vector<Variable> moved;
    for (std::size_t k = 0; k < xs.size(); ++k) moved.emplace_back(F::add(xs[k], F::mul(ds[k], s)).array());
    auto guard = no_backprop_mode();
    std::vector<Variable> out = f(moved);
    double total = 0;
    for (std::size_t i = 0; i < out.size(); ++i) total += dot(out[i].array(), gys[i].array());
    return total;
  };
  const double numeric = (shifted(eps) - shifted(-eps)) / (2 * eps);
  EXPECT_NEAR(sum_over_ranks(analytic), sum_over_ranks(numeric), 1e-7);
}

// ---- point to point --------------------------------------------------------------------------------

TEST(MnFunctionsSendRecv, GradientCrossesBack) {
  Communicator& comm = world();
  const int me = comm.rank(), peer = me ^ 1;
  const Array x0 = values({2, 3}, me, 1);
  if (me % 2 == 0) {
    Variable x(x0.copy(), true);
    Variable phi = MF::send(F::mul(x, 2.0), comm, peer, 5);
    EXPECT_EQ(phi.shape(), Shape{});
    phi.backward();
    // The peer's loss is sum(3 * y^2) with y = 2x: dL/dx = 24 x.
    expect_near_array(x.grad().array(), F::mul(x0, 24.0).array());
  } else {
    Variable y = MF::recv(comm, peer, {}, 5);
    expect_near_array(y.array(), F::mul(values({2, 3}, peer, 1), 2.0).array());
    F::sum(F::mul(F::square(y), 3.0)).backward();
  }
}

TEST(MnFunctionsSendRecv, RoundTripWithDelegateVariable) {
  // Even rank: h = 2x -> peer -> w = 3h -> back; loss = sum(w^2) = 36 sum(x^2).
  Communicator& comm = world();
  const int me = comm.rank(), peer = me ^ 1;
  const Array x0 = values({4}, me, 2);
  if (me % 2 == 0) {
    Variable x(x0.copy(), true);
    Variable phi = MF::send(F::mul(x, 2.0), comm, peer);
    Variable w = MF::recv(comm, peer, phi);
    F::sum(F::square(w)).backward();
    expect_near_array(x.grad().array(), F::mul(x0, 72.0).array());
  } else {
    Variable h = MF::recv(comm, peer);
    Variable phi = MF::send(F::mul(h, 3.0), comm, peer);
    phi.backward();
  }
}

TEST(MnFunctionsSendRecv, TuplesAndInputsWithoutGradient) {
  Communicator& comm = world();
  const int me = comm.rank(), peer = me ^ 1;
  if (me % 2 == 0) {
    Variable a(values({3}, me, 3), true);
    Variable b(values({2, 2}, me, 4));  // needs no gradient: its gradient still travels, and is dropped
    Variable phi = MF::send(std::vector<Variable>{a, b}, comm, peer, 1);
    phi.backward();
    expect_near_array(a.grad().array(), F::mul(a.array(), 2.0).array());
    EXPECT_TRUE(b.grad().is_null());
  } else {
    std::vector<Variable> ys = MF::recv_tuple(comm, peer, {}, 1);
    ASSERT_EQ(ys.size(), 2u);
    EXPECT_EQ(ys[1].shape(), Shape({2, 2}));
    F::add(F::sum(F::square(ys[0])), F::sum(ys[1])).backward();
  }
}

TEST(MnFunctionsSendRecv, PseudoConnectJoinsAnIntermediateOutput) {
  // Even rank: y = x^2 is the model output, and x is also sent to the peer, which returns 5 * its
  // sum of squares gradient. pseudo_connect(phi, y) makes one backward run both.
  Communicator& comm = world();
  const int me = comm.rank(), peer = me ^ 1;
  const Array x0 = values({3}, me, 5);
  if (me % 2 == 0) {
    Variable x(x0.copy(), true);
    Variable phi = MF::send(x, comm, peer);
    Variable y = MF::pseudo_connect(phi, F::sum(F::square(x)));
    y.backward();
    expect_near_array(x.grad().array(), F::mul(x0, 2.0 + 10.0).array());
  } else {
    Variable z = MF::recv(comm, peer);
    F::mul(F::sum(F::square(z)), 5.0).backward();
  }
}

TEST(MnFunctionsSendRecv, NoBackpropModeRecordsNothing) {
  Communicator& comm = world();
  const int me = comm.rank(), peer = me ^ 1;
  auto guard = no_backprop_mode();
  if (me % 2 == 0) {
    Variable phi = MF::send(Variable(values({2}, me, 6), true), comm, peer);
    EXPECT_EQ(phi.creator(), nullptr);
  } else {
    Variable y = MF::recv(comm, peer);
    EXPECT_EQ(y.creator(), nullptr);
  }
}

// ---- collectives: float64 gradient checks ---------------------------------------------------------------

TEST(MnFunctionsCollectives, BcastGradientIsGatheredAndSummed) {
  for (int root : {0, world().size() - 1}) {
    check_collective_backward(
        [&](const std::vector<Variable>& xs) { return std::vector<Variable>{MF::bcast(world(), xs[0], root)}; },
        {values({2, 3}, world().rank(), 7)});
  }
}

TEST(MnFunctionsCollectives, GatherGradientIsScattered) {
  const int r = world().rank();
  check_collective_backward([](const std::vector<Variable>& xs) { return MF::gather(world(), xs[0], 1); },
                            {values({r + 1, 2}, r, 8)});  // shapes differ by rank
}

TEST(MnFunctionsCollectives, ScatterGradientIsGathered) {
  const int n = world().size();
  std::vector<Array> xs;
  for (int i = 0; i < n; ++i) xs.push_back(values({i + 1}, world().rank(), 20 + i));
  check_collective_backward(
      [](const std::vector<Variable>& v) { return std::vector<Variable>{MF::scatter(world(), v, 0)}; }, xs);
}

TEST(MnFunctionsCollectives, AllgatherGradientIsAlltoallSummed) {
  const int r = world().rank();
  check_collective_backward([](const std::vector<Variable>& xs) { return MF::allgather(world(), xs[0]); },
                            {values({2, r + 1}, r, 9)});
}

TEST(MnFunctionsCollectives, AlltoallGradientIsAlltoall) {
  const int n = world().size(), r = world().rank();
  std::vector<Array> xs;
  for (int j = 0; j < n; ++j) xs.push_back(values({r + 1, j + 1}, r, 40 + j));
  check_collective_backward([](const std::vector<Variable>& v) { return MF::alltoall(world(), v); }, xs);
}

TEST(MnFunctionsCollectives, AllgatherDoubleBackprop) {
  // L_r = sum_j c_rj sum(y_j^2) with y = allgather(x): d(sum_r L_r)/dx_j = 2 C_j x_j with
  // C_j = sum_r c_rj, so the Hessian-vector product with v is 2 C_j v.
  Communicator& comm = world();
  const int n = comm.size(), r = comm.rank();
  const Array x0 = values({3}, r, 11), v0 = values({3}, r, 12);
  Variable x(x0.copy(), true);
  std::vector<Variable> ys = MF::allgather(comm, x);
  Variable loss;
  for (int j = 0; j < n; ++j) {
    Variable term = F::mul(F::sum(F::square(ys[static_cast<std::size_t>(j)])), static_cast<double>((r + 1) * (j + 2)));
    loss = loss.is_null() ? term : F::add(loss, term);
  }
  Variable g = rensa::grad({loss}, {x}, {}, {.enable_double_backprop = true})[0];
  const double c = static_cast<double>((r + 2) * n * (n + 1) / 2);
  expect_near_array(g.array(), F::mul(x0, 2 * c).array(), 1e-10);
  F::sum(F::mul(g, Variable(v0))).backward();
  expect_near_array(x.grad().array(), F::mul(v0, 2 * c).array(), 1e-10);
}

TEST(MnFunctionsCollectives, FirstOrderOnlyCollectivesRefuseDoubleBackprop) {
  Variable x(values({2}, world().rank(), 13), true);
  Variable y = MF::bcast(world(), x, 0);
  expect_error<NotImplementedError>([&] { F::sum(F::square(y)).backward({.enable_double_backprop = true}); },
                                    {"mn::functions::bcast", "double backprop"});
}

// ---- bad input ------------------------------------------------------------------------------------------

TEST(MnFunctionsErrors, LocalArgumentErrorsNameTheFunction) {
  Communicator& comm = world();
  const int me = comm.rank();
  Variable x(Array::zeros({2}), true);
  expect_error<ValueError>([&] { MF::send(x, comm, me); }, {"mn::functions::send", "is this rank"});
  expect_error<ValueError>([&] { MF::send(x, comm, comm.size()); },
                           {"mn::functions::send", "rank " + std::to_string(comm.size()), "size"});
  expect_error<ValueError>([&] { MF::send(x, comm, me ^ 1, -3); }, {"mn::functions::send", "tag -3"});
  expect_error<ValueError>([&] { MF::send(Variable(), comm, me ^ 1); }, {"mn::functions::send", "null"});
  expect_error<ValueError>([&] { MF::recv(comm, -1); }, {"mn::functions::recv", "rank -1"});
  expect_error<ValueError>([&] { MF::recv(Communicator(), 0); }, {"mn::functions::recv", "null communicator"});
  expect_error<ValueError>([&] { MF::bcast(comm, x, comm.size()); }, {"mn::functions::bcast", "root"});
  expect_error<ValueError>([&] { MF::pseudo_connect(Variable(), x); }, {"mn::functions::pseudo_connect"});
}

TEST(MnFunctionsErrors, CollectiveArgumentErrorsAreRaisedOnEveryRank) {
  Communicator& comm = world();
  std::vector<Variable> too_few(static_cast<std::size_t>(comm.size() - 1), Variable(Array::zeros({1})));
  expect_error<ValueError>([&] { MF::alltoall(comm, too_few); },
                           {"mn::functions::alltoall", "passed " + std::to_string(comm.size() - 1) + " arrays"});
  // Dtypes differ across ranks: every rank throws.
  Variable x(Array::zeros({2}, comm.rank() == 0 ? Dtype::float32 : Dtype::float64), true);
  expect_error<Error>([&] { MF::allgather(comm, x); }, {"mn::functions::allgather", "float32", "float64"});
  // A null x on the root of a bcast: every rank throws.
  expect_error<ValueError>([&] { MF::bcast(comm, comm.rank() == 0 ? Variable() : x, 0); }, {"mn::functions::bcast"});
}

TEST(MnFunctionsErrors, RecvOfAPlainSendNamesBothRanksAndTag) {
  Communicator& comm = world();
  const int me = comm.rank(), peer = me ^ 1;
  if (me % 2 == 0) {
    comm.send(Array::zeros({3, 4}), peer, 9);
  } else {
    expect_error<CommunicationError>([&] { MF::recv(comm, peer, {}, 9); },
                                     {"mn::functions::recv", "rank " + std::to_string(me),
                                      "from rank " + std::to_string(peer), "tag 9", "float32 (3, 4)"});
  }
  comm.barrier();
}

TEST(MnFunctionsErrors, DataWhereAGradientIsDueNamesBothRanksAndTag) {
  // The odd rank answers with a forward send where its recv's backward should return the gradient.
  Communicator& comm = world();
  const int me = comm.rank(), peer = me ^ 1;
  if (me % 2 == 0) {
    Variable phi = MF::send(Variable(Array::zeros({2}), true), comm, peer, 6);
    expect_error<CommunicationError>(
        [&] { phi.backward(); }, {"mn::functions::send (backward)", "rank " + std::to_string(me), "expected a gradient",
                                  "from rank " + std::to_string(peer), "tag 6", "out of order"});
  } else {
    Variable y = MF::recv(comm, peer, {}, 6);
    MF::send(y, comm, peer, 6);
  }
  comm.barrier();
}

TEST(MnFunctionsErrors, RecvOfATupleAsOneVariable) {
  Communicator& comm = world();
  const int me = comm.rank(), peer = me ^ 1;
  if (me % 2 == 0) {
    MF::send(std::vector<Variable>{Variable(Array::zeros({1})), Variable(Array::zeros({2}))}, comm, peer, 2);
  } else {
    expect_error<CommunicationError>(
        [&] { MF::recv(comm, peer, {}, 2); },
        {"mn::functions::recv", "received 2 variables from rank " + std::to_string(peer), "tag 2", "recv_tuple"});
  }
  comm.barrier();
}

TEST(MnFunctionsErrors, GradientOfAnotherShapeNamesBothRanksTagAndShapes) {
  // The odd rank plays a faulty receiver with plain sends: it returns a gradient of the wrong shape.
  Communicator& comm = world();
  const int me = comm.rank(), peer = me ^ 1;
  if (me % 2 == 0) {
    Variable x(Array::zeros({2, 3}, Dtype::float64), true);
    Variable phi = MF::send(x, comm, peer, 4);
    expect_error<CommunicationError>([&] { phi.backward(); },
                                     {"mn::functions::send (backward)", "rank " + std::to_string(me),
                                      "to rank " + std::to_string(peer), "tag 4", "float64 (2, 3)", "float64 (3,)"});
  } else {
    const Array manifest = comm.recv(peer, 4);
    comm.recv(peer, 4);
    Array reply = manifest.copy();
    reply.data<int64_t>()[0] += 1;  // the gradient kind
    comm.send(reply, peer, 4);
    comm.send(Array::zeros({3}, Dtype::float64), peer, 4);
  }
  comm.barrier();
}

}  // namespace
}  // namespace rensa::mn
