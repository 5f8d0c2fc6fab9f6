// Image transforms: crop_and_flip against a reference loop, RandomCrop, RandomFlip, Normalize,
// compose, their draws, their use under MultithreadIterator, and their errors.

#include <cmath>
#include <map>
#include <set>

#include "rensa/datasets/image_transforms.h"
#include "rensa/datasets/transform_dataset.h"
#include "rensa/datasets/tuple_dataset.h"
#include "rensa/iterators/multithread_iterator.h"
#include "rensa/iterators/serial_iterator.h"
#include "tests/unit/test_util.h"

namespace rensa::datasets::transforms {
namespace {

using test::expect_error;

/// A (C, H, W) image whose pixels are 1, 2, 3, ... (distinct and never the padding value 0).
Array ramp(int64_t c, int64_t h, int64_t w, Dtype dtype = Dtype::float32) {
  return Array::arange(1.0, static_cast<double>(c * h * w + 1), 1.0, dtype).reshape(Shape{c, h, w});
}

/// The definition of crop_and_flip, one element at a time.
Array reference_crop(const Array& image, int64_t pad, int64_t top, int64_t left, int64_t height, int64_t width,
                     bool flip_h, bool flip_v, double pad_value) {
  const int64_t channels = image.shape()[0], in_h = image.shape()[1], in_w = image.shape()[2];
  std::vector<double> out;
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t i = 0; i < height; ++i) {
      for (int64_t j = 0; j < width; ++j) {
        const int64_t si = top + (flip_v ? height - 1 - i : i) - pad;
        const int64_t sj = left + (flip_h ? width - 1 - j : j) - pad;
        const bool inside = si >= 0 && si < in_h && sj >= 0 && sj < in_w;
        out.push_back(inside ? image.at<double>({c, si, sj}) : pad_value);
      }
    }
  }
  return Array::from_vector(out, Shape{channels, height, width}).astype(image.dtype());
}

// ---- crop_and_flip --------------------------------------------------------------------------------

TEST(CropAndFlip, MatchesTheReferenceLoopAtEveryWindow) {
  const Array contiguous = ramp(2, 5, 7);
  // The same values through strides: (C, W, H) transposed to (C, H, W).
  const Array strided = ramp(2, 7, 5).transpose(Shape{0, 2, 1});
  ASSERT_FALSE(strided.is_contiguous());
  for (Dtype dtype : {Dtype::float32, Dtype::float64, Dtype::bfloat16}) {
    for (const Array& image : {contiguous.astype(dtype), strided.astype(dtype)}) {
      for (const auto& [pad, height, width] : {std::array<int64_t, 3>{0, 5, 7}, {2, 5, 7}, {2, 3, 4}, {1, 7, 9},
                                              {3, 2, 12}, {0, 0, 3}}) {
        for (int64_t top = 0; top + height <= 5 + 2 * pad; ++top) {
          for (int64_t left = 0; left + width <= 7 + 2 * pad; ++left) {
            for (int flips = 0; flips < 4; ++flips) {
              const bool fh = flips & 1, fv = flips & 2;
              const Array got = crop_and_flip(image, pad, top, left, height, width, fh, fv, -0.5);
              ASSERT_EQ(got.dtype(), dtype);
              ASSERT_TRUE(got.is_contiguous());
              ASSERT_TRUE(array_equal(got, reference_crop(image, pad, top, left, height, width, fh, fv, -0.5)))
                  << "dtype " << dtype << " pad " << pad << " window (" << top << ", " << left << ") size ("
                  << height << ", " << width << ") flips " << flips << " contiguous " << image.is_contiguous();
            }
          }
        }
      }
    }
  }
}

