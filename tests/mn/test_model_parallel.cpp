// Model parallelism under mpirun with 2 and 4 ranks: a MultiNodeChainList trained with SGD ends with
// the parameters of the same model trained in one process on the same data, for a chain of sends and
// receives around every rank, a branch (one rank feeding all the others and itself), and the
// dual-parallel combination (model-parallel pairs x data-parallel replicas, 4 ranks). Also
// create_multi_node_n_step_rnn, the iterators and create_empty_dataset.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rensa/core/random.h"
#include "rensa/mn.h"
#include "rensa/rensa.h"
#include "tests/mn/mn_test_util.h"
#include "tests/unit/test_util.h"

namespace rensa::mn {
namespace {

namespace F = ::rensa::functions;
namespace L = ::rensa::links;
using rensa::test::expect_error;
using testing::world;

Array values(const Shape& shape, int salt, double scale = 1.0) {
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(scale * std::sin(1.3 * i + 2.1 * salt));
  return Array::from_vector(v, shape);
}

// y = relu?(sum(xs) W^T + b), initialized from `salt` alike on every rank.
class Dense : public Link {
 public:
  Dense(int64_t in, int64_t out, int salt, bool relu) : relu_(relu) {
    W_ = add_param("W", values({out, in}, salt, 0.5));
    b_ = add_param("b", values({out}, salt + 100, 0.1));
  }
  Variable forward(const Variable& x) override {
    Variable y = F::linear(x, W_, b_);
    return relu_ ? F::relu(y) : y;
  }
  Variable forward(const std::vector<Variable>& xs) override {
    Variable s = xs.at(0);
    for (std::size_t i = 1; i < xs.size(); ++i) s = F::add(s, xs[i]);
    return forward(s);
  }

