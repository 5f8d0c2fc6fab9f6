// scatter_index and scatter_dataset: strict partitions and equal-length shards for sizes below,
// at and above the rank count (0 included), the root's seed and settings win, views of a shared
// dataset and shards sent to ranks without one, and errors raised on every rank together.
#include <algorithm>
#include <memory>
#include <set>
#include <vector>

#include "rensa/datasets/image_dataset.h"
#include "rensa/datasets/sub_dataset.h"
#include "rensa/mn/scatter.h"
#include "tests/mn/train_test_util.h"
#include "tests/unit/test_util.h"

namespace rensa::mn::test {
namespace {

using rensa::test::expect_error;

// Every rank's shard (allgathered as int64 arrays).
std::vector<std::vector<int64_t>> all_shards(const std::vector<int64_t>& mine) {
  std::vector<std::vector<int64_t>> out;
  const std::vector<double> as_double(mine.begin(), mine.end());
  for (const auto& v : allgather_values(as_double)) out.emplace_back(v.begin(), v.end());
  return out;
}

// A dataset whose example i is ({i, -i} float32, i int32).
datasets::DatasetPtr numbered(int64_t n) {
  std::vector<float> x;
  std::vector<int32_t> t;
  for (int64_t i = 0; i < n; ++i) {
    x.push_back(static_cast<float>(i));
    x.push_back(-static_cast<float>(i));
    t.push_back(static_cast<int32_t>(i));
  }
  return std::make_shared<datasets::TupleDataset>(
      std::vector<Array>{Array::from_vector(x, {n, 2}), Array::from_vector(t, {n})});
}

int64_t label_of(const datasets::Example& e) { return e.at(1).item<int64_t>(); }

TEST(Scatter, StrictPartition) {
  Communicator c = comm();
  const int64_t size = c.size();
  for (int64_t n : {int64_t{0}, int64_t{1}, size - 1, size, int64_t{7}, int64_t{37}}) {
    if (n < 0) continue;
    const std::vector<int64_t> mine = scatter_index(n, c, {.force_equal_length = false});
    const auto shards = all_shards(mine);
    std::vector<int64_t> joined;
    for (const auto& s : shards) {
      EXPECT_LE(static_cast<int64_t>(s.size()), n / size + 1) << "n " << n;
      EXPECT_GE(static_cast<int64_t>(s.size()), n / size) << "n " << n;
      joined.insert(joined.end(), s.begin(), s.end());
    }
    // In rank order, the shards are 0..n-1 (no shuffle).
    std::vector<int64_t> expected(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) expected[static_cast<std::size_t>(i)] = i;
    EXPECT_EQ(joined, expected) << "n " << n;
  }
}

TEST(Scatter, EqualLengthShardsCoverEverything) {
  Communicator c = comm();
  const int64_t size = c.size();
  for (int64_t n : {int64_t{0}, int64_t{1}, size, int64_t{7}, int64_t{37}}) {
    const std::vector<int64_t> mine = scatter_index(n, c);
    const int64_t k = n == 0 ? 0 : (n + size - 1) / size;
    EXPECT_EQ(static_cast<int64_t>(mine.size()), k) << "n " << n;
    std::multiset<int64_t> seen;
    for (const auto& s : all_shards(mine)) seen.insert(s.begin(), s.end());
    EXPECT_EQ(static_cast<int64_t>(seen.size()), k * size);
    for (int64_t i = 0; i < n; ++i) EXPECT_GE(seen.count(i), 1u) << "index " << i << " of " << n << " missing";
    for (int64_t i : seen) EXPECT_TRUE(i >= 0 && i < n);
  }
}

TEST(Scatter, ShuffleUsesTheRootsSeed) {
  Communicator c = comm();
  // Ranks pass different seeds; the root's decides.
  const ScatterOptions o{.root = c.size() - 1, .shuffle = true, .seed = 40 + static_cast<uint64_t>(c.rank()),
                         .force_equal_length = false};
  const std::vector<int64_t> mine = scatter_index(50, c, o);
  std::vector<int64_t> joined;
  for (const auto& s : all_shards(mine)) joined.insert(joined.end(), s.begin(), s.end());
  Generator gen(40 + static_cast<uint64_t>(c.size() - 1));
  EXPECT_EQ(joined, datasets::permutation(50, gen));
}

TEST(Scatter, DatasetViewsTheSharedDataset) {
  Communicator c = comm();
  const auto data = numbered(23);
  const auto shard = scatter_dataset(data, c, {.shuffle = true, .seed = 3});
  const std::vector<int64_t> idx = scatter_index(23, c, {.shuffle = true, .seed = 3});
  ASSERT_EQ(shard->size(), static_cast<int64_t>(idx.size()));
  for (int64_t i = 0; i < shard->size(); ++i) {
    const auto e = shard->get_example(i);
    EXPECT_EQ(label_of(e), idx[static_cast<std::size_t>(i)]);
    EXPECT_EQ(e[0].to_vector<float>()[1], -static_cast<float>(idx[static_cast<std::size_t>(i)]));
  }
  expect_error<IndexError>([&] { shard->get_example(shard->size()); }, {"scatter_dataset", "out of range"});
}

TEST(Scatter, RootSendsShardsToRanksWithoutData) {
  Communicator c = comm();
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{9}}) {
    for (bool equal : {false, true}) {
      const ScatterOptions o{.shuffle = true, .seed = 5, .force_equal_length = equal};
      // Only the root and the last rank hold the dataset.
      const bool holds = c.rank() == 0 || c.rank() == c.size() - 1;
      const auto shard = scatter_dataset(holds ? numbered(n) : nullptr, c, o);
      const std::vector<int64_t> idx = scatter_index(n, c, o);
      ASSERT_EQ(shard->size(), static_cast<int64_t>(idx.size())) << "n " << n;
      for (int64_t i = 0; i < shard->size(); ++i) {
        const auto e = shard->get_example(i);
        const int64_t want = idx[static_cast<std::size_t>(i)];
        EXPECT_EQ(label_of(e), want);
        EXPECT_EQ(e[0].shape(), Shape({2}));
        EXPECT_EQ(e[0].to_vector<float>(), (std::vector<float>{static_cast<float>(want), -static_cast<float>(want)}));
      }
    }
  }
}