TEST(CropAndFlip, Uint8RowsOfEveryWidth) {
  // uint8 rows are reversed 16 bytes at a time, then byte by byte: every width up to 40 and a long
  // one, contiguous and strided, with padding on either side of the flipped part.
  for (const int64_t w : {1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 40, 227}) {
    std::vector<uint8_t> v(static_cast<std::size_t>(2 * 3 * w));
    for (std::size_t k = 0; k < v.size(); ++k) v[k] = static_cast<uint8_t>(k * 7 % 251);
    const Array image = Array::from_vector(v, Shape{2, 3, w});
    const Array strided = image.transpose(Shape{0, 2, 1}).copy().transpose(Shape{0, 2, 1});
    for (const Array& x : {image, strided}) {
      for (const auto& [pad, left, width] :
           {std::array<int64_t, 3>{0, 0, w}, {2, 0, w + 4}, {3, 1, w}, {1, 2, w - 1}}) {
        if (width < 0 || left + width > w + 2 * pad) continue;
        for (const bool fv : {false, true}) {
          const Array got = crop_and_flip(x, pad, 0, left, 3, width, true, fv, 5.0);
          ASSERT_TRUE(array_equal(got, reference_crop(x, pad, 0, left, 3, width, true, fv, 5.0)))
              << "width " << w << " pad " << pad << " left " << left << " window width " << width << " contiguous "
              << x.is_contiguous();
        }
      }
    }
  }
}

TEST(CropAndFlip, WholeWindowIsIdentityAndFlipTwiceIsIdentity) {
  const Array x = test::randn(Shape{3, 4, 6}, Dtype::float32);
  EXPECT_TRUE(array_equal(crop_and_flip(x, 0, 0, 0, 4, 6), x));
  EXPECT_TRUE(array_equal(crop_and_flip(x, 2, 2, 2, 4, 6), x));
  for (int flips = 1; flips < 4; ++flips) {
    const bool fh = flips & 1, fv = flips & 2;
    const Array once = crop_and_flip(x, 0, 0, 0, 4, 6, fh, fv);
    EXPECT_FALSE(array_equal(once, x));
    EXPECT_TRUE(array_equal(crop_and_flip(once, 0, 0, 0, 4, 6, fh, fv), x)) << "flips " << flips;
  }
  // A horizontal flip reverses each row.
  const Array row = Array::from_vector(std::vector<float>{1, 2, 3}, Shape{1, 1, 3});
  EXPECT_EQ(crop_and_flip(row, 0, 0, 0, 1, 3, true).to_vector<float>(), (std::vector<float>{3, 2, 1}));
  // Shifted by one with padding 9 coming in on the left (the window starts one pixel into the pad).
  EXPECT_EQ(crop_and_flip(row, 1, 1, 0, 1, 3, false, false, 9.0).to_vector<float>(), (std::vector<float>{9, 1, 2}));
}

TEST(CropAndFlip, Errors) {
  const Array x = ramp(1, 5, 5);
  expect_error<ShapeError>([&] { crop_and_flip(x, 1, 2, 0, 6, 5); },
                           {"crop_and_flip", "(2, 0)", "(6, 5)", "(7, 7)", "(1, 5, 5)", "pad 1"});
  expect_error<ValueError>([&] { crop_and_flip(x, -1, 0, 0, 5, 5); }, {"crop_and_flip", "pad -1"});
  expect_error<ValueError>([&] { crop_and_flip(x, 0, 0, -2, 5, 5); }, {"crop_and_flip", "left -2"});
  expect_error<ShapeError>([&] { crop_and_flip(ramp(1, 5, 5).reshape(Shape{5, 5}), 0, 0, 0, 5, 5); },
                           {"crop_and_flip", "3-dimensional", "(5, 5)"});
  expect_error<DtypeError>([&] { crop_and_flip(x.astype(Dtype::int32), 0, 0, 0, 5, 5); },
                           {"crop_and_flip", "int32"});
  expect_error<ValueError>([&] { crop_and_flip(Array(), 0, 0, 0, 5, 5); }, {"crop_and_flip", "null"});
}

// ---- RandomCrop -----------------------------------------------------------------------------------

/// The (top, left) of the window `crop` was cut from `image` padded by `pad` (crops of a ramp at
/// different windows differ), or (-1, -1).
std::pair<int64_t, int64_t> find_window(const Array& image, const Array& crop, int64_t pad) {
  const int64_t h = crop.shape()[1], w = crop.shape()[2];
  for (int64_t top = 0; top + h <= image.shape()[1] + 2 * pad; ++top) {
    for (int64_t left = 0; left + w <= image.shape()[2] + 2 * pad; ++left) {
      if (array_equal(crop, crop_and_flip(image, pad, top, left, h, w))) return {top, left};
    }
  }
  return {-1, -1};
}