 private:
  bool relu_;
  Variable W_, b_;
};

constexpr double kLr = 0.1;
constexpr int kSteps = 3;

// One SGD step on `model` with gradients from `loss_fn` (cleared first); `after_backward` may
// average gradients across replicas.
void sgd_step(Link& model, optimizers::SGD& opt, const std::function<Variable()>& loss_fn,
              const std::function<void()>& after_backward = {}) {
  model.cleargrads();
  loss_fn().backward();
  if (after_backward) after_backward();
  opt.update();
}

void expect_same_params(const Link& got, const Link& want, const std::string& what) {
  const auto g = got.namedparams(), w = want.namedparams();
  ASSERT_EQ(g.size(), w.size()) << what;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const auto a = g[i].second.array().to_vector<float>(), b = w[i].second.array().to_vector<float>();
    ASSERT_EQ(a.size(), b.size()) << what << g[i].first;
    for (std::size_t k = 0; k < a.size(); ++k) {
      EXPECT_NEAR(a[k], b[k], 1e-5) << what << g[i].first << " element " << k << " on rank " << world().rank();
    }
  }
}

// The parameters must have moved, or the comparison would prove nothing.
void expect_trained(const Link& link, int salt) {
  const auto W = link.namedparams()[0].second.array();
  EXPECT_FALSE(array_equal(W, values(W.shape(), salt, 0.5)));
}

Array batch_x(int salt) {
  return values({5, 4}, 200 + salt);
}
Array batch_t(int salt) {
  return values({5, 2}, 300 + salt);
}

// ---- a chain around every rank: 0 -> 1 -> ... -> n-1 -> 0 ------------------------------------------------

TEST(ModelParallel, ChainOfSendsAndReceivesTrainsAsOneProcess) {
  Communicator& comm = world();
  const int n = comm.size(), me = comm.rank();
  MultiNodeChainList model(comm);
  std::shared_ptr<Dense> first, last, mine;
  if (me == 0) {
    first = std::make_shared<Dense>(4, 6, 1, true);
    last = std::make_shared<Dense>(6, 2, 99, false);
    model.add_link(first, std::nullopt, 1 % n);
    model.add_link(last, n - 1, std::nullopt);
  } else {
    mine = std::make_shared<Dense>(6, 6, 10 + me, true);
    model.add_link(mine, me - 1, (me + 1) % n);
  }
  optimizers::SGD opt(kLr);
  opt.setup(model);
  for (int step = 0; step < kSteps; ++step) {
    sgd_step(model, opt, [&] {
      if (me != 0) return model.forward(std::vector<Variable>{});  // the delegate variable
      return F::mean_squared_error(model(Variable(batch_x(step))), Variable(batch_t(step)));
    });
  }

  // The same model in this process alone.
  Sequential ref;
  auto r_first = std::make_shared<Dense>(4, 6, 1, true);
  auto r_last = std::make_shared<Dense>(6, 2, 99, false);
  std::vector<std::shared_ptr<Dense>> r_mid;
  ref.add(r_first);
  for (int k = 1; k < n; ++k) ref.add(r_mid.emplace_back(std::make_shared<Dense>(6, 6, 10 + k, true)));
  ref.add(r_last);
  optimizers::SGD ref_opt(kLr);
  ref_opt.setup(ref);
  for (int step = 0; step < kSteps; ++step) {
    sgd_step(ref, ref_opt,
             [&] { return F::mean_squared_error(ref(Variable(batch_x(step))), Variable(batch_t(step))); });
  }
  if (me == 0) {
    expect_same_params(*first, *r_first, "first");
    expect_same_params(*last, *r_last, "last");
    expect_trained(*first, 1);
  } else {
    expect_same_params(*mine, *r_mid[static_cast<std::size_t>(me - 1)], "middle");
    expect_trained(*mine, 10 + me);
  }
}

// ---- a branch: rank 0 feeds every other rank and itself, and joins their outputs --------------------------

TEST(ModelParallel, BranchTrainsAsOneProcess) {
  Communicator& comm = world();
  const int n = comm.size(), me = comm.rank();
  std::vector<int> others;
  for (int k = 1; k < n; ++k) others.push_back(k);
  std::vector<int> fan_out = others, fan_in = others;
  fan_out.push_back(0);  // to itself, through MultiNodeChainList's queue
  fan_in.push_back(0);
  MultiNodeChainList model(comm);
  std::shared_ptr<Dense> head, join, branch;
  if (me == 0) {
    head = std::make_shared<Dense>(4, 6, 1, true);
    join = std::make_shared<Dense>(6, 2, 99, false);
    model.add_link(head, std::nullopt, fan_out);
    model.add_link(join, fan_in, std::nullopt);
  } else {
    branch = std::make_shared<Dense>(6, 6, 10 + me, true);
    model.add_link(branch, 0, 0);
  }
  optimizers::SGD opt(kLr);
  opt.setup(model);
  for (int step = 0; step < kSteps; ++step) {
    sgd_step(model, opt, [&] {
      if (me != 0) return model.forward(std::vector<Variable>{});
      return F::mean_squared_error(model(Variable(batch_x(step))), Variable(batch_t(step)));
    });
  }

  Dense r_head(4, 6, 1, true), r_join(6, 2, 99, false);
  std::vector<std::shared_ptr<Dense>> r_branch;
  ChainList ref;
  ref.append(r_head);
  ref.append(r_join);
  for (int k = 1; k < n; ++k) ref.append(r_branch.emplace_back(std::make_shared<Dense>(6, 6, 10 + k, true)));
  optimizers::SGD ref_opt(kLr);
  ref_opt.setup(ref);
  for (int step = 0; step < kSteps; ++step) {
    sgd_step(ref, ref_opt, [&] {
      Variable h = r_head(Variable(batch_x(step)));
      std::vector<Variable> parts;
      for (auto& b : r_branch) parts.push_back((*b)(h));
      parts.push_back(h);
      return F::mean_squared_error(r_join(parts), Variable(batch_t(step)));
    });
  }
  if (me == 0) {
    expect_same_params(*head, r_head, "head");
    expect_same_params(*join, r_join, "join");
    expect_trained(*head, 1);
  } else {
    expect_same_params(*branch, *r_branch[static_cast<std::size_t>(me - 1)], "branch");
    expect_trained(*branch, 10 + me);
  }
}

// ---- dual parallel: pairs {0,1}, {2,3} split the model; {0,2} and {1,3} are data-parallel replicas ----

struct SplitComms {
  Communicator model, data;
};

SplitComms split_pairs() {
  const int me = world().rank();
  return SplitComms{world().split(me / 2, me), world().split(me % 2, me)};
}

TEST(ModelParallel, DualParallelTrainsAsOneProcess) {
  if (world().size() != 4) GTEST_SKIP() << "needs 4 ranks";
  const int me = world().rank(), group = me / 2;
  SplitComms comms = split_pairs();
  MultiNodeChainList model(comms.model);
  std::shared_ptr<Dense> first, last, middle;
  if (comms.model.rank() == 0) {
    first = std::make_shared<Dense>(4, 6, 1, true);
    last = std::make_shared<Dense>(6, 2, 99, false);
    model.add_link(first, std::nullopt, 1);
    model.add_link(last, 1, std::nullopt);
  } else {
    middle = std::make_shared<Dense>(6, 6, 11, true);
    model.add_link(middle, 0, 0);
  }
  optimizers::SGD opt(kLr);
  opt.setup(model);
  for (int step = 0; step < kSteps; ++step) {
    // Each replica trains on its own batch; gradients are averaged over the replicas.
    sgd_step(
        model, opt,
        [&] {
          if (comms.model.rank() != 0) return model.forward(std::vector<Variable>{});
          return F::mean_squared_error(model(Variable(batch_x(10 * step + group))),
                                       Variable(batch_t(10 * step + group)));
        },
        [&] { comms.data.multi_node_mean_grad(model); });
  }

  Dense r_first(4, 6, 1, true), r_middle(6, 6, 11, true), r_last(6, 2, 99, false);
  Sequential ref;
  ref.add(r_first).add(r_middle).add(r_last);
  optimizers::SGD ref_opt(kLr);
  ref_opt.setup(ref);
  for (int step = 0; step < kSteps; ++step) {
    sgd_step(ref, ref_opt, [&] {
      Variable l0 = F::mean_squared_error(ref(Variable(batch_x(10 * step))), Variable(batch_t(10 * step)));
      Variable l1 = F::mean_squared_error(ref(Variable(batch_x(10 * step + 1))), Variable(batch_t(10 * step + 1)));
      return F::mul(F::add(l0, l1), 0.5);
    });
  }
  if (comms.model.rank() == 0) {
    expect_same_params(*first, r_first, "first");
    expect_same_params(*last, r_last, "last");
  } else {
    expect_same_params(*middle, r_middle, "middle");
    expect_trained(*middle, 11);
  }
}

// ---- an output in the middle: rank 0's first component gives the model's output, its second sends on ----

TEST(ModelParallel, IntermediateOutputIsJoinedToTheLaterSend) {
  // Even rank: y = A(x) is its output, and B(x) goes to the odd rank, whose C gives that rank's
  // output. The even rank's forward returns pseudo_connect(send's delegate, y), so one backward from
  // its loss also runs the send's backward. One process: L = L0(A(x)) + L1(C(B(x))).
  Communicator& comm = world();
  const int me = comm.rank(), peer = me ^ 1;
  MultiNodeChainList model(comm);
  auto a = std::make_shared<Dense>(4, 2, 1, false), b = std::make_shared<Dense>(4, 6, 2, true);
  auto c = std::make_shared<Dense>(6, 2, 3, false);
  if (me % 2 == 0) {
    model.add_link(a, std::nullopt, std::nullopt);
    model.add_link(b, std::nullopt, peer);
  } else {
    model.add_link(c, peer, std::nullopt);
  }
  optimizers::SGD opt(kLr);
  opt.setup(model);
  for (int step = 0; step < kSteps; ++step) {
    sgd_step(model, opt, [&] {
      if (me % 2 == 0) return F::mean_squared_error(model(Variable(batch_x(step))), Variable(batch_t(step)));
      return F::mean_squared_error(model.forward(std::vector<Variable>{}), Variable(batch_t(step + 50)));
    });
  }
  Dense ra(4, 2, 1, false), rb(4, 6, 2, true), rc(6, 2, 3, false);
  ChainList ref;
  ref.append(ra);
  ref.append(rb);
  ref.append(rc);
  optimizers::SGD ref_opt(kLr);
  ref_opt.setup(ref);
  for (int step = 0; step < kSteps; ++step) {
    sgd_step(ref, ref_opt, [&] {
      const Variable x(batch_x(step));
      return F::add(F::mean_squared_error(ra(x), Variable(batch_t(step))),
                    F::mean_squared_error(rc(rb(x)), Variable(batch_t(step + 50))));
    });
  }
  if (me % 2 == 0) {
    expect_same_params(*a, ra, "a");
    expect_same_params(*b, rb, "b");
    expect_trained(*b, 2);
  } else {
    expect_same_params(*c, rc, "c");
  }
}

// ---- MultiNodeChainList errors ---------------------------------------------------------------------------

TEST(ModelParallel, ChainListErrors) {
  Communicator& comm = world();
  MultiNodeChainList model(comm);
  expect_error<ValueError>([&] { model.add_link(std::make_shared<Dense>(2, 2, 0, false), comm.size(), 0); },
                           {"MultiNodeChainList::add_link", "rank_in " + std::to_string(comm.size()), "size"});
  model.add_link(std::make_shared<Dense>(2, 2, 0, false), std::nullopt, std::nullopt);
  expect_error<ValueError>([&] { model.add_link(std::make_shared<Dense>(2, 2, 0, false)); },
                           {"MultiNodeChainList::add_link", "rank_out none"});
  expect_error<ValueError>([] { MultiNodeChainList bad{Communicator()}; }, {"MultiNodeChainList", "null"});
  // Sending itself an output that no later component takes.
  MultiNodeChainList loop(comm);
  loop.add_link(std::make_shared<Dense>(2, 2, 0, false), std::nullopt, comm.rank());
  expect_error<ValueError>([&] { loop(Variable(Array::zeros({1, 2}))); }, {"MultiNodeChainList", "sent itself"});
}

// ---- create_multi_node_n_step_rnn: an encoder on even ranks, its decoder on the next odd rank -----------

TEST(ModelParallel, NStepLSTMEncoderDecoderMatchesOneProcess) {
  Communicator& comm = world();
  const int me = comm.rank(), peer = me ^ 1;
  rensa::seed(5);
  auto enc = std::make_shared<L::NStepLSTM>(1, 3, 4, 0.0);
  auto dec = std::make_shared<L::NStepLSTM>(1, 3, 4, 0.0);
  L::NStepLSTM r_enc(1, 3, 4, 0.0), r_dec(1, 3, 4, 0.0);
  r_enc.copyparams(*enc);
  r_dec.copyparams(*dec);
  const std::vector<Variable> xs_enc{Variable(values({3, 3}, 1)), Variable(values({2, 3}, 2))};
  const std::vector<Variable> xs_dec{Variable(values({2, 3}, 3)), Variable(values({1, 3}, 4))};
  if (me % 2 == 0) {
    auto link = create_multi_node_n_step_rnn(enc, comm, std::nullopt, peer);
    EXPECT_EQ(link->n_cells(), 2);
    link->cleargrads();
    link->forward(xs_enc).delegate_variable.backward();
  } else {
    auto link = create_multi_node_n_step_rnn(dec, comm, peer, std::nullopt);
    link->cleargrads();
    auto out = link->forward(xs_dec);
    EXPECT_TRUE(out.delegate_variable.is_null());
    F::add(F::sum(F::square(out.ys[0])), F::sum(out.ys[1])).backward();
  }
  // In one process.
  r_enc.cleargrads();
  r_dec.cleargrads();
  auto e = r_enc(Variable(), Variable(), xs_enc);
  auto d = r_dec(e.hy, e.cy, xs_dec);
  F::add(F::sum(F::square(d.ys[0])), F::sum(d.ys[1])).backward();
  const Link& got = me % 2 == 0 ? static_cast<const Link&>(*enc) : *dec;
  const Link& want = me % 2 == 0 ? static_cast<const Link&>(r_enc) : r_dec;
  const auto g = got.namedparams(), w = want.namedparams();
  for (std::size_t i = 0; i < g.size(); ++i) {
    ASSERT_FALSE(g[i].second.grad().is_null()) << g[i].first;
    const auto a = g[i].second.grad().array().to_vector<float>(), b = w[i].second.grad().array().to_vector<float>();
    for (std::size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k], b[k], 1e-5) << g[i].first << " " << k;
  }
  expect_error<ValueError>([&] { create_multi_node_n_step_rnn(enc, comm, me, std::nullopt); },
                           {"create_multi_node_n_step_rnn", "rank_in " + std::to_string(me)});
}

