// concat_examples with padding (Chainer's `padding`): examples of different extents, per-column
// values, devices, errors.
#include "rensa/datasets/concat_examples.h"
#include "tests/unit/test_util.h"

namespace rensa::datasets {
namespace {

using test::expect_error;

TEST(ConcatExamplesPadding, PadsEachAxisToTheLargestExtent) {
  // Values as chainer.dataset.concat_examples(batch, padding=-1) gives them.
  const std::vector<Example> batch{
      {Array::from_vector<float>({1, 2, 3}), Array::from_vector<int32_t>({1, 2}, Shape{1, 2})},
      {Array::from_vector<float>({4}), Array::from_vector<int32_t>({3, 4, 5, 6}, Shape{2, 2})},
  };
  const auto arrays = concat_examples(batch, Device::cpu(), -1.0);
  ASSERT_EQ(arrays.size(), 2u);
  EXPECT_EQ(arrays[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(arrays[0].to_vector<float>(), (std::vector<float>{1, 2, 3, 4, -1, -1}));
  EXPECT_EQ(arrays[1].shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(arrays[1].dtype(), Dtype::int32);
  EXPECT_EQ(arrays[1].to_vector<int>(), (std::vector<int>{1, 2, -1, -1, 3, 4, 5, 6}));

  const auto per_column = concat_examples(batch, Device::reference(), std::vector<double>{0.5, 9});
  EXPECT_EQ(per_column[0].device(), Device::reference());
  EXPECT_EQ(per_column[0].to(Device::cpu()).to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 0.5, 0.5}));
  EXPECT_EQ(per_column[1].to(Device::cpu()).to_vector<int>(), (std::vector<int>{1, 2, 9, 9, 3, 4, 5, 6}));
}

TEST(ConcatExamplesPadding, EqualShapesGiveWhatConcatExamplesGives) {
  const std::vector<Example> batch{{Array::from_vector<float>({1, 2})}, {Array::from_vector<float>({3, 4})}};
  EXPECT_TRUE(array_equal(concat_examples(batch, Device::cpu(), 7.0)[0], concat_examples(batch)[0]));
}

TEST(ConcatExamplesPadding, Errors) {
  const std::vector<Example> batch{{Array::zeros({2})}, {Array::zeros({2, 1})}};
  expect_error<ShapeError>([&] { concat_examples(batch, Device::cpu(), 0.0); },
                           {"concat_examples", "example 1", "(2, 1)", "(2,)"});
  expect_error<ValueError>([&] { concat_examples({}, Device::cpu(), 0.0); }, {"concat_examples", "empty"});
  expect_error<ValueError>([&] { concat_examples({{Array::zeros({2})}}, Device::cpu(), std::vector<double>{1, 2}); },
                           {"concat_examples", "2 padding values", "1 columns"});
  expect_error<DtypeError>(
      [&] { concat_examples({{Array::zeros({2})}, {Array::zeros({2}, Dtype::int32)}}, Device::cpu(), 0.0); },
      {"concat_examples", "int32", "float32"});
}

}  // namespace
}  // namespace rensa::datasets