TEST(RandomCrop, NoPadAndFullSizeIsIdentity) {
  const Array x = test::randn(Shape{3, 4, 6}, Dtype::float32);
  RandomCrop crop({.seed = 5});
  for (int k = 0; k < 10; ++k) EXPECT_TRUE(array_equal(crop.apply(x), x));
  EXPECT_EQ(crop.stream().draws(), 10u);
}

TEST(RandomCrop, EveryOffsetOccursAboutEquallyOften) {
  const Array x = ramp(2, 5, 5);
  RandomCrop crop({.pad = 2, .seed = 11});
  std::map<std::pair<int64_t, int64_t>, int> count;
  const int n = 2500;
  for (int k = 0; k < n; ++k) {
    const Array y = crop.apply(x);
    ASSERT_EQ(y.shape(), x.shape());
    const auto window = find_window(x, y, 2);
    ASSERT_NE(window.first, -1) << y;
    count[window]++;
  }
  ASSERT_EQ(count.size(), 25u);  // every (top, left) in [0, 4]^2
  for (const auto& [window, c] : count) EXPECT_NEAR(c, n / 25, 40) << window.first << ", " << window.second;
}

TEST(RandomCrop, SmallerSizeAndPadValue) {
  const Array x = ramp(1, 4, 6, Dtype::float64);
  RandomCrop crop({.pad = 1, .size = std::array<int64_t, 2>{3, 5}, .pad_value = -1.0, .seed = 3});
  std::set<std::pair<int64_t, int64_t>> seen;
  for (int k = 0; k < 400; ++k) {
    const Array y = crop.apply(x);
    ASSERT_EQ(y.shape(), (Shape{1, 3, 5}));
    ASSERT_EQ(y.dtype(), Dtype::float64);
    bool found = false;
    for (int64_t top = 0; top <= 3 && !found; ++top) {
      for (int64_t left = 0; left <= 3 && !found; ++left) {
        if (array_equal(y, reference_crop(x, 1, top, left, 3, 5, false, false, -1.0))) {
          seen.insert({top, left});
          found = true;
        }
      }
    }
    ASSERT_TRUE(found) << y;
  }
  EXPECT_EQ(seen.size(), 16u);
}

TEST(RandomCrop, SameSeedSameDrawsAndCopiesShareTheStream) {
  const Array x = ramp(1, 6, 6);
  RandomCrop a({.pad = 3, .seed = 7}), b({.pad = 3, .seed = 7}), c({.pad = 3, .seed = 8});
  int differ = 0;
  for (int k = 0; k < 20; ++k) {
    const Array ya = a.apply(x);
    EXPECT_TRUE(array_equal(ya, b.apply(x)));
    differ += !array_equal(ya, c.apply(x));
  }
  EXPECT_GT(differ, 10);
  // A copy (what std::function holds) continues the original's stream instead of repeating it.
  RandomCrop copy = a;
  const Array from_copy = copy.apply(x);
  EXPECT_TRUE(array_equal(from_copy, b.apply(x)));
  EXPECT_EQ(a.stream().draws(), 21u);
  // Rewinding the stream repeats its draws.
  a.stream().set_draws(0);
  RandomCrop fresh({.pad = 3, .seed = 7});
  for (int k = 0; k < 5; ++k) EXPECT_TRUE(array_equal(a.apply(x), fresh.apply(x)));
}

TEST(RandomCrop, PinnedWindows) {
  // Philox fixes these on every machine: changing them changes what every augmented run sees.
  const Array x = ramp(1, 5, 5);
  RandomCrop crop({.pad = 2, .seed = 0});
  std::vector<std::pair<int64_t, int64_t>> windows;
  for (int k = 0; k < 6; ++k) windows.push_back(find_window(x, crop.apply(x), 2));
  EXPECT_EQ(windows, (std::vector<std::pair<int64_t, int64_t>>{{3, 0}, {1, 1}, {4, 4}, {0, 2}, {0, 2}, {0, 3}}));
}