// ---- iterators and the empty dataset ---------------------------------------------------------------------

datasets::DatasetPtr numbers(int64_t n, double offset) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i + offset);
  return std::make_shared<datasets::TupleDataset>(std::vector<Array>{Array::from_vector(v)});
}

TEST(ModelParallelData, EmptyDatasetHasTheSizeAndNoColumns) {
  auto empty = create_empty_dataset(numbers(7, 0));
  EXPECT_EQ(empty->size(), 7);
  EXPECT_TRUE(empty->get_example(3).empty());
  expect_error<IndexError>([&] { empty->get_example(7); }, {"create_empty_dataset", "7"});
  expect_error<ValueError>([] { create_empty_dataset(nullptr); }, {"create_empty_dataset", "null"});
}

TEST(ModelParallelData, MultiNodeIteratorGivesEveryRankTheMastersBatches) {
  Communicator& comm = world();
  const int master = comm.size() - 1;
  const iterators::SerialIteratorOptions o{.repeat = false, .shuffle = true, .seed = 11};
  std::unique_ptr<iterators::Iterator> actual;
  if (comm.rank() == master) actual = std::make_unique<iterators::SerialIterator>(numbers(10, 0.5), 4, o);
  auto it = create_multi_node_iterator(std::move(actual), comm, master);
  iterators::SerialIterator expected(numbers(10, 0.5), 4, o);
  EXPECT_EQ(it->batch_size(), 4);
  for (;;) {
    auto got = it->next();
    auto want = expected.next();
    ASSERT_EQ(got.has_value(), want.has_value());
    if (!got) break;
    ASSERT_EQ(got->size(), want->size());
    for (std::size_t b = 0; b < got->size(); ++b) EXPECT_TRUE(array_equal((*got)[b][0], (*want)[b][0]));
    EXPECT_DOUBLE_EQ(it->epoch_detail(), expected.epoch_detail());
    EXPECT_EQ(it->is_new_epoch(), expected.is_new_epoch());
  }
  EXPECT_EQ(it->epoch(), 1);
}

