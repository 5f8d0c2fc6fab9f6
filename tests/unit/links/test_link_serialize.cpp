// Link::serialize through DictionarySerializer / DictionaryDeserializer and .npz files.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rensa/links/classifier.h"
#include "rensa/links/linear.h"
#include "rensa/links/link.h"
#include "rensa/serializers/npz.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
namespace L = rensa::links;
namespace S = rensa::serializers;
using rensa::test::expect_error;
using rensa::test::randn;

namespace {

struct Block : Chain {
  L::Linear l1{4, {.seed = 1}}, l2{3, {.seed = 2}};
  Block() {
    add_link("l1", l1);
    add_link("l2", l2);
    add_persistent("steps", Array::zeros({}, Dtype::int64));
    add_persistent("mean", Array::zeros({3}));
  }
  Variable forward(const Variable& x) override { return l2(F::relu(l1(x))); }
  using Link::forward;
};

struct Net : Chain {
  Block block;
  ChainList heads;
  Net() {
    heads.append(std::make_shared<L::Linear>(3, 2, L::LinearOptions{.seed = 3}));
    add_link("block", block);
    add_link("heads", heads);
  }
  Variable forward(const Variable& x) override { return heads[0](block(x)); }
  using Link::forward;
};

std::vector<std::string> keys(const std::map<std::string, Array>& m) {
  std::vector<std::string> out;
  for (const auto& [k, v] : m) out.push_back(k);
  return out;
}

// A copy of the saved values (the serializer aliases the link's arrays).
std::map<std::string, Array> save(Link& link) {
  S::DictionarySerializer s;
  link.serialize(s);
  std::map<std::string, Array> out;
  for (const auto& [k, v] : s.target()) out[k] = v.copy();
  return out;
}

void expect_same_params(const Link& a, const Link& b) {
  const auto pa = a.namedparams(), pb = b.namedparams();
  ASSERT_EQ(pa.size(), pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    EXPECT_EQ(pa[i].first, pb[i].first);
    EXPECT_TRUE(array_equal(pa[i].second.array().to(Device::cpu()), pb[i].second.array().to(Device::cpu())))
        << pa[i].first;
  }
}

}  // namespace

TEST(LinkSerialize, RoundTripThroughDictionaries) {
  Net a;
  Variable x(randn({2, 5}, Dtype::float32, 1));
  a(x);  // initialize the lazy parameters
  a.block.persistent("steps").fill(12);
  a.block.persistent("mean").assign(Array::from_vector<float>({1, 2, 3}));
  const auto saved = save(a);
  EXPECT_EQ(keys(saved), (std::vector<std::string>{"block/l1/W", "block/l1/b", "block/l2/W", "block/l2/b",
                                                   "block/mean", "block/steps", "heads/0/W", "heads/0/b"}));

  Net b;
  b(Variable(randn({2, 5}, Dtype::float32, 2)));
  for (const auto& [path, v] : b.namedparams()) v.array().fill(-1.0);
  const Array w_before = b.block.l1.W().array();
  S::DictionaryDeserializer d(saved, "memory");
  b.serialize(d);
  expect_same_params(a, b);
  EXPECT_EQ(b.block.persistent("steps").item<int64_t>(), 12);
  EXPECT_EQ(b.block.persistent("mean").to_vector<float>(), (std::vector<float>{1, 2, 3}));
  // Loaded into the parameters' own memory.
  EXPECT_TRUE(b.block.l1.W().array().shares_storage(w_before));
  EXPECT_TRUE(allclose(a(x).array(), b(x).array()));
}

TEST(LinkSerialize, UninitializedParametersAreSkippedOnSaveAndAdoptedOnLoad) {
  Net lazy;
  EXPECT_EQ(keys(save(lazy)), (std::vector<std::string>{"block/l1/b", "block/l2/b", "block/mean", "block/steps",
                                                        "heads/0/W", "heads/0/b"}));
  Net trained;
  Variable x(randn({2, 7}, Dtype::float32, 3));
  trained(x);
  auto saved = save(trained);
  Net fresh;
  const Variable W = fresh.block.l1.W();
  ASSERT_TRUE(W.array().is_null());
  S::DictionaryDeserializer d(saved, "memory");
  fresh.serialize(d);
  ASSERT_FALSE(W.array().is_null());
  EXPECT_TRUE(fresh.block.l1.W().is(W));
  EXPECT_EQ(fresh.block.l1.in_size(), 7);
  EXPECT_FALSE(W.array().shares_storage(saved.at("block/l1/W")));
  expect_same_params(trained, fresh);
  EXPECT_TRUE(allclose(trained(x).array(), fresh(x).array()));
  // On another device the adopted array moves there.
  Net on_ref;
  on_ref.to_device(Device::reference());
  S::DictionaryDeserializer d2(saved, "memory");
  on_ref.serialize(d2);
  EXPECT_EQ(on_ref.block.l1.W().device(), Device::reference());
  EXPECT_EQ(on_ref.block.persistent("mean").device(), Device::reference());
  expect_same_params(trained, on_ref);
}

TEST(LinkSerialize, MissingKeysAndShapeMismatch) {
  Net a;
  a(Variable(randn({2, 5}, Dtype::float32, 1)));
  auto saved = save(a);
  saved.erase("heads/0/b");
  Net b;
  b(Variable(randn({2, 5}, Dtype::float32, 1)));
  S::DictionaryDeserializer strict(saved, "model.npz");
  expect_error<IOError>([&] { b.serialize(strict); }, {"model.npz", "heads/0/b"});
  // Non-strict: the missing value keeps its own.
  Net c;
  c(Variable(randn({2, 5}, Dtype::float32, 1)));
  c.heads[0].param("b").array().fill(5.0);
  S::DictionaryDeserializer lenient(saved, "model.npz", false);
  c.serialize(lenient);
  EXPECT_EQ(c.heads[0].param("b").array().to_vector<float>(), (std::vector<float>{5.0f, 5.0f}));
  EXPECT_TRUE(array_equal(c.block.l1.W().array(), a.block.l1.W().array()));
  // A parameter of another shape.
  Net wide;
  wide(Variable(randn({2, 6}, Dtype::float32, 1)));
  S::DictionaryDeserializer d(save(a), "model.npz");
  expect_error<IOError>([&] { wide.serialize(d); }, {"model.npz", "block/l1/W", "(4, 5)", "(4, 6)"});
}

TEST(LinkSerialize, NpzFileRoundTripWithPrefix) {
  const auto dir = std::filesystem::temp_directory_path() / ("rensa_link_serialize_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "model.npz").string();

  L::Classifier model(std::make_shared<Net>());
  Variable x(randn({3, 5}, Dtype::float32, 4));
  Array t = Array::from_vector<int64_t>({0, 1, 1});
  model({x, Variable(t)});
  S::save_npz(path, model);
  const auto stored = S::read_npz(path);
  EXPECT_TRUE(stored.contains("predictor/block/l1/W"));
  EXPECT_TRUE(stored.contains("predictor/block/steps"));

  L::Classifier loaded(std::make_shared<Net>());
  S::load_npz(path, loaded);
  expect_same_params(model, loaded);
  // A sub-tree: the predictor alone.
  Net predictor;
  S::load_npz(path, predictor, "predictor/");
  expect_same_params(model.predictor(), predictor);
  std::filesystem::remove_all(dir);
}