TEST(RandomCrop, OperatesOnElementZeroOnly) {
  const Array x = ramp(1, 3, 3), label = Array::scalar(4.0, Dtype::int32);
  RandomCrop crop({.pad = 1, .seed = 1});
  const Example out = crop({x, label});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_NE(find_window(x, out[0], 1).first, -1);
  EXPECT_TRUE(out[1].shares_storage(label));
  EXPECT_EQ(x.to_vector<float>(), ramp(1, 3, 3).to_vector<float>());  // the input is not written to
}

TEST(RandomCrop, Errors) {
  expect_error<ValueError>([] { RandomCrop({.pad = -1}); }, {"RandomCrop", "pad", "-1"});
  expect_error<ValueError>([] { RandomCrop({.size = std::array<int64_t, 2>{3, -2}}); },
                           {"RandomCrop", "size", "(3, -2)"});
  RandomCrop big({.pad = 1, .size = std::array<int64_t, 2>{8, 4}});
  expect_error<ShapeError>([&] { big.apply(ramp(2, 5, 5)); },
                           {"RandomCrop", "crop size (8, 4)", "padded image (7, 7)", "(2, 5, 5)", "pad 1"});
  RandomCrop crop({.pad = 2});
  expect_error<ShapeError>([&] { crop.apply(Array::zeros(Shape{28, 28})); },
                           {"RandomCrop", "3-dimensional", "(28, 28)"});
  expect_error<DtypeError>([&] { crop.apply(Array::zeros(Shape{1, 4, 4}, Dtype::int32)); },
                           {"RandomCrop", "uint8 or floating", "int32"});
  expect_error<ValueError>([&] { crop(Example{}); }, {"RandomCrop", "example is empty"});
  EXPECT_EQ(crop.stream().draws(), 0u);  // failed calls draw nothing
}

// ---- RandomFlip -----------------------------------------------------------------------------------

TEST(RandomFlip, ProbabilityOneAlwaysFlipsAndZeroNever) {
  const Array x = test::randn(Shape{2, 3, 4}, Dtype::float32);
  const Array mirrored = crop_and_flip(x, 0, 0, 0, 3, 4, true);
  const Array upside_down = crop_and_flip(x, 0, 0, 0, 3, 4, false, true);
  RandomFlip always({.horizontal = 1.0}), never({.horizontal = 0.0}), vertical({.horizontal = 0.0, .vertical = 1.0});
  for (int k = 0; k < 20; ++k) {
    EXPECT_TRUE(array_equal(always.apply(x), mirrored));
    EXPECT_TRUE(never.apply(x).shares_storage(x));  // unchanged images are returned as is
    EXPECT_TRUE(array_equal(vertical.apply(x), upside_down));
  }
}

TEST(RandomFlip, RatesMatchTheProbabilities) {
  // A (1, 2, 2) image tells all four outcomes apart.
  const Array x = ramp(1, 2, 2);
  const Array h = crop_and_flip(x, 0, 0, 0, 2, 2, true), v = crop_and_flip(x, 0, 0, 0, 2, 2, false, true);
  const Array hv = crop_and_flip(x, 0, 0, 0, 2, 2, true, true);
  RandomFlip flip({.horizontal = 0.5, .vertical = 0.25, .seed = 9});
  const int n = 20000;
  int none = 0, only_h = 0, only_v = 0, both = 0;
  for (int k = 0; k < n; ++k) {
    const Array y = flip.apply(x);
    if (array_equal(y, x)) none++;
    else if (array_equal(y, h)) only_h++;
    else if (array_equal(y, v)) only_v++;
    else if (array_equal(y, hv)) both++;
    else FAIL() << y;
  }
  // Independent flips: probabilities 3/8, 3/8, 1/8, 1/8 (standard deviations below 70 draws).
  EXPECT_NEAR(none, n * 3 / 8, 300);
  EXPECT_NEAR(only_h, n * 3 / 8, 300);
  EXPECT_NEAR(only_v, n / 8, 250);
  EXPECT_NEAR(both, n / 8, 250);
  EXPECT_EQ(flip.stream().draws(), static_cast<uint64_t>(n));
}