TEST(ModelParallelData, MultiNodeIteratorErrorsAreRaisedOnEveryRank) {
  Communicator& comm = world();
  expect_error<ValueError>([&] { create_multi_node_iterator(nullptr, comm, 0); },
                           {"create_multi_node_iterator", "rank 0", "null actual_iterator"});
  expect_error<ValueError>([&] { create_multi_node_iterator(nullptr, comm, comm.size()); },
                           {"create_multi_node_iterator", "rank_master " + std::to_string(comm.size())});
}

TEST(ModelParallelData, SynchronizedIteratorsShuffleAlike) {
  Communicator& comm = world();
  auto it = create_synchronized_iterator(numbers(12, 100.0 * comm.rank()), 5, comm);
  for (int i = 0; i < 4; ++i) {
    const auto batch = it->next();
    ASSERT_TRUE(batch.has_value());
    std::vector<double> mine;
    for (const auto& ex : *batch) mine.push_back(ex[0].astype(Dtype::float64).item<double>() - 100.0 * comm.rank());
    const auto all = allgather_obj(comm, mine);
    for (const auto& other : all) EXPECT_EQ(other, all[0]);
  }
  expect_error<ValueError>([&] { create_synchronized_iterator(numbers(10 + comm.rank(), 0), 5, comm); },
                           {"create_synchronized_iterator", "rank 1 has 11 examples"});
}

}  // namespace
}  // namespace rensa::mn
