// TupleDataset, SubDataset, the splitters, TransformDataset, ConcatenatedDataset, permutation and
// concat_examples.

#include <algorithm>
#include <numeric>
#include <set>

#include "rensa/datasets/concat_examples.h"
#include "rensa/datasets/concatenated_dataset.h"
#include "rensa/datasets/sub_dataset.h"
#include "rensa/datasets/transform_dataset.h"
#include "rensa/datasets/tuple_dataset.h"
#include "tests/unit/test_util.h"

namespace rensa::datasets {
namespace {

using test::expect_error;

/// n examples {x (2,) float32 = [i, 10 i], t int32 = i}.
std::shared_ptr<TupleDataset> make_dataset(int64_t n) {
  std::vector<float> x;
  std::vector<int32_t> t;
  for (int64_t i = 0; i < n; ++i) {
    x.push_back(static_cast<float>(i));
    x.push_back(static_cast<float>(10 * i));
    t.push_back(static_cast<int32_t>(i));
  }
  return std::make_shared<TupleDataset>(
      std::vector<Array>{Array::from_vector(x, Shape{n, 2}), Array::from_vector(t, Shape{n})});
}

int64_t label(const Example& ex) { return ex.at(1).item<int64_t>(); }

// ---- TupleDataset ---------------------------------------------------------------------------------

TEST(TupleDataset, ExamplesAreViewsOfRows) {
  auto ds = make_dataset(5);
  EXPECT_EQ(ds->size(), 5);
  const Example ex = ds->get_example(3);
  ASSERT_EQ(ex.size(), 2u);
  EXPECT_EQ(ex[0].shape(), (Shape{2}));
  EXPECT_EQ(ex[0].to_vector<float>(), (std::vector<float>{3.0f, 30.0f}));
  EXPECT_EQ(ex[1].shape(), Shape{});
  EXPECT_EQ(ex[1].dtype(), Dtype::int32);
  EXPECT_EQ(ex[1].item<int>(), 3);
  EXPECT_TRUE(ex[0].shares_storage(ds->columns()[0]));
  // A view: writing through the column shows in the example.
  ds->columns()[0].index({int64_t{3}, int64_t{1}}).fill(7.0);
  EXPECT_EQ(ex[0].at<float>({1}), 7.0f);
}

TEST(TupleDataset, NonContiguousColumn) {
  Array a = Array::arange(12, Dtype::float32).reshape(Shape{3, 4}).transpose();  // (4, 3), strided
  TupleDataset ds({a});
  EXPECT_EQ(ds.size(), 4);
  EXPECT_EQ(ds.get_example(1)[0].to_vector<float>(), (std::vector<float>{1, 5, 9}));
}

TEST(TupleDataset, Errors) {
  expect_error<ShapeError>([] { TupleDataset({Array::zeros(Shape{3, 2}), Array::zeros(Shape{4})}); },
                           {"TupleDataset", "(3, 2)", "(4,)"});
  expect_error<ShapeError>([] { TupleDataset({Array::scalar(1.0)}); }, {"TupleDataset", "0-dimensional"});
  expect_error<ValueError>([] { TupleDataset(std::vector<Array>{}); }, {"TupleDataset", "at least one column"});
  expect_error<ValueError>([] { TupleDataset({Array()}); }, {"TupleDataset", "null"});
  auto ds = make_dataset(4);
  expect_error<IndexError>([&] { ds->get_example(4); }, {"TupleDataset", "index 4", "size 4"});
  expect_error<IndexError>([&] { ds->get_example(-1); }, {"TupleDataset", "index -1", "size 4"});
}

TEST(TupleDataset, EmptyColumns) {
  TupleDataset ds({Array::zeros(Shape{0, 3})});
  EXPECT_EQ(ds.size(), 0);
  expect_error<IndexError>([&] { ds.get_example(0); }, {"TupleDataset", "size 0"});
}

// ---- permutation ----------------------------------------------------------------------------------

TEST(Permutation, DeterministicAndComplete) {
  Generator g1(42), g2(42), g3(43);
  const auto p1 = permutation(1000, g1);
  const auto p2 = permutation(1000, g2);
  const auto p3 = permutation(1000, g3);
  EXPECT_EQ(p1, p2);
  EXPECT_NE(p1, p3);
  EXPECT_EQ(g1.offset(), 1000u);
  auto sorted = p1;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(1000);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_EQ(sorted, iota);
  EXPECT_NE(p1, iota);
  // The next permutation from the same generator continues the stream: a different order.
  EXPECT_NE(permutation(1000, g1), p1);
  Generator g0(0);
  EXPECT_TRUE(permutation(0, g0).empty());
  EXPECT_EQ(permutation(1, g0), (std::vector<int64_t>{0}));
  expect_error<ValueError>([&] { permutation(-1, g0); }, {"permutation", "-1"});
}

TEST(Permutation, PinnedValues) {
  // Philox and Fisher-Yates fix these on every machine and compiler: changing them changes the
  // order every shuffled training run sees.
  Generator g0(0), g1(12345);
  EXPECT_EQ(permutation(10, g0), (std::vector<int64_t>{7, 1, 0, 3, 6, 8, 4, 9, 2, 5}));
  EXPECT_EQ(permutation(10, g1), (std::vector<int64_t>{8, 6, 1, 7, 5, 2, 0, 4, 9, 3}));
}

TEST(Permutation, RoughlyUniform) {
  // Where element 0 lands over many permutations of 4: each slot about 1/4 of the time.
  Generator g(7);
  std::vector<int> count(4, 0);
  for (int k = 0; k < 4000; ++k) {
    const auto p = permutation(4, g);
    count[static_cast<std::size_t>(std::find(p.begin(), p.end(), 0) - p.begin())]++;
  }
  for (int c : count) EXPECT_NEAR(c, 1000, 150);
}

// ---- SubDataset and splits ------------------------------------------------------------------------

TEST(SubDataset, RangeAndOrder) {
  auto ds = make_dataset(6);
  SubDataset sub(ds, 2, 5);
  EXPECT_EQ(sub.size(), 3);
  EXPECT_EQ(label(sub.get_example(0)), 2);
  EXPECT_EQ(label(sub.get_example(2)), 4);
  SubDataset ordered(ds, 1, 4, std::vector<int64_t>{5, 4, 3, 2, 1, 0});
  EXPECT_EQ(label(ordered.get_example(0)), 4);
  EXPECT_EQ(label(ordered.get_example(2)), 2);
  EXPECT_EQ(ordered.base_index(1), 3);
  SubDataset empty(ds, 3, 3);
  EXPECT_EQ(empty.size(), 0);
}

TEST(SubDataset, Errors) {
  auto ds = make_dataset(6);
  expect_error<ValueError>([&] { SubDataset(ds, 2, 7); }, {"SubDataset", "[2, 7)", "size 6"});
  expect_error<ValueError>([&] { SubDataset(ds, -1, 3); }, {"SubDataset", "[-1, 3)"});
  expect_error<ValueError>([&] { SubDataset(ds, 4, 3); }, {"SubDataset", "[4, 3)"});
  expect_error<ValueError>([&] { SubDataset(ds, 0, 3, std::vector<int64_t>{0, 1}); },
                           {"SubDataset", "2 entries", "6 examples"});
  expect_error<IndexError>([&] { SubDataset(ds, 0, 3, std::vector<int64_t>{0, 1, 2, 3, 4, 6}); },
                           {"SubDataset", "order[5] = 6"});
  expect_error<ValueError>([&] { SubDataset(nullptr, 0, 0); }, {"SubDataset", "null"});
  SubDataset sub(ds, 2, 5);
  expect_error<IndexError>([&] { sub.get_example(3); }, {"SubDataset", "index 3", "size 3"});
}

TEST(SplitDataset, SplitsInOrder) {
  auto ds = make_dataset(10);
  auto [a, b] = split_dataset(ds, 3);
  EXPECT_EQ(a->size(), 3);
  EXPECT_EQ(b->size(), 7);
  EXPECT_EQ(label(a->get_example(2)), 2);
  EXPECT_EQ(label(b->get_example(0)), 3);
  std::vector<int64_t> order{9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
  auto [c, d] = split_dataset(ds, 4, order);
  EXPECT_EQ(label(c->get_example(0)), 9);
  EXPECT_EQ(label(d->get_example(0)), 5);
  auto [e, f] = split_dataset(ds, 0);
  EXPECT_EQ(e->size(), 0);
  EXPECT_EQ(f->size(), 10);
  expect_error<ValueError>([&] { split_dataset(ds, 11); }, {"split_dataset", "first_size 11", "[0, 10]"});
  expect_error<ValueError>([&] { split_dataset(ds, -1); }, {"split_dataset", "first_size -1"});
}

TEST(SplitDataset, RandomIsAPartitionAndRepeatable) {
  auto ds = make_dataset(20);
  auto [a, b] = split_dataset_random(ds, 7, 3);
  auto [a2, b2] = split_dataset_random(ds, 7, 3);
  auto [a3, b3] = split_dataset_random(ds, 7, 4);
  ASSERT_EQ(a->size(), 7);
  ASSERT_EQ(b->size(), 13);
  std::set<int64_t> all;
  std::vector<int64_t> first, first2, first3;
  for (int64_t i = 0; i < 7; ++i) {
    first.push_back(label(a->get_example(i)));
    first2.push_back(label(a2->get_example(i)));
    first3.push_back(label(a3->get_example(i)));
  }
  for (int64_t i = 0; i < 13; ++i) all.insert(label(b->get_example(i)));
  all.insert(first.begin(), first.end());
  EXPECT_EQ(all.size(), 20u);
  EXPECT_EQ(first, first2);
  EXPECT_NE(first, first3);
  expect_error<ValueError>([&] { split_dataset_random(ds, 21, 0); }, {"split_dataset_random", "21"});
}

TEST(CrossValidation, FoldsPartitionTheData) {
  auto ds = make_dataset(10);
  const auto folds = get_cross_validation_datasets(ds, 3);
  ASSERT_EQ(folds.size(), 3u);
  std::multiset<int64_t> tested;
  const int64_t test_sizes[] = {4, 3, 3};
  for (std::size_t k = 0; k < folds.size(); ++k) {
    const auto& [train, test] = folds[k];
    EXPECT_EQ(test->size(), test_sizes[k]);
    EXPECT_EQ(train->size() + test->size(), 10);
    std::set<int64_t> seen;
    for (int64_t i = 0; i < train->size(); ++i) seen.insert(label(train->get_example(i)));
    for (int64_t i = 0; i < test->size(); ++i) {
      const int64_t v = label(test->get_example(i));
      tested.insert(v);
      seen.insert(v);
    }
    EXPECT_EQ(seen.size(), 10u);  // train and test are disjoint and cover everything
  }
  EXPECT_EQ(tested.size(), 10u);
  EXPECT_EQ(std::set<int64_t>(tested.begin(), tested.end()).size(), 10u);  // each example tested once
  // Fold 0 tests on the first share of the order.
  EXPECT_EQ(label(folds[0].second->get_example(0)), 0);
  const auto random_folds = get_cross_validation_datasets_random(ds, 2, 5);
  EXPECT_EQ(random_folds[0].second->size(), 5);
  expect_error<ValueError>([&] { get_cross_validation_datasets(ds, 1); }, {"get_cross_validation_datasets", "1"});
  expect_error<ValueError>([&] { get_cross_validation_datasets(ds, 11); }, {"get_cross_validation_datasets", "11"});
}

// ---- TransformDataset -----------------------------------------------------------------------------

TEST(TransformDataset, AppliesTheTransformOnRead) {
  auto ds = make_dataset(4);
  TransformDataset tds(ds, [](Example ex) {
    ex[0] = ex[0].astype(Dtype::float64);
    ex.push_back(Array::scalar(static_cast<double>(ex[1].item<int>() * 2), Dtype::int64));
    return ex;
  });
  EXPECT_EQ(tds.size(), 4);
  const Example ex = tds.get_example(3);
  ASSERT_EQ(ex.size(), 3u);
  EXPECT_EQ(ex[0].dtype(), Dtype::float64);
  EXPECT_EQ(ex[2].item<int64_t>(), 6);
  expect_error<IndexError>([&] { tds.get_example(4); }, {"TransformDataset", "index 4", "size 4"});
  expect_error<ValueError>([&] { TransformDataset(ds, nullptr); }, {"TransformDataset", "empty"});
  expect_error<ValueError>([&] { TransformDataset(nullptr, [](Example e) { return e; }); },
                           {"TransformDataset", "null"});
}

TEST(TransformDataset, ErrorsOfTheTransformPropagate) {
  TransformDataset tds(make_dataset(2), [](Example) -> Example { throw ValueError("augment: bad example"); });
  expect_error<ValueError>([&] { tds.get_example(0); }, {"augment: bad example"});
}

// ---- ConcatenatedDataset --------------------------------------------------------------------------

TEST(ConcatenatedDataset, IndexesAcrossDatasets) {
  auto a = make_dataset(3);
  auto empty = make_dataset(0);
  auto b = std::make_shared<SubDataset>(make_dataset(10), 5, 9);  // labels 5..8
  ConcatenatedDataset cat({empty, a, empty, b, empty});
  EXPECT_EQ(cat.size(), 7);
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < cat.size(); ++i) labels.push_back(label(cat.get_example(i)));
  EXPECT_EQ(labels, (std::vector<int64_t>{0, 1, 2, 5, 6, 7, 8}));
  expect_error<IndexError>([&] { cat.get_example(7); }, {"ConcatenatedDataset", "index 7", "size 7"});
  ConcatenatedDataset none({});
  EXPECT_EQ(none.size(), 0);
  expect_error<IndexError>([&] { none.get_example(0); }, {"ConcatenatedDataset", "size 0"});
  expect_error<ValueError>([&] { ConcatenatedDataset({a, nullptr}); }, {"ConcatenatedDataset", "dataset 1", "null"});
}

// ---- concat_examples ------------------------------------------------------------------------------

TEST(ConcatExamples, StacksColumns) {
  auto ds = make_dataset(5);
  std::vector<Example> batch{ds->get_example(4), ds->get_example(0), ds->get_example(2)};
  const auto arrays = concat_examples(batch);
  ASSERT_EQ(arrays.size(), 2u);
  EXPECT_EQ(arrays[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(arrays[0].dtype(), Dtype::float32);
  EXPECT_EQ(arrays[0].to_vector<float>(), (std::vector<float>{4, 40, 0, 0, 2, 20}));
  EXPECT_EQ(arrays[1].shape(), (Shape{3}));
  EXPECT_EQ(arrays[1].dtype(), Dtype::int32);
  EXPECT_EQ(arrays[1].to_vector<int>(), (std::vector<int>{4, 0, 2}));
  // Copies: the stacked arrays own their memory.
  EXPECT_FALSE(arrays[0].shares_storage(ds->columns()[0]));
  EXPECT_TRUE(arrays[0].is_contiguous());
}

TEST(ConcatExamples, NonContiguousExamplesAndDevices) {
  Array base = test::randn(Shape{4, 3, 5}, Dtype::float64, 3);
  Example e0{base.transpose(Shape{2, 0, 1}).index({int64_t{1}})};  // (4, 3) strided view
  Example e1{base.index({Slice{}, Slice{}, int64_t{4}})};         // (4, 3) strided view
  ASSERT_FALSE(e0[0].is_contiguous());
  ASSERT_FALSE(e1[0].is_contiguous());
  const auto out = concat_examples({e0, e1});
  ASSERT_EQ(out[0].shape(), (Shape{2, 4, 3}));
  EXPECT_TRUE(array_equal(out[0].index({int64_t{0}}), e0[0]));
  EXPECT_TRUE(array_equal(out[0].index({int64_t{1}}), e1[0]));
  const auto ref = concat_examples({e0, e1}, Device::reference());
  EXPECT_EQ(ref[0].device(), Device::reference());
  EXPECT_TRUE(array_equal(ref[0].to(Device::cpu()), out[0]));
  // Examples on another host device are copied over.
  Example r0{e0[0].to(Device::reference())}, r1{e1[0].to(Device::reference())};
  EXPECT_TRUE(array_equal(concat_examples({r0, r1})[0], out[0]));
}

TEST(ConcatExamples, Errors) {
  expect_error<ValueError>([] { concat_examples({}); }, {"concat_examples", "empty"});
  Example a{Array::zeros(Shape{2, 3}), Array::scalar(1, Dtype::int32)};
  Example b{Array::zeros(Shape{3, 2}), Array::scalar(1, Dtype::int32)};
  Example c{Array::zeros(Shape{2, 3}), Array::scalar(1, Dtype::int64)};
  Example d{Array::zeros(Shape{2, 3})};
  expect_error<ShapeError>([&] { concat_examples({a, a, b}); }, {"concat_examples", "example 2", "(3, 2)", "(2, 3)"});
  expect_error<DtypeError>([&] { concat_examples({a, c}); }, {"concat_examples", "example 1", "int64", "int32"});
  expect_error<ValueError>([&] { concat_examples({a, d}); }, {"concat_examples", "example 1", "1 columns"});
}

TEST(ConcatExamples, ZeroSizeColumns) {
  Example a{Array::zeros(Shape{0, 3})};
  const auto out = concat_examples({a, a});
  EXPECT_EQ(out[0].shape(), (Shape{2, 0, 3}));
}

}  // namespace
}  // namespace rensa::datasets