TEST(Scatter, FileListsTravelAsFileNames) {
  // ChainerMN's imagenet pattern: only the root builds the dataset. The files do not exist, so a
  // root that decoded an image would fail: the ranks get names, labels and options.
  Communicator c = comm();
  std::vector<std::pair<std::string, int64_t>> pairs;
  for (int64_t i = 0; i < 11; ++i) pairs.emplace_back("class" + std::to_string(i % 3) + "/img" + std::to_string(i) + ".jpg", i);
  const datasets::ImageDatasetOptions options{.root = "/nonexistent", .dtype = Dtype::uint8, .min_size = 40};
  datasets::DatasetPtr full = std::make_shared<datasets::LabeledImageDataset>(pairs, options);
  // A SubDataset of one travels too (its base's names).
  full = std::make_shared<datasets::SubDataset>(full, 1, 11);
  const ScatterOptions o{.shuffle = true, .seed = 7};
  const auto shard = scatter_dataset(c.rank() == 0 ? full : nullptr, c, o);
  const std::vector<int64_t> idx = scatter_index(10, c, o);
  ASSERT_EQ(shard->size(), static_cast<int64_t>(idx.size()));
  if (c.rank() != 0) {
    const auto* images = dynamic_cast<const datasets::LabeledImageDataset*>(shard.get());
    ASSERT_NE(images, nullptr);
    EXPECT_EQ(images->options().root, "/nonexistent");
    EXPECT_EQ(images->options().dtype, Dtype::uint8);
    EXPECT_EQ(images->options().min_size, 40);
    for (int64_t i = 0; i < shard->size(); ++i) {
      EXPECT_EQ(images->pairs()[static_cast<std::size_t>(i)], pairs[static_cast<std::size_t>(idx[static_cast<std::size_t>(i)] + 1)]);
    }
    expect_error<IOError>([&] { shard->get_example(0); }, {"/nonexistent/class"});
  }
  // Corrupt descriptions are errors, not crashes.
  expect_error<ValueError>([] { datasets::decode_dataset("junk"); }, {"decode_dataset"});
  std::string cut = *full->encode_subset({0, 1, 2});
  cut.resize(cut.size() - 3);
  expect_error<ValueError>([&] { datasets::decode_dataset(cut); }, {"decode_dataset"});
}

TEST(Scatter, ErrorsOnEveryRank) {
  Communicator c = comm();
  // Different sizes: every rank throws, naming all sizes.
  expect_error<ValueError>([&] { scatter_index(10 + c.rank(), c); }, {"scatter_index", "sizes differ", "[10, 11"});
  expect_error<ValueError>([&] { scatter_index(5, c, {.root = c.size()}); }, {"scatter_index", "root"});
  expect_error<ValueError>([&] { scatter_dataset(c.rank() == 0 ? nullptr : numbered(4), c); },
                           {"scatter_dataset", "root", "no dataset"});
  // Examples the root cannot stack: the receivers learn it instead of waiting.
  class Ragged final : public datasets::Dataset {
   public:
    int64_t size() const override { return 6; }
    datasets::Example get_example(int64_t i) const override { return {Array::zeros({i % 2 + 1})}; }
  };
  if (c.size() > 1) {
    expect_error<ValueError>([&] { scatter_dataset(c.rank() == 0 ? std::make_shared<Ragged>() : nullptr, c); },
                             {"scatter_dataset"});
  }
  // Everyone still agrees afterwards.
  EXPECT_TRUE(all_ranks(true));
}

}  // namespace
}  // namespace rensa::mn::test