TEST(RandomFlip, Errors) {
  expect_error<ValueError>([] { RandomFlip({.horizontal = 1.5}); }, {"RandomFlip", "horizontal", "1.5"});
  expect_error<ValueError>([] { RandomFlip({.vertical = -0.1}); }, {"RandomFlip", "vertical", "-0.1"});
  RandomFlip flip;
  expect_error<ShapeError>([&] { flip.apply(Array::zeros(Shape{1, 2, 3, 4})); },
                           {"RandomFlip", "3-dimensional", "(1, 2, 3, 4)"});
  expect_error<DtypeError>([&] { flip.apply(Array::zeros(Shape{1, 2, 2}, Dtype::int64)); }, {"RandomFlip", "int64"});
  expect_error<ValueError>([&] { flip(Example{}); }, {"RandomFlip", "example is empty"});
}

// ---- Normalize ------------------------------------------------------------------------------------

TEST(Normalize, Values) {
  // Channel 0: (x - 1) / 2; channel 1: (x + 1) / 0.5.
  const Array x = Array::from_vector(std::vector<double>{1, 3, 5, 7, 0, 1, -1, 2}, Shape{2, 2, 2});
  Normalize norm({1.0, -1.0}, {2.0, 0.5});
  const std::vector<double> want{0, 1, 2, 3, 2, 4, 0, 6};
  EXPECT_EQ(norm.apply(x).to_vector<double>(), want);
  EXPECT_EQ(norm.apply(x.astype(Dtype::float32)).to_vector<float>(), std::vector<float>(want.begin(), want.end()));
  const Array half = norm.apply(x.astype(Dtype::float16));
  EXPECT_EQ(half.dtype(), Dtype::float16);
  EXPECT_EQ(half.to_vector<double>(), want);
  // Strided input, against the formula.
  const Array strided = test::randn(Shape{2, 5, 3}, Dtype::float64).transpose(Shape{0, 2, 1});
  const Array got = norm.apply(strided);
  ASSERT_EQ(got.shape(), (Shape{2, 3, 5}));
  for (int64_t c = 0; c < 2; ++c) {
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t j = 0; j < 5; ++j) {
        EXPECT_DOUBLE_EQ(got.at<double>({c, i, j}),
                         (strided.at<double>({c, i, j}) - norm.mean()[c]) / norm.stddev()[c]);
      }
    }
  }
}

TEST(Normalize, Errors) {
  expect_error<ValueError>([] { Normalize({0.5, 0.5}, {1.0}); }, {"Normalize", "[0.5, 0.5]", "[1]"});
  expect_error<ValueError>([] { Normalize({}, {}); }, {"Normalize", "one mean"});
  expect_error<ValueError>([] { Normalize({0.5}, {0.0}); }, {"Normalize", "stddev[0] = 0", "> 0"});
  expect_error<ValueError>([] { Normalize({0.5, 0.1}, {1.0, -2.0}); }, {"Normalize", "stddev[1] = -2"});
  expect_error<ValueError>([] { Normalize({std::nan("")}, {1.0}); }, {"Normalize", "mean[0]", "not finite"});
  Normalize norm({0.5}, {0.25});
  expect_error<ShapeError>([&] { norm.apply(Array::zeros(Shape{3, 4, 4})); },
                           {"Normalize", "(3, 4, 4)", "3 channels", "1 means"});
  expect_error<ShapeError>([&] { norm.apply(Array::zeros(Shape{16})); }, {"Normalize", "3-dimensional", "(16,)"});
  expect_error<DtypeError>([&] { norm.apply(Array::zeros(Shape{1, 4, 4}, Dtype::int32)); }, {"Normalize", "int32"});
  expect_error<ValueError>([&] { norm(Example{}); }, {"Normalize", "example is empty"});
}

// ---- compose --------------------------------------------------------------------------------------

