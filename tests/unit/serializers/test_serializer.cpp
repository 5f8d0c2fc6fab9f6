// The Serializer protocol: scalar and string helpers, child paths, and save_npz / load_npz
// through DictionarySerializer and DictionaryDeserializer.

#include <limits>

#include "rensa/serializers/npz.h"
#include "rensa/serializers/serializer.h"
#include "tests/unit/serializers/npz_test_util.h"
#include "tests/unit/test_util.h"

namespace rensa::test {
namespace {

namespace S = rensa::serializers;

// A small object tree with every kind of state.
struct Inner {
  Array w = sample({2, 3}, Dtype::float32);
  Array b = sample({3}, Dtype::float64, 1);
  void serialize(S::Serializer& s) {
    s.array("W", w);
    s.array("b", b);
  }
};

struct Outer {
  Inner l1, l2;
  Array steps = Array::zeros({}, Dtype::int64);
  double lr = 0.01;
  int64_t t = 7;
  uint64_t seed = std::numeric_limits<uint64_t>::max() - 5;
  bool done = true;
  std::string name = "model\0x";
  void serialize(S::Serializer& s) {
    l1.serialize(s.child("l1"));
    l2.serialize(s.child("/l2/"));
    s.array("steps", steps);
    s.scalar("lr", lr);
    s.scalar("t", t);
    s.scalar("seed", seed);
    s.scalar("done", done);
    s.string("name", name);
  }
};

TEST(Serializer, DictionarySerializerCollectsPathsAndTypes) {
  Outer o;
  o.name = std::string("a\0b", 3);
  S::DictionarySerializer s;
  EXPECT_FALSE(s.is_loading());
  EXPECT_EQ(s.path(), "");
  EXPECT_EQ(s.child("l1").path(), "l1/");
  EXPECT_EQ(s.child("l1").child("x").path(), "l1/x/");
  EXPECT_EQ(&s.child("l1"), &s.child("/l1/"));  // one child object per name
  o.serialize(s);
  const auto& t = s.target();
  std::vector<std::string> keys;
  for (const auto& [k, v] : t) keys.push_back(k);
  EXPECT_EQ(keys,
            (std::vector<std::string>{"done", "l1/W", "l1/b", "l2/W", "l2/b", "lr", "name", "seed", "steps", "t"}));
  EXPECT_TRUE(t.at("l1/W").shares_storage(o.l1.w));  // saving keeps handles, no copies
  EXPECT_EQ(t.at("lr").dtype(), Dtype::float64);
  EXPECT_EQ(t.at("lr").ndim(), 0);
  EXPECT_EQ(t.at("t").dtype(), Dtype::int64);
  EXPECT_EQ(t.at("seed").dtype(), Dtype::int64);
  EXPECT_EQ(t.at("seed").item<int64_t>(), -6);
  EXPECT_EQ(t.at("done").dtype(), Dtype::bool_);
  EXPECT_EQ(t.at("name").dtype(), Dtype::uint8);
  EXPECT_EQ(t.at("name").shape(), (Shape{3}));
  EXPECT_EQ(t.at("name").to_vector<int>(), (std::vector<int>{'a', 0, 'b'}));
}

TEST(Serializer, NullArraysAreNotSaved) {
  S::DictionarySerializer s;
  Array none;
  s.child("lazy").array("W", none);
  EXPECT_TRUE(s.target().empty());
}

TEST(Serializer, SaveLoadRoundTripKeepsStorage) {
  TempDir dir;
  Outer saved;
  saved.lr = 0.125;
  saved.t = -42;
  saved.done = false;
  saved.name = std::string("snap\0shot \xc3\xa9", 12);
  saved.steps.fill(99);
  S::save_npz(dir.file("o.npz"), saved);

  Outer loaded;
  loaded.l1.w = Array::zeros({2, 3});
  loaded.l2.b = Array::zeros({3}, Dtype::float64);
  const Array w_view = loaded.l1.w.index({int64_t{1}});  // aliases row 1 of l1.w
  const auto w_storage = loaded.l1.w.storage();
  loaded.seed = 0;
  loaded.name.clear();
  S::load_npz(dir.file("o.npz"), loaded);
  EXPECT_EQ(loaded.l1.w.storage(), w_storage);  // loaded in place
  EXPECT_TRUE(same_array(loaded.l1.w, saved.l1.w));
  EXPECT_TRUE(same_array(w_view, saved.l1.w.index({int64_t{1}})));
  EXPECT_TRUE(same_array(loaded.l2.b, saved.l2.b));
  EXPECT_EQ(loaded.steps.item<int64_t>(), 99);
  EXPECT_EQ(loaded.lr, 0.125);
  EXPECT_EQ(loaded.t, -42);
  EXPECT_EQ(loaded.seed, saved.seed);
  EXPECT_FALSE(loaded.done);
  EXPECT_EQ(loaded.name, saved.name);
}

TEST(Serializer, EmptyStringRoundTrips) {
  S::DictionarySerializer s;
  std::string empty;
  s.string("e", empty);
  S::DictionaryDeserializer d(s.target(), "mem.npz");
  std::string back = "not empty";
  d.string("e", back);
  EXPECT_EQ(back, "");
}

TEST(Serializer, LoadConvertsDtypeAndAdoptsIntoNull) {
  TempDir dir;
  const Array stored = sample({2, 2}, Dtype::float64);
  S::write_npz(dir.file("x.npz"), {{"a/x", stored}, {"a/y", stored}, {"a/z", stored}});
  S::DictionaryDeserializer d(S::read_npz(dir.file("x.npz")), dir.file("x.npz"));
  EXPECT_TRUE(d.is_loading());
  Array f32 = Array::zeros({2, 2}, Dtype::float32);
  Array bf16 = Array::zeros({2, 2}, Dtype::bfloat16);
  Array null;
  d.child("a").array("x", f32);
  d.child("a").array("/y", bf16);
  d.child("a").array("z", null);
  EXPECT_TRUE(same_array(f32, stored.astype(Dtype::float32)));
  EXPECT_TRUE(same_array(bf16, stored.astype(Dtype::bfloat16)));
  ASSERT_FALSE(null.is_null());
  EXPECT_TRUE(same_array(null, stored));
  EXPECT_TRUE(d.contains("a/x"));
  EXPECT_TRUE(d.child("a").contains("x"));
  EXPECT_FALSE(d.child("a").contains("w"));
}

TEST(Serializer, BFloat16ParametersRoundTripThroughFloat32) {
  TempDir dir;
  struct P {
    Array w;
    void serialize(S::Serializer& s) { s.array("w", w); }
  };
  P a{Array::from_vector(std::vector<float>{0.5f, -3.0f, 1e-2f}).astype(Dtype::bfloat16)};
  S::save_npz(dir.file("p.npz"), a);
  EXPECT_EQ(S::read_npz(dir.file("p.npz")).at("w").dtype(), Dtype::float32);
  P b{Array::zeros({3}, Dtype::bfloat16)};
  S::load_npz(dir.file("p.npz"), b);
  EXPECT_TRUE(same_array(b.w, a.w));
}

TEST(Serializer, LoadIntoReferenceDeviceArray) {
  const Array stored = sample({3}, Dtype::float32);
  S::DictionaryDeserializer d({{"w", stored}}, "mem.npz");
  Array target = Array::zeros({3}, Dtype::float32, Device::reference());
  d.array("w", target);
  EXPECT_EQ(target.device(), Device::reference());
  EXPECT_TRUE(same_array(target.to(Device::cpu()), stored));
}

TEST(Serializer, MissingKeyAndShapeMismatchNameFileAndKey) {
  TempDir dir;
  Outer saved;
  S::save_npz(dir.file("o.npz"), saved);
  S::DictionaryDeserializer d(S::read_npz(dir.file("o.npz")), dir.file("o.npz"));
  Array a = Array::zeros({3, 2});
  expect_error<IOError>([&] { d.child("l1").array("W", a); },
                        {"o.npz", "key 'l1/W'", "shape (2, 3) in the file", "target has shape (3, 2)"});
  Array b = Array::zeros({1});
  expect_error<IOError>([&] { d.child("l3").array("W", b); }, {"o.npz", "key 'l3/W' not found"});
  double lr = 0;
  expect_error<IOError>([&] { d.child("opt").scalar("lr", lr); }, {"o.npz", "key 'opt/lr' not found"});
  // A scalar whose stored array is not 0-d.
  double w = 0;
  expect_error<IOError>([&] { d.child("l1").scalar("b", w); }, {"o.npz", "key 'l1/b'", "(3,)", "()"});
  std::string s;
  expect_error<IOError>([&] { d.child("l1").string("W", s); },
                        {"Serializer::string", "l1/W", "(2, 3)", "float32", "not a 1-d uint8 array"});
}

TEST(Serializer, NonStrictLoadSkipsMissingKeys) {
  S::DictionaryDeserializer d({{"present", Array::full({2}, 3.0)}}, "mem.npz", /*strict=*/false);
  Array a = Array::zeros({2});
  Array missing = Array::full({2}, 5.0);
  Array null;
  double lr = 0.5;
  std::string name = "keep";
  d.array("present", a);
  d.array("missing", missing);
  d.array("also_missing", null);
  d.scalar("lr", lr);
  d.string("name", name);
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{3, 3}));
  EXPECT_EQ(missing.to_vector<float>(), (std::vector<float>{5, 5}));
  EXPECT_TRUE(null.is_null());
  EXPECT_EQ(lr, 0.5);
  EXPECT_EQ(name, "keep");
}

TEST(Serializer, LoadNpzWithPathPrefix) {
  TempDir dir;
  struct Snapshot {
    Outer model;
    void serialize(S::Serializer& s) { model.serialize(s.child("updater").child("model:main")); }
  } snap;
  snap.model.l2.w.fill(4);
  snap.model.t = 11;
  S::save_npz(dir.file("snapshot"), snap);  // no extension added
  EXPECT_TRUE(std::filesystem::exists(dir.file("snapshot")));
  EXPECT_EQ(S::read_npz(dir.file("snapshot")).count("updater/model:main/l2/W"), 1u);
  Outer model;
  model.t = 0;
  S::load_npz(dir.file("snapshot"), model, "updater/model:main/");
  EXPECT_EQ(model.t, 11);
  EXPECT_EQ(model.l2.w.to_vector<float>(), std::vector<float>(6, 4.0f));
  Outer other;
  expect_error<IOError>([&] { S::load_npz(dir.file("snapshot"), other, "updater/model:other/"); },
                        {"snapshot", "key 'updater/model:other/l1/W' not found"});
}

}  // namespace
}  // namespace rensa::test
