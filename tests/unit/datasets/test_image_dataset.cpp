// Image-file datasets (pairs files, file lists, class folders, zip archives) and the keyed random
// draws of their transforms: the same batches whatever the number of worker threads, and after a
// resume.
#include <filesystem>
#include <fstream>

#include "rensa/datasets/example_key.h"
#include "rensa/datasets/image_dataset.h"
#include "rensa/datasets/image_transforms.h"
#include "rensa/datasets/transform_dataset.h"
#include "rensa/iterators/multithread_iterator.h"
#include "rensa/iterators/serial_iterator.h"
#include "rensa/serializers/npz.h"
#include "src/serializers/npz_internal.h"
#include "tests/unit/serializers/npz_test_util.h"
#include "tests/unit/test_util.h"

namespace rensa::datasets {
namespace {

using test::expect_error;
namespace T = transforms;

std::string fixture(const std::string& name) { return std::string(RENSA_TEST_IMAGES_DIR) + "/" + name; }

/// A directory of n small RGB PNGs img<k>.png whose pixel (0, 0) channel 0 is k, and a pairs file.
struct ImageDir {
  test::TempDir dir;
  std::string root() const { return dir.path().string(); }
  explicit ImageDir(int n, int64_t h = 20, int64_t w = 24) {
    std::ofstream pairs(root() + "/pairs.txt");
    for (int k = 0; k < n; ++k) {
      Array img = Array::full(Shape{3, h, w}, 100.0 + k, Dtype::uint8);
      img.data<uint8_t>()[0] = static_cast<uint8_t>(k);
      for (int64_t i = 0; i < h * w; ++i) img.data<uint8_t>()[h * w + i] = static_cast<uint8_t>(i % 251);
      write_image(root() + "/img" + std::to_string(k) + ".png", img);
      pairs << "img" << k << ".png " << (k % 3) << "\n";
    }
  }
};

TEST(LabeledImageDataset, ReadsPairsFilesAsChainer) {
  ImageDir d(5);
  LabeledImageDataset ds(d.root() + "/pairs.txt", {.root = d.root()});
  ASSERT_EQ(ds.size(), 5);
  const Example ex = ds.get_example(4);
  ASSERT_EQ(ex.size(), 2u);
  EXPECT_EQ(ex[0].shape(), (Shape{3, 20, 24}));
  EXPECT_EQ(ex[0].dtype(), Dtype::float32);  // Chainer's default
  EXPECT_EQ(ex[0].to_vector<float>()[0], 4.0f);
  EXPECT_EQ(ex[1].ndim(), 0);
  EXPECT_EQ(ex[1].dtype(), Dtype::int32);
  EXPECT_EQ(ex[1].item<int32_t>(), 1);
  LabeledImageDataset u8(d.root() + "/pairs.txt", {.root = d.root(), .dtype = Dtype::uint8, .label_dtype = Dtype::int64});
  EXPECT_EQ(u8.get_example(2)[0].dtype(), Dtype::uint8);
  EXPECT_EQ(u8.get_example(2)[1].item<int64_t>(), 2);
  EXPECT_EQ(u8.path(1), d.root() + "/img1.png");
  expect_error<IndexError>([&] { ds.get_example(5); }, {"LabeledImageDataset", "5", "size 5"});
  // An image that cannot be read names its file.
  LabeledImageDataset missing({{"nope.png", 0}}, {.root = d.root()});
  expect_error<IOError>([&] { missing.get_example(0); }, {"nope.png", "cannot open"});
}

TEST(LabeledImageDataset, PairsFileErrorsNameTheLine) {
  test::TempDir dir;
  const std::string p = dir.path().string() + "/pairs.txt";
  std::ofstream(p) << "a.png 0\n\nb.png 1 extra\n";
  expect_error<ValueError>([&] { read_pairs_file(p); }, {"read_pairs_file", "pairs.txt", "line 3", "3 fields"});
  std::ofstream(p) << "a.png zero\n";
  expect_error<ValueError>([&] { read_pairs_file(p); }, {"line 1", "'zero' is not an integer"});
  expect_error<IOError>([&] { read_pairs_file(p + ".none"); }, {"read_pairs_file", "cannot open"});
  std::ofstream(p) << "a.png 0\n\n  b.png\t7  \n";
  const auto pairs = read_pairs_file(p);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[1], (std::pair<std::string, int64_t>{"b.png", 7}));
  expect_error<ValueError>([&] { LabeledImageDataset(std::vector<std::pair<std::string, int64_t>>{}, {.label_dtype = Dtype::float32}); },
                           {"LabeledImageDataset", "label_dtype"});
}

TEST(LabeledImageDataset, SkipsUnreadableImagesWhenAsked) {
  ImageDir d(3);
  std::ofstream(d.root() + "/img1.png") << "truncated";
  LabeledImageDataset strict(d.root() + "/pairs.txt", {.root = d.root()});
  expect_error<IOError>([&] { strict.get_example(1); }, {"img1.png", "not a JPEG or PNG"});
  LabeledImageDataset lenient(d.root() + "/pairs.txt", {.root = d.root(), .skip_unreadable = true});
  const Example ex = lenient.get_example(1);  // replaced by example 2, label and all
  EXPECT_EQ(ex[0].to_vector<float>()[0], 2.0f);
  EXPECT_EQ(ex[1].item<int32_t>(), 2);
  EXPECT_EQ(lenient.skipped_count(), 1);
}

TEST(ImageDataset, FileListsAndFolders) {
  ImageDir d(4);
  std::ofstream(d.root() + "/list.txt") << "img0.png\nimg3.png\n";
  auto list = ImageDataset::from_file(d.root() + "/list.txt", {.root = d.root(), .dtype = Dtype::uint8});
  ASSERT_EQ(list->size(), 2);
  EXPECT_EQ(list->get_example(1).size(), 1u);
  EXPECT_EQ(list->get_example(1)[0].to_vector<uint8_t>()[0], 3);
  // ROOT/CLASS/FILE: classes sorted, files sorted, other files ignored.
  test::TempDir folder;
  const std::string root = folder.path().string();
  for (const char* c : {"zebra", "apple"}) std::filesystem::create_directories(root + "/" + c + "/sub");
  std::filesystem::copy_file(fixture("rgb.png"), root + "/zebra/b.png");
  std::filesystem::copy_file(fixture("rgb.jpg"), root + "/zebra/sub/a.JPG");
  std::filesystem::copy_file(fixture("gray.png"), root + "/apple/x.png");
  std::ofstream(root + "/apple/notes.txt") << "not an image";
  const ImageFolder f = image_folder(root, {.color = ImageColor::rgb});
  EXPECT_EQ(f.classes, (std::vector<std::string>{"apple", "zebra"}));
  ASSERT_EQ(f.dataset->size(), 3);
  EXPECT_EQ(f.dataset->pairs()[0], (std::pair<std::string, int64_t>{"apple/x.png", 0}));
  EXPECT_EQ(f.dataset->pairs()[1].second, 1);
  EXPECT_EQ(f.dataset->get_example(0)[0].shape(), (Shape{3, 12, 16}));
  expect_error<IOError>([&] { image_folder(root + "/none"); }, {"image_folder", "not a directory"});
  expect_error<IOError>([&] { image_folder(root + "/apple/sub"); }, {"image_folder", "no class directories"});
}

TEST(ZippedImageDataset, ReadsArchivesWithoutExtracting) {
  test::TempDir dir;
  const std::string zip = dir.path().string() + "/images.zip";
  {
    serializers::detail::AtomicFileWriter out(zip, "test");
    serializers::detail::write_zip_to(out,
                                      {{"train/a.png", read_file_bytes(fixture("rgb.png"))},
                                       {"train/b.jpg", read_file_bytes(fixture("gray.jpg"))},
                                       {"bad.png", "garbage"}},
                                      "test");
    out.commit();
  }
  ZippedImageDataset ds(zip, {.dtype = Dtype::uint8});
  ASSERT_EQ(ds.size(), 3);
  EXPECT_EQ(ds.names()[1], "train/b.jpg");
  EXPECT_TRUE(array_equal(ds.get_example(0)[0], read_image(fixture("rgb.png"), {.dtype = Dtype::uint8})));
  expect_error<IOError>([&] { ds.get_example(2); }, {"images.zip", "bad.png", "not a JPEG or PNG"});
  expect_error<IOError>([&] { ds.get_image("none.png"); }, {"images.zip", "no entry", "none.png"});
  LabeledZippedImageDataset labeled(zip, {{"train/b.jpg", 7}, {"train/a.png", 1}}, {.dtype = Dtype::uint8});
  EXPECT_EQ(labeled.get_example(0)[0].shape(), (Shape{1, 12, 16}));
  EXPECT_EQ(labeled.get_example(0)[1].item<int32_t>(), 7);
  MultiZippedImageDataset multi({zip, zip});
  EXPECT_EQ(multi.size(), 6);
  EXPECT_EQ(multi.get_example(4)[0].shape(), (Shape{1, 12, 16}));
  std::ofstream(dir.path().string() + "/not.zip") << "not a zip";
  expect_error<IOError>([&] { ZippedImageDataset bad(dir.path().string() + "/not.zip"); }, {"not.zip", "zip"});
}

/// The augmented batches of `epochs` epochs of a shuffled image dataset read with `threads`
/// workers (0: SerialIterator).
std::vector<Array> augmented_batches(const std::string& pairs, const std::string& root, int threads, int epochs) {
  auto base = std::make_shared<LabeledImageDataset>(pairs, ImageDatasetOptions{.root = root, .dtype = Dtype::uint8});
  auto ds = std::make_shared<TransformDataset>(
      base, T::compose({T::RandomResizedCrop({.size = {8, 8}, .seed = 5}), T::RandomFlip({.seed = 5}),
                        T::ColorJitter({.seed = 5})}));
  std::unique_ptr<iterators::Iterator> it;
  if (threads == 0) {
    it = std::make_unique<iterators::SerialIterator>(ds, 4, iterators::SerialIteratorOptions{.seed = 3});
  } else {
    it = std::make_unique<iterators::MultithreadIterator>(
        ds, 4, iterators::MultithreadIteratorOptions{.seed = 3, .n_threads = threads, .stack = true});
  }
  std::vector<Array> out;
  while (it->epoch() < epochs) out.push_back(it->next_arrays()->at(0));
  return out;
}

TEST(ImageAugmentation, BatchesDoNotDependOnTheNumberOfWorkers) {
  ImageDir d(10);
  const std::string pairs = d.root() + "/pairs.txt";
  const std::vector<Array> serial = augmented_batches(pairs, d.root(), 0, 2);
  for (const int threads : {1, 3}) {
    const std::vector<Array> multi = augmented_batches(pairs, d.root(), threads, 2);
    ASSERT_EQ(multi.size(), serial.size());
    for (std::size_t k = 0; k < serial.size(); ++k) EXPECT_TRUE(array_equal(serial[k], multi[k])) << "batch " << k;
  }
  // The same example is augmented differently in another epoch.
  auto base = std::make_shared<ImageDataset>(std::vector<std::string>{"img0.png"},
                                             ImageDatasetOptions{.root = d.root(), .dtype = Dtype::uint8});
  TransformDataset ds(base, T::RandomResizedCrop({.size = {8, 8}, .seed = 1}));
  Array e0, e1, e0_again;
  {
    const EpochScope epoch(0);
    e0 = ds.get_example(0)[0];
    e0_again = ds.get_example(0)[0];
  }
  {
    const EpochScope epoch(1);
    e1 = ds.get_example(0)[0];
  }
  EXPECT_TRUE(array_equal(e0, e0_again));
  EXPECT_FALSE(array_equal(e0, e1));
}

TEST(ImageAugmentation, AResumedIteratorContinuesTheSameBatches) {
  ImageDir d(10);
  auto base = std::make_shared<LabeledImageDataset>(d.root() + "/pairs.txt",
                                                    ImageDatasetOptions{.root = d.root(), .dtype = Dtype::uint8});
  auto ds = std::make_shared<TransformDataset>(base, T::RandomResizedCrop({.size = {6, 6}, .seed = 9}));
  iterators::MultithreadIterator a(ds, 3, {.seed = 4, .n_threads = 2, .stack = true});
  for (int k = 0; k < 5; ++k) a.next_arrays();
  serializers::DictionarySerializer saver;
  a.serialize(saver);
  std::vector<Array> expected;
  for (int k = 0; k < 6; ++k) expected.push_back(a.next_arrays()->at(0));
  iterators::MultithreadIterator b(ds, 3, {.seed = 4, .n_threads = 3, .stack = true});
  serializers::DictionaryDeserializer loader(saver.target(), "test");
  b.serialize(loader);
  for (int k = 0; k < 6; ++k) EXPECT_TRUE(array_equal(b.next_arrays()->at(0), expected[static_cast<std::size_t>(k)]));
}

TEST(ImageAugmentation, WorkerErrorsNameTheIndexAndTheFile) {
  ImageDir d(6);
  std::ofstream(d.root() + "/img4.png") << "broken";
  auto base = std::make_shared<LabeledImageDataset>(d.root() + "/pairs.txt", ImageDatasetOptions{.root = d.root()});
  iterators::MultithreadIterator it(base, 6, {.shuffle = false, .n_threads = 2, .stack = true});
  expect_error<IOError>([&] { it.next_arrays(); }, {"MultithreadIterator", "dataset index 4", "img4.png"});
}

}  // namespace
}  // namespace rensa::datasets