TEST(Compose, AppliesInOrder) {
  const Array x = ramp(1, 2, 3);
  const Array label = Array::scalar(7.0, Dtype::int32);
  Transform t = compose({RandomFlip({.horizontal = 1.0}), Normalize({1.0}, {2.0})});
  const Example out = t({x, label});
  ASSERT_EQ(out.size(), 2u);
  // ramp rows [1 2 3], [4 5 6] mirrored, then (x - 1) / 2.
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{1.0f, 0.5f, 0.0f, 2.5f, 2.0f, 1.5f}));
  EXPECT_TRUE(out[1].shares_storage(label));
  // The empty composition is the identity.
  EXPECT_TRUE(compose({})({x, label})[0].shares_storage(x));
  expect_error<ValueError>([] { compose({RandomFlip(), Transform(), RandomFlip()}); }, {"compose", "transform 1"});
}

// ---- through TransformDataset and MultithreadIterator ---------------------------------------------

TEST(ImageTransforms, WorkerThreadsGiveValidShiftsOfTheSource) {
  // Example i: a (2, 6, 6) image of values i * 1000 + 1, ..., and its label i.
  const int64_t n = 24, c = 2, h = 6, w = 6;
  std::vector<float> pixels;
  std::vector<int32_t> labels;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < c * h * w; ++k) pixels.push_back(static_cast<float>(i * 1000 + k + 1));
    labels.push_back(static_cast<int32_t>(i));
  }
  auto base = std::make_shared<TupleDataset>(
      std::vector<Array>{Array::from_vector(pixels, Shape{n, c, h, w}), Array::from_vector(labels, Shape{n})});
  RandomCrop crop({.pad = 2, .seed = 1});
  RandomFlip flip({.seed = 1});
  auto augmented = std::make_shared<TransformDataset>(base, compose({crop, flip}));
  iterators::MultithreadIterator it(augmented, 5, {.n_threads = 3, .n_prefetch = 2});
  std::set<std::tuple<int64_t, int64_t, bool>> seen;
  int64_t read = 0;
  for (int step = 0; step < 40; ++step) {
    const auto batch = it.next();
    ASSERT_TRUE(batch);
    for (const Example& ex : *batch) {
      const int64_t i = ex[1].item<int64_t>();
      const Array source = base->get_example(i)[0];
      bool found = false;
      for (int64_t top = 0; top <= 4 && !found; ++top) {
        for (int64_t left = 0; left <= 4 && !found; ++left) {
          for (bool fh : {false, true}) {
            if (!found && array_equal(ex[0], crop_and_flip(source, 2, top, left, h, w, fh))) {
              seen.insert({top, left, fh});
              found = true;
            }
          }
        }
      }
      ASSERT_TRUE(found) << "example " << i << ":\n" << ex[0];
      ++read;
    }
  }
  EXPECT_GT(seen.size(), 30u);  // of the 50 (offset, flip) outcomes, over 200 draws
  // Inside a TransformDataset the draws are keyed by (epoch, index): the shared sequence is unused.
  EXPECT_GT(read, 0);
  EXPECT_EQ(crop.stream().draws(), 0u);
  EXPECT_EQ(flip.stream().draws(), 0u);
}

TEST(ImageTransforms, SingleThreadedRunsRepeat) {
  auto base = std::make_shared<TupleDataset>(std::vector<Array>{ramp(10, 4, 4).reshape(Shape{10, 1, 4, 4})});
  auto run = [&] {
    auto ds = std::make_shared<TransformDataset>(
        base, compose({RandomCrop({.pad = 1, .seed = 2}), RandomFlip({.seed = 2})}));
    iterators::MultithreadIterator it(ds, 4, {.seed = 3, .n_threads = 1});
    std::vector<float> values;
    for (int step = 0; step < 10; ++step) {
      const auto batch = it.next();
      for (const Example& ex : *batch) {
        const auto v = ex[0].to_vector<float>();
        values.insert(values.end(), v.begin(), v.end());
      }
    }
    return values;
  };
  EXPECT_EQ(run(), run());
}

}  // namespace
}  // namespace rensa::datasets::transforms
