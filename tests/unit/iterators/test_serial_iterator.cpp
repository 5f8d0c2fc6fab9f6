// SerialIterator: Chainer's batching, epochs, shuffling, reset and serialization.

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <unistd.h>

#include "rensa/datasets/sub_dataset.h"
#include "rensa/datasets/tuple_dataset.h"
#include "rensa/iterators/multithread_iterator.h"
#include "rensa/iterators/order_sampler.h"
#include "rensa/iterators/serial_iterator.h"
#include "rensa/serializers/npz.h"
#include "tests/unit/test_util.h"

namespace rensa::iterators {
namespace {

using datasets::DatasetPtr;
using datasets::Example;
using test::expect_error;

/// n examples {i (int64, 0-d), 2i (float32, (2,))}.
DatasetPtr make_dataset(int64_t n) {
  std::vector<int64_t> idx(static_cast<std::size_t>(n));
  std::iota(idx.begin(), idx.end(), int64_t{0});
  std::vector<float> x;
  for (int64_t i = 0; i < n; ++i) x.insert(x.end(), {2.0f * static_cast<float>(i), 0.5f});
  return std::make_shared<datasets::TupleDataset>(
      std::vector<Array>{Array::from_vector(idx, Shape{n}), Array::from_vector(x, Shape{n, 2})});
}

std::vector<int64_t> indices(const Batch& b) {
  std::vector<int64_t> out;
  for (const Example& ex : b) out.push_back(ex[0].item<int64_t>());
  return out;
}

/// The index stream of `steps` batches.
std::vector<int64_t> stream(Iterator& it, int steps) {
  std::vector<int64_t> out;
  for (int s = 0; s < steps; ++s) {
    auto b = it.next();
    if (!b) break;
    const auto v = indices(*b);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

bool is_permutation_of_range(std::vector<int64_t> v, int64_t n) {
  std::sort(v.begin(), v.end());
  std::vector<int64_t> r(static_cast<std::size_t>(n));
  std::iota(r.begin(), r.end(), int64_t{0});
  return v == r;
}

TEST(SerialIterator, RepeatInOrderFollowsChainer) {
  SerialIterator it(make_dataset(10), 3, {.repeat = true, .shuffle = false});
  EXPECT_EQ(it.epoch(), 0);
  EXPECT_EQ(it.epoch_detail(), 0.0);
  EXPECT_FALSE(it.previous_epoch_detail().has_value());
  EXPECT_FALSE(it.is_new_epoch());
  const std::vector<std::vector<int64_t>> expected{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9, 0, 1}, {2, 3, 4},
                                                   {5, 6, 7}, {8, 9, 0}, {1, 2, 3}, {4, 5, 6}, {7, 8, 9}};
  const double details[] = {0.3, 0.6, 0.9, 1.2, 1.5, 1.8, 2.1, 2.4, 2.7, 3.0};
  const int64_t epochs[] = {0, 0, 0, 1, 1, 1, 2, 2, 2, 3};
  const bool new_epoch[] = {false, false, false, true, false, false, true, false, false, true};
  double previous = 0.0;
  for (std::size_t s = 0; s < expected.size(); ++s) {
    auto b = it.next();
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(indices(*b), expected[s]) << "batch " << s;
    EXPECT_NEAR(it.epoch_detail(), details[s], 1e-12) << "batch " << s;
    EXPECT_EQ(it.epoch(), epochs[s]) << "batch " << s;
    EXPECT_EQ(it.is_new_epoch(), new_epoch[s]) << "batch " << s;
    ASSERT_TRUE(it.previous_epoch_detail().has_value());
    EXPECT_NEAR(*it.previous_epoch_detail(), previous, 1e-12);
    previous = it.epoch_detail();
  }
  EXPECT_EQ(it.current_position(), 0);
  EXPECT_EQ(it.batch_size(), 3);
}

TEST(SerialIterator, RepeatShuffledCoversEveryExampleOncePerEpoch) {
  SerialIterator it(make_dataset(10), 3, {.seed = 11});
  const auto s = stream(it, 40);  // 120 indices = 12 epochs
  ASSERT_EQ(s.size(), 120u);
  std::vector<std::vector<int64_t>> epochs;
  for (std::size_t e = 0; e < 12; ++e) {
    std::vector<int64_t> chunk(s.begin() + static_cast<std::ptrdiff_t>(10 * e),
                               s.begin() + static_cast<std::ptrdiff_t>(10 * e + 10));
    EXPECT_TRUE(is_permutation_of_range(chunk, 10)) << "epoch " << e;
    epochs.push_back(chunk);
  }
  std::sort(epochs.begin(), epochs.end());
  EXPECT_GT(std::unique(epochs.begin(), epochs.end()) - epochs.begin(), 8);  // orders change between epochs
  EXPECT_EQ(it.epoch(), 12);
  EXPECT_TRUE(it.is_new_epoch());

  SerialIterator same(make_dataset(10), 3, {.seed = 11});
  SerialIterator other(make_dataset(10), 3, {.seed = 12});
  EXPECT_EQ(stream(same, 40), s);
  EXPECT_NE(stream(other, 40), s);
}

TEST(SerialIterator, OrderIsFixedForASeed) {
  // The permutation algorithm is part of the contract (same order on every machine): pin it.
  SerialIterator it(make_dataset(10), 10, {.seed = 0});
  const std::vector<int64_t> first = it.order();
  EXPECT_TRUE(is_permutation_of_range(first, 10));
  Generator g(0);
  EXPECT_EQ(first, datasets::permutation(10, g));
  EXPECT_EQ(indices(*it.next()), first);
  Generator g2(0);
  g2.set_offset(10);
  EXPECT_EQ(it.order(), datasets::permutation(10, g2));
}

TEST(SerialIterator, NonRepeatStopsAfterOneEpoch) {
  SerialIterator it(make_dataset(10), 3, {.repeat = false, .shuffle = false});
  const std::vector<std::vector<int64_t>> expected{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9}};
  const double details[] = {0.3, 0.6, 0.9, 1.0};
  for (std::size_t s = 0; s < expected.size(); ++s) {
    auto b = it.next();
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(indices(*b), expected[s]);
    EXPECT_NEAR(it.epoch_detail(), details[s], 1e-12);
    EXPECT_EQ(it.is_new_epoch(), s == 3);
  }
  EXPECT_FALSE(it.next().has_value());
  EXPECT_FALSE(it.next().has_value());
  EXPECT_EQ(it.epoch(), 1);
  it.reset();
  EXPECT_EQ(it.epoch(), 0);
  EXPECT_EQ(stream(it, 10), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));

