// MultithreadIterator: the same batches as SerialIterator, prefetching, errors and shutdown.

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>

#include "rensa/datasets/concat_examples.h"
#include "rensa/datasets/image_transforms.h"
#include "rensa/datasets/transform_dataset.h"
#include "rensa/datasets/tuple_dataset.h"
#include "rensa/iterators/multithread_iterator.h"
#include "rensa/iterators/serial_iterator.h"
#include "rensa/serializers/npz.h"
#include "tests/unit/test_util.h"

namespace rensa::iterators {
namespace {

using datasets::DatasetPtr;
using datasets::Example;
using test::expect_error;

/// n examples {i (int64, 0-d), [i, -i, 0.25] (float32, (3,))}.
DatasetPtr make_dataset(int64_t n) {
  std::vector<int64_t> idx(static_cast<std::size_t>(n));
  std::iota(idx.begin(), idx.end(), int64_t{0});
  std::vector<float> x;
  for (int64_t i = 0; i < n; ++i) x.insert(x.end(), {static_cast<float>(i), -static_cast<float>(i), 0.25f});
  return std::make_shared<datasets::TupleDataset>(
      std::vector<Array>{Array::from_vector(idx, Shape{n}), Array::from_vector(x, Shape{n, 3})});
}

std::vector<int64_t> indices(const Batch& b) {
  std::vector<int64_t> out;
  for (const Example& ex : b) out.push_back(ex[0].item<int64_t>());
  return out;
}

/// Steps both iterators and expects the same batches and the same epoch bookkeeping.
void expect_same(Iterator& serial, Iterator& multi, int steps, bool arrays = false) {
  for (int s = 0; s < steps; ++s) {
    if (arrays) {
      auto x = serial.next_arrays();
      auto y = multi.next_arrays();
      ASSERT_EQ(x.has_value(), y.has_value()) << "step " << s;
      if (!x) return;
      ASSERT_EQ(x->size(), y->size());
      for (std::size_t c = 0; c < x->size(); ++c) EXPECT_TRUE(array_equal((*x)[c], (*y)[c])) << "step " << s;
    } else {
      auto x = serial.next();
      auto y = multi.next();
      ASSERT_EQ(x.has_value(), y.has_value()) << "step " << s;
      if (!x) return;
      EXPECT_EQ(indices(*x), indices(*y)) << "step " << s;
      for (std::size_t k = 0; k < x->size(); ++k) EXPECT_TRUE(array_equal((*x)[k][1], (*y)[k][1]));
    }
    EXPECT_EQ(serial.epoch(), multi.epoch()) << "step " << s;
    EXPECT_EQ(serial.epoch_detail(), multi.epoch_detail()) << "step " << s;
    EXPECT_EQ(serial.is_new_epoch(), multi.is_new_epoch()) << "step " << s;
    EXPECT_EQ(serial.previous_epoch_detail(), multi.previous_epoch_detail()) << "step " << s;
  }
}

TEST(MultithreadIterator, SameBatchesAsSerial) {
  for (const bool repeat : {true, false}) {
    for (const bool shuffle : {true, false}) {
      for (const int64_t batch : {1, 3, 7, 10, 25}) {
        for (const int threads : {1, 2, 4}) {
          for (const int prefetch : {1, 3}) {
            SCOPED_TRACE(::testing::Message() << "repeat " << repeat << " shuffle " << shuffle << " batch " << batch
                                            << " threads " << threads << " prefetch " << prefetch);
            auto ds = make_dataset(10);
            SerialIterator serial(ds, batch, {.repeat = repeat, .shuffle = shuffle, .seed = 17});
            MultithreadIterator multi(ds, batch, {.repeat = repeat, .shuffle = shuffle, .seed = 17,
                                                  .n_threads = threads, .n_prefetch = prefetch});
            EXPECT_EQ(multi.batch_size(), batch);
            expect_same(serial, multi, 25);
          }
        }
      }
    }
  }
}

TEST(MultithreadIterator, StackedBatchesMatchConcatExamples) {
  for (const bool stack : {true, false}) {
    auto ds = make_dataset(23);
    SerialIterator serial(ds, 5, {.repeat = false, .seed = 2});
    MultithreadIterator multi(ds, 5, {.repeat = false, .seed = 2, .n_threads = 3, .n_prefetch = 2, .stack = stack});
    expect_same(serial, multi, 10, true);
    EXPECT_FALSE(multi.next_arrays().has_value());
  }
}

TEST(MultithreadIterator, StackedBatchesReuseTheirBuffers) {
  // After the first batches (stacked by concat_examples while the layout is learned), the workers
  // stack into a few buffers, reused once a batch is let go: the same bytes as SerialIterator's.
  auto ds = make_dataset(37);
  SerialIterator serial(ds, 4, {.seed = 5});
  MultithreadIterator multi(ds, 4, {.seed = 5, .n_threads = 2, .n_prefetch = 1, .stack = true});
  std::set<const void*> seen;
  for (int s = 0; s < 40; ++s) {
    auto x = serial.next_arrays();
    auto y = multi.next_arrays();
    ASSERT_TRUE(x && y);
    for (std::size_t c = 0; c < 2; ++c) EXPECT_TRUE(array_equal((*x)[c], (*y)[c])) << "step " << s;
    seen.insert((*y)[1].raw_data());
  }
  // At most n_prefetch + 3 sets are kept; a few more were made before the layout was known.
  EXPECT_LE(seen.size(), 6u);
}

TEST(MultithreadIterator, AHeldBatchIsNeverOverwritten) {
  auto ds = make_dataset(50);
  SerialIterator serial(ds, 5, {.seed = 9});
  MultithreadIterator multi(ds, 5, {.seed = 9, .n_threads = 3, .n_prefetch = 2, .stack = true});
  std::vector<std::vector<Array>> held, want;
  for (int s = 0; s < 30; ++s) {
    auto y = multi.next_arrays();
    auto x = serial.next_arrays();
    if (s % 3 == 0) {  // keep every third batch (its view of column 1 too) while iterating on
      held.push_back({(*y)[0], (*y)[1].index({Slice{1, std::nullopt, 1}})});
      want.push_back({(*x)[0], (*x)[1].index({Slice{1, std::nullopt, 1}})});
    }
  }
  for (std::size_t k = 0; k < held.size(); ++k) {
    EXPECT_TRUE(array_equal(held[k][0], want[k][0])) << "held batch " << k;
    EXPECT_TRUE(array_equal(held[k][1], want[k][1])) << "held batch " << k;
  }
}

TEST(MultithreadIterator, ImageTransformsWriteIntoTheBatch) {
  // Normalize makes each image in its row of the batch (no second copy), and what a later transform
  // returns instead (a flipped view of that row) is still stacked right.
  auto images = [](int64_t n) {
    std::vector<uint8_t> px;
    for (int64_t i = 0; i < n * 3 * 4 * 5; ++i) px.push_back(static_cast<uint8_t>((i * 37) % 251));
    return std::make_shared<datasets::TupleDataset>(std::vector<Array>{
        Array::from_vector(px, Shape{n, 3, 4, 5}), Array::from_vector(std::vector<int32_t>(n, 7), Shape{n})});
  };
  const datasets::transforms::Normalize normalize({10, 20, 30}, {2, 4, 8});
  for (const bool flip_after : {false, true}) {
    std::mutex mutex;
    std::map<int64_t, const void*> made_at;  // example (by its first pixel) -> where Normalize wrote it
    auto transform = [&](bool record) {
      return [&, record](Example ex) {
        ex = normalize(std::move(ex));
        if (record) {
          std::lock_guard lock(mutex);
          made_at[static_cast<int64_t>(ex[0].at<float>({0, 0, 0}) * 2 + 10)] = ex[0].raw_data();
        }
        if (flip_after) ex[0] = ex[0].index({Slice{}, Slice{}, Slice{std::nullopt, std::nullopt, -1}});
        return ex;
      };
    };
    // In order, so that a batch shares no example with the one read meanwhile (30 = 5 batches).
    SerialIterator serial(std::make_shared<datasets::TransformDataset>(images(30), transform(false)), 6,
                          {.shuffle = false});
    MultithreadIterator multi(std::make_shared<datasets::TransformDataset>(images(30), transform(true)), 6,
                              {.shuffle = false, .n_threads = 2, .n_prefetch = 1, .stack = true});
    int in_place = 0;
    for (int s = 0; s < 12; ++s) {
      auto y = multi.next_arrays();
      auto x = serial.next_arrays();
      ASSERT_EQ((*y)[0].dtype(), Dtype::float32);
      EXPECT_TRUE(array_equal((*x)[0], (*y)[0])) << "step " << s << (flip_after ? ", flipped" : "");
      EXPECT_TRUE(array_equal((*x)[1], (*y)[1]));
      bool all_rows = true;
      for (int64_t b = 0; b < 6; ++b) {
        // The row's first pixel (last one when flipped) names the example.
        const Array row = (*y)[0].index({b});
        const double first = flip_after ? row.at<float>({0, 0, 4}) : row.at<float>({0, 0, 0});
        std::lock_guard lock(mutex);
        all_rows = all_rows && made_at[static_cast<int64_t>(first * 2 + 10)] == row.raw_data();
      }
      in_place += all_rows ? 1 : 0;
    }
    // Every batch after the first two (stacked while the layout was learned) was made in place.
    EXPECT_EQ(in_place, 10) << (flip_after ? "flipped" : "");
  }
}

TEST(MultithreadIterator, AnotherColumnMadeInTheOfferedRowIsStackedRight) {
  // Regression: a transform normalizing column 1 (of column 0's shape) before column 0 takes the row
  // offered for column 0; column 1 must still get its own values, not column 0's.
  auto pairs = [](int64_t n) {
    std::vector<uint8_t> a, b;
    for (int64_t i = 0; i < n * 2 * 3 * 3; ++i) {
      a.push_back(static_cast<uint8_t>((i * 37) % 251));
      b.push_back(static_cast<uint8_t>((i * 11 + 5) % 241));
    }
    return std::make_shared<datasets::TupleDataset>(
        std::vector<Array>{Array::from_vector(a, Shape{n, 2, 3, 3}), Array::from_vector(b, Shape{n, 2, 3, 3})});
  };
  const datasets::transforms::Normalize normalize({1, 2}, {3, 4});
  auto transform = [&](Example ex) {
    ex[1] = normalize.apply(ex[1]);
    ex[0] = normalize.apply(ex[0]);
    return ex;
  };
  SerialIterator serial(std::make_shared<datasets::TransformDataset>(pairs(20), transform), 4, {.seed = 1});
  MultithreadIterator multi(std::make_shared<datasets::TransformDataset>(pairs(20), transform), 4,
                            {.seed = 1, .n_threads = 2, .n_prefetch = 1, .stack = true});
  expect_same(serial, multi, 12, true);
}

TEST(MultithreadIterator, ALayoutChangeIsStackedAndLearned) {
  // Examples 0-9 are (3,), the rest (4,): whole batches of either kind stack as SerialIterator's do.
  auto ds = std::make_shared<datasets::TransformDataset>(make_dataset(30), [](Example ex) {
    if (ex[0].item<int64_t>() >= 10) ex[1] = Array::full(Shape{4}, static_cast<double>(ex[0].item<int64_t>()));
    return ex;
  });
  SerialIterator serial(ds, 5, {.repeat = false, .shuffle = false});
  MultithreadIterator multi(ds, 5, {.repeat = false, .shuffle = false, .n_threads = 2, .n_prefetch = 1, .stack = true});
  expect_same(serial, multi, 7, true);
}

TEST(MultithreadIterator, NonRepeatEndsAndResets) {
  MultithreadIterator it(make_dataset(10), 4, {.repeat = false, .shuffle = false, .n_threads = 2, .n_prefetch = 4});
  EXPECT_EQ(indices(*it.next()), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(indices(*it.next()), (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(indices(*it.next()), (std::vector<int64_t>{8, 9}));
  EXPECT_TRUE(it.is_new_epoch());
  EXPECT_FALSE(it.next().has_value());
  EXPECT_FALSE(it.next().has_value());
  EXPECT_EQ(it.epoch_detail(), 1.0);
  it.reset();
  EXPECT_EQ(it.epoch(), 0);
  EXPECT_EQ(indices(*it.next()), (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(MultithreadIterator, ResetDropsThePrefetchedBatches) {
  auto ds = make_dataset(11);
  MultithreadIterator it(ds, 3, {.seed = 8, .n_threads = 2, .n_prefetch = 3});
  for (int s = 0; s < 7; ++s) it.next();
  it.reset();
  EXPECT_FALSE(it.previous_epoch_detail().has_value());
  SerialIterator fresh(ds, 3, {.seed = 8});
  expect_same(fresh, it, 20);
}

TEST(MultithreadIterator, SerializationIsInterchangeableWithSerial) {
  auto ds = make_dataset(13);
  MultithreadIterator multi(ds, 4, {.seed = 31, .n_threads = 2, .n_prefetch = 2});
  for (int s = 0; s < 6; ++s) multi.next();  // prefetched batches are ahead of the saved state
  serializers::DictionarySerializer saver;
  multi.serialize(saver);
  // Into a SerialIterator ...
  SerialIterator serial(ds, 4, {.seed = 1});
  serializers::DictionaryDeserializer loader(saver.target(), "snapshot");
  serial.serialize(loader);
  expect_same(serial, multi, 20);
  // ... and from a SerialIterator into another MultithreadIterator that had prefetched elsewhere.
  serializers::DictionarySerializer saver2;
  serial.serialize(saver2);
  MultithreadIterator other(ds, 4, {.seed = 5, .n_threads = 3, .n_prefetch = 2});
  other.next();
  serializers::DictionaryDeserializer loader2(saver2.target(), "snapshot");
  other.serialize(loader2);
  EXPECT_EQ(other.seed(), 31u);
  expect_same(serial, other, 20);
}

class Failing final : public datasets::Dataset {
 public:
  int64_t size() const override { return 12; }
  Example get_example(int64_t i) const override {
    if (i == 5) throw IOError("Failing: cannot read example 5");
    return {Array::scalar(static_cast<double>(i), Dtype::int64)};
  }
};

TEST(MultithreadIterator, DatasetErrorsPropagateToNext) {
  for (const bool stack : {false, true}) {
    MultithreadIterator it(std::make_shared<Failing>(), 3,
                           {.shuffle = false, .n_threads = 2, .n_prefetch = 2, .stack = stack});
    EXPECT_EQ(indices(*it.next()), (std::vector<int64_t>{0, 1, 2}));
    expect_error<IOError>([&] { stack ? (void)it.next_arrays() : (void)it.next(); }, {"Failing", "example 5"});
    // The failed batch is consumed, as with SerialIterator, and iteration goes on.
    EXPECT_EQ(it.current_position(), 6);
    EXPECT_EQ(indices(*it.next()), (std::vector<int64_t>{6, 7, 8}));
  }
}

TEST(MultithreadIterator, StackingErrorsPropagate) {
  // Examples whose shapes differ cannot be stacked: the worker's ShapeError reaches next_arrays().
  auto ds = std::make_shared<datasets::TransformDataset>(make_dataset(4), [](Example ex) {
    if (ex[0].item<int64_t>() == 1) ex[1] = Array::zeros(Shape{2});
    return ex;
  });
  MultithreadIterator it(ds, 2, {.shuffle = false, .n_threads = 2, .stack = true});
  expect_error<ShapeError>([&] { it.next_arrays(); }, {"concat_examples", "example 1", "(2,)", "(3,)"});
  EXPECT_EQ(it.next_arrays()->at(0).to_vector<int64_t>(), (std::vector<int64_t>{2, 3}));
}

class Slow final : public datasets::Dataset {
 public:
  explicit Slow(std::atomic<int>* reads) : reads_(reads) {}
  int64_t size() const override { return 1000; }
  Example get_example(int64_t i) const override {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    reads_->fetch_add(1);
    return {Array::scalar(static_cast<double>(i), Dtype::int64)};
  }

 private:
  std::atomic<int>* reads_;
};

TEST(MultithreadIterator, PrefetchesAndShutsDownCleanly) {
  std::atomic<int> reads{0};
  {
    MultithreadIterator never_used(std::make_shared<Slow>(&reads), 10, {.n_threads = 2});
  }
  EXPECT_EQ(reads.load(), 0);
  {
    MultithreadIterator it(std::make_shared<Slow>(&reads), 10, {.n_threads = 2, .n_prefetch = 3});
    ASSERT_EQ(it.next()->size(), 10u);
    // The workers go on reading the next batches without being asked.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (reads.load() < 20 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_GE(reads.load(), 20);
  }  // destroyed with batches in flight: must not hang
  const int after = reads.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(reads.load(), after);  // no worker outlives the iterator
}

TEST(MultithreadIterator, Errors) {
  expect_error<ValueError>([] { MultithreadIterator(make_dataset(3), 2, {.n_threads = 0}); },
                           {"MultithreadIterator", "n_threads", "0"});
  expect_error<ValueError>([] { MultithreadIterator(make_dataset(3), 2, {.n_prefetch = 0}); },
                           {"MultithreadIterator", "n_prefetch", "0"});
  expect_error<ValueError>([] { MultithreadIterator(make_dataset(3), 0); }, {"MultithreadIterator", "batch_size"});
  expect_error<ValueError>([] { MultithreadIterator(make_dataset(0), 2); }, {"MultithreadIterator", "non-empty"});
  MultithreadIterator empty(make_dataset(0), 2, {.repeat = false});
  EXPECT_TRUE(empty.next()->empty());
  EXPECT_FALSE(empty.next().has_value());
}

}  // namespace
}  // namespace rensa::iterators