  SerialIterator shuffled(make_dataset(10), 4, {.repeat = false, .seed = 3});
  const auto s = stream(shuffled, 10);
  EXPECT_TRUE(is_permutation_of_range(s, 10));
  EXPECT_FALSE(shuffled.next().has_value());
}

TEST(SerialIterator, BatchLargerThanDataset) {
  SerialIterator it(make_dataset(4), 10, {.seed = 1});
  auto b = it.next();
  ASSERT_EQ(b->size(), 10u);
  const auto v = indices(*b);
  EXPECT_TRUE(is_permutation_of_range({v.begin(), v.begin() + 4}, 4));
  EXPECT_TRUE(is_permutation_of_range({v.begin() + 4, v.begin() + 8}, 4));
  EXPECT_EQ(it.epoch(), 2);
  EXPECT_EQ(it.current_position(), 2);
  EXPECT_NEAR(it.epoch_detail(), 2.5, 1e-12);
  SerialIterator once(make_dataset(4), 10, {.repeat = false, .shuffle = false});
  EXPECT_EQ(indices(*once.next()), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_FALSE(once.next().has_value());
}

TEST(SerialIterator, ResetRestartsTheSameOrders) {
  SerialIterator it(make_dataset(7), 3, {.seed = 5});
  const auto first = stream(it, 9);
  it.reset();
  EXPECT_EQ(it.epoch(), 0);
  EXPECT_EQ(it.epoch_detail(), 0.0);
  EXPECT_FALSE(it.previous_epoch_detail().has_value());
  EXPECT_EQ(stream(it, 9), first);
}

TEST(SerialIterator, NextArraysStacks) {
  SerialIterator it(make_dataset(5), 2, {.shuffle = false});
  auto arrays = it.next_arrays();
  ASSERT_TRUE(arrays.has_value());
  ASSERT_EQ(arrays->size(), 2u);
  EXPECT_EQ((*arrays)[0].to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ((*arrays)[1].shape(), (Shape{2, 2}));
  EXPECT_EQ((*arrays)[1].to_vector<float>(), (std::vector<float>{0, 0.5f, 2, 0.5f}));
  SerialIterator once(make_dataset(1), 2, {.repeat = false});
  EXPECT_TRUE(once.next_arrays().has_value());
  EXPECT_FALSE(once.next_arrays().has_value());
}

void expect_same_future(SerialIterator& a, SerialIterator& b, int steps) {
  for (int s = 0; s < steps; ++s) {
    auto x = a.next();
    auto y = b.next();
    ASSERT_EQ(x.has_value(), y.has_value()) << "step " << s;
    if (!x) break;
    EXPECT_EQ(indices(*x), indices(*y)) << "step " << s;
    EXPECT_EQ(a.epoch(), b.epoch());
    EXPECT_EQ(a.epoch_detail(), b.epoch_detail());
    EXPECT_EQ(a.is_new_epoch(), b.is_new_epoch());
    EXPECT_EQ(a.previous_epoch_detail(), b.previous_epoch_detail());
  }
}

TEST(SerialIterator, SerializeResumesIdentically) {
  SerialIterator it(make_dataset(10), 3, {.seed = 21});
  stream(it, 5);  // mid-epoch, past one reshuffle
  serializers::DictionarySerializer saver;
  it.serialize(saver);
  for (const char* key : {"current_position", "epoch", "is_new_epoch", "order", "previous_epoch_detail", "seed",
                          "rng_offset"}) {
    EXPECT_EQ(saver.target().count(key), 1u) << key;
  }
  // Restored into an iterator with another seed and position, through an .npz file.
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("rensa_serial_iterator_" + std::to_string(::getpid()) + ".npz")).string();
  serializers::write_npz(path, saver.target());
  SerialIterator restored(make_dataset(10), 3, {.seed = 99});
  stream(restored, 2);
  serializers::DictionaryDeserializer loader(serializers::read_npz(path), path);
  restored.serialize(loader);
  std::filesystem::remove(path);
  EXPECT_EQ(restored.seed(), 21u);
  EXPECT_EQ(restored.current_position(), it.current_position());
  EXPECT_EQ(restored.order(), it.order());
  expect_same_future(it, restored, 30);
}

TEST(SerialIterator, SerializeAtAnEpochBoundaryAndUnshuffled) {
  SerialIterator it(make_dataset(6), 3, {.shuffle = false});
  stream(it, 2);
  EXPECT_TRUE(it.is_new_epoch());
  serializers::DictionarySerializer saver;
  it.serialize(saver);
  EXPECT_EQ(saver.target().count("order"), 0u);
  SerialIterator restored(make_dataset(6), 3, {.shuffle = false});
  serializers::DictionaryDeserializer loader(saver.target(), "memory");
  restored.serialize(loader);
  EXPECT_TRUE(restored.is_new_epoch());
  EXPECT_EQ(restored.epoch(), 1);
  expect_same_future(it, restored, 5);
}

TEST(SerialIterator, SerializeRejectsAForeignOrder) {
  SerialIterator it(make_dataset(10), 3, {.seed = 1});
  serializers::DictionarySerializer saver;
  it.serialize(saver);
  auto values = saver.target();
  SerialIterator smaller(make_dataset(8), 3, {.seed = 1});
  serializers::DictionaryDeserializer loader(values, "snapshot");
  expect_error<ValueError>([&] { smaller.serialize(loader); }, {"SerialIterator", "order", "10 entries", "8 examples"});
  values["order"] = Array::from_vector(std::vector<int64_t>{0, 0, 1, 2, 3, 4, 5, 6, 7, 8});
  serializers::DictionaryDeserializer bad(values, "snapshot");
  expect_error<ValueError>([&] { it.serialize(bad); }, {"SerialIterator", "not a permutation"});
}

TEST(SerialIterator, ErrorsAndEdgeCases) {
  expect_error<ValueError>([] { SerialIterator(make_dataset(3), 0); }, {"SerialIterator", "batch_size", "0"});
  expect_error<ValueError>([] { SerialIterator(nullptr, 1); }, {"SerialIterator", "null"});
  expect_error<ValueError>([] { SerialIterator(make_dataset(0), 2); }, {"SerialIterator", "non-empty"});
  // Not repeating over an empty dataset: one empty batch, then the end (as Chainer).
  SerialIterator empty(make_dataset(0), 2, {.repeat = false});
  auto b = empty.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_TRUE(b->empty());
  EXPECT_FALSE(empty.next().has_value());
}

class Failing final : public datasets::Dataset {
 public:
  int64_t size() const override { return 6; }
  Example get_example(int64_t i) const override {
    if (i == 4) throw IOError("Failing: cannot read example 4");
    return {Array::scalar(static_cast<double>(i), Dtype::int64)};
  }
};

TEST(SerialIterator, DatasetErrorsPropagate) {
  SerialIterator it(std::make_shared<Failing>(), 2, {.shuffle = false});
  EXPECT_EQ(indices(*it.next()), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(indices(*it.next()), (std::vector<int64_t>{2, 3}));
  expect_error<IOError>([&] { it.next(); }, {"Failing", "example 4"});
  EXPECT_EQ(it.epoch(), 1);  // the failed batch was consumed, as in Chainer
  EXPECT_EQ(indices(*it.next()), (std::vector<int64_t>{0, 1}));
}

TEST(SerialIterator, UnseededIteratorsFollowTheDefaultGenerator) {
  rensa::seed(123);
  SerialIterator a(make_dataset(50), 5);
  SerialIterator b(make_dataset(50), 5);
  EXPECT_NE(a.seed(), b.seed());
  rensa::seed(123);
  SerialIterator c(make_dataset(50), 5);
  EXPECT_EQ(a.seed(), c.seed());
  EXPECT_EQ(stream(a, 20), stream(c, 20));
  // Without shuffling no seed is needed, and the default generator is left alone.
  const uint64_t offset = default_generator().offset();
  SerialIterator in_order(make_dataset(5), 2, {.shuffle = false});
  EXPECT_EQ(default_generator().offset(), offset);
}

}  // namespace
}  // namespace rensa::iterators

namespace rensa::iterators {
namespace {

/// Reverses the previous order each epoch (index order at the start), and records its calls.
class Reversing final : public OrderSampler {
 public:
  mutable std::vector<int64_t> epochs;
  std::vector<int64_t> operator()(const std::vector<int64_t>& current, int64_t, int64_t epoch,
                                  int64_t size) const override {
    epochs.push_back(epoch);
    std::vector<int64_t> order(current.rbegin(), current.rend());
    if (order.empty()) {
      for (int64_t i = 0; i < size; ++i) order.push_back(i);
    }
    return order;
  }
};

class Broken final : public OrderSampler {
 public:
  std::vector<int64_t> operator()(const std::vector<int64_t>&, int64_t, int64_t, int64_t size) const override {
    return std::vector<int64_t>(static_cast<std::size_t>(size), 0);
  }
};

std::vector<int64_t> firsts(Iterator& it, int n) {
  std::vector<int64_t> out;
  for (int k = 0; k < n; ++k) out.push_back(it.next_arrays()->at(0).to_vector<int64_t>()[0]);
  return out;
}

TEST(OrderSampler, DecidesEachEpochsOrder) {
  auto ds = std::make_shared<datasets::TupleDataset>(std::vector<Array>{Array::arange(4)});
  auto sampler = std::make_shared<Reversing>();
  SerialIterator it(ds, 2, {.order_sampler = sampler});
  EXPECT_EQ(firsts(it, 6), (std::vector<int64_t>{0, 2, 3, 1, 0, 2}));
  EXPECT_EQ(sampler->epochs, (std::vector<int64_t>{0, 1, 2, 3}));
  // The same orders on worker threads; a resume continues them.
  MultithreadIterator mt(ds, 2, {.order_sampler = std::make_shared<Reversing>(), .n_threads = 2});
  EXPECT_EQ(firsts(mt, 3), (std::vector<int64_t>{0, 2, 3}));
  serializers::DictionarySerializer saver;
  mt.serialize(saver);
  SerialIterator resumed(ds, 2, {.order_sampler = std::make_shared<Reversing>()});
  serializers::DictionaryDeserializer loader(saver.target(), "test");
  resumed.serialize(loader);
  EXPECT_EQ(firsts(resumed, 3), (std::vector<int64_t>{1, 0, 2}));
  test::expect_error<ValueError>([&] { SerialIterator bad(ds, 2, {.order_sampler = std::make_shared<Broken>()}); },
                                 {"SerialIterator", "order sampler", "not a permutation"});
}

TEST(OrderSampler, ShuffleOrderSamplerDependsOnSeedAndEpochOnly) {
  const ShuffleOrderSampler a(3), b(3), c(4);
  EXPECT_EQ(a({}, 0, 5, 50), b({1, 2}, 7, 5, 50));
  EXPECT_NE(a({}, 0, 5, 50), a({}, 0, 6, 50));
  EXPECT_NE(a({}, 0, 5, 50), c({}, 0, 5, 50));
  std::vector<int64_t> sorted = a({}, 0, 1, 50);
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 50; ++i) EXPECT_EQ(sorted[static_cast<std::size_t>(i)], i);
}

}  // namespace
}  // namespace rensa::iterators
