// Link, Chain, ChainList and Sequential: registration, paths, gradients, copies and devices.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "rensa/links/linear.h"
#include "rensa/links/link.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
namespace L = rensa::links;
using rensa::test::expect_error;

namespace {

std::vector<std::string> paths(const Link& link, bool include_uninit = true) {
  std::vector<std::string> out;
  for (const auto& [path, v] : link.namedparams(include_uninit)) out.push_back(path);
  return out;
}

Array filled(const Shape& shape, double value) { return Array::full(shape, value, Dtype::float32); }

// A link with two parameters and a persistent value.
struct Plain : Link {
  Plain() {
    add_param("W", filled({2, 3}, 1.0));
    add_param("b", filled({2}, 2.0));
    add_persistent("count", Array::zeros({}, Dtype::int64));
  }
};

// Chainer's canonical example of nesting: params of the chain itself come before its children.
struct Inner : Chain {
  Plain a, b;
  Inner() {
    add_param("scale", filled({1}, 3.0));
    add_link("a", a);
    add_link("b", b);
  }
};

struct Outer : Chain {
  Inner in1;
  std::shared_ptr<Plain> p = std::make_shared<Plain>();
  Outer() {
    add_link("in1", in1);
    add_link("p", p);
  }
};

struct Mlp : Chain {
  L::Linear l1{4}, l2{3};
  Mlp() {
    add_link("l1", l1);
    add_link("l2", l2);
  }
  Variable forward(const Variable& x) override { return l2(F::relu(l1(x))); }
  using Link::forward;
};

}  // namespace

TEST(Link, PlainLinkPathsAndAccess) {
  Plain p;
  EXPECT_EQ(paths(p), (std::vector<std::string>{"/W", "/b"}));
  EXPECT_EQ(p.params().size(), 2u);
  EXPECT_TRUE(p.param("W").requires_grad());
  EXPECT_EQ(p.param("W").name(), "W");
  EXPECT_EQ(p.count_params(), 8);
  EXPECT_TRUE(p.children().empty());
  // param() aliases the registered variable.
  EXPECT_TRUE(p.param("W").is(p.namedparams()[0].second));
  auto persist = p.namedpersistents();
  ASSERT_EQ(persist.size(), 1u);
  EXPECT_EQ(persist[0].first, "/count");
  p.persistent("count") = Array::full({}, 5.0, Dtype::int64);
  EXPECT_EQ(p.namedpersistents()[0].second->item<int64_t>(), 5);
  auto links = p.namedlinks();
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0].first, "/");
  EXPECT_EQ(links[0].second, &p);
}

TEST(Link, NestedChainPathsDepthFirstInRegistrationOrder) {
  Outer o;
  EXPECT_EQ(paths(o), (std::vector<std::string>{"/in1/scale", "/in1/a/W", "/in1/a/b", "/in1/b/W", "/in1/b/b",
                                                "/p/W", "/p/b"}));
  std::vector<std::string> link_paths;
  for (const auto& [path, l] : o.namedlinks()) link_paths.push_back(path);
  EXPECT_EQ(link_paths, (std::vector<std::string>{"/", "/in1", "/in1/a", "/in1/b", "/p"}));
  EXPECT_EQ(o.namedlinks()[2].second, &o.in1.a);
  std::vector<std::string> persist;
  for (const auto& [path, a] : o.namedpersistents()) persist.push_back(path);
  EXPECT_EQ(persist, (std::vector<std::string>{"/in1/a/count", "/in1/b/count", "/p/count"}));
  EXPECT_EQ(&o.child("in1"), &o.in1);
  EXPECT_EQ(&o.child("p"), o.p.get());
  EXPECT_EQ(o.count_params(), 1 + 3 * 8);
  expect_error<ValueError>([&] { o.child("nope"); }, {"Chain::child", "nope"});
}

TEST(Link, ChainListNumbersChildren) {
  ChainList list;
  Plain a;
  list.append(a);
  list.append(std::make_shared<Plain>());
  EXPECT_EQ(list.size(), 2u);
  EXPECT_EQ(&list[0], &a);
  EXPECT_EQ(paths(list), (std::vector<std::string>{"/0/W", "/0/b", "/1/W", "/1/b"}));
  expect_error<IndexError>([&] { list[2]; }, {"ChainList", "2"});
  expect_error<ValueError>([&] { list.append(a); }, {"ChainList::append", "already child 0"});
  expect_error<ValueError>([&] { list.append(list); }, {"ChainList::append"});
  expect_error<ValueError>([&] { list.append(std::shared_ptr<Link>()); }, {"null"});

  // A ChainList inside a Chain.
  struct Holder : Chain {
    ChainList layers;
    Holder() {
      layers.append(std::make_shared<Plain>());
      add_link("layers", layers);
    }
  } h;
  EXPECT_EQ(paths(h), (std::vector<std::string>{"/layers/0/W", "/layers/0/b"}));
}

TEST(Link, SequentialAppliesLinksAndFunctions) {
  Sequential seq;
  auto l1 = std::make_shared<L::Linear>(3, 4, L::LinearOptions{.seed = 1});
  L::Linear l2(4, 2, {.seed = 2});
  seq.add(l1).add([](const Variable& x) { return F::relu(x); }).add(l2);
  EXPECT_EQ(seq.size(), 2u);
  EXPECT_EQ(paths(seq), (std::vector<std::string>{"/0/W", "/0/b", "/1/W", "/1/b"}));
  Variable x(rensa::test::randn({5, 3}, Dtype::float32, 7));
  Variable y = seq(x);
  Variable expected = l2(F::relu((*l1)(x)));
  EXPECT_TRUE(allclose(y.array(), expected.array()));
  // The vector forms reach the single-input forward.
  EXPECT_TRUE(allclose(seq(std::vector<Variable>{x}).array(), expected.array()));
  expect_error<ValueError>([&] { seq.add(std::function<Variable(const Variable&)>()); }, {"Sequential::add"});
  // An empty Sequential is the identity.
  Sequential empty;
  EXPECT_TRUE(empty(x).is(x));
}

TEST(Link, RegistrationErrors) {
  Plain p;
  expect_error<ValueError>([&] { p.add_param("W"); }, {"Link::add_param", "'W'", "already a parameter"});
  expect_error<ValueError>([&] { p.add_param("count"); }, {"Link::add_param", "'count'", "persistent"});
  expect_error<ValueError>([&] { p.add_persistent("b", Array()); }, {"Link::add_persistent", "'b'"});
  expect_error<ValueError>([&] { p.add_param("a/b"); }, {"Link::add_param", "'a/b'", "'/'"});
  expect_error<ValueError>([&] { p.add_param(""); }, {"Link::add_param", "empty"});
  expect_error<DtypeError>([&] { p.add_param("i", Array::zeros({2}, Dtype::int32)); }, {"Link::add_param", "int32"});
  expect_error<ValueError>([&] { p.param("nope"); }, {"Link::param", "nope"});
  expect_error<ValueError>([&] { p.persistent("nope"); }, {"Link::persistent", "nope"});

  Chain c;
  Plain child, other;
  c.add_link("x", child);
  expect_error<ValueError>([&] { c.add_link("x", other); }, {"Chain::add_link", "'x'", "already a child"});
  expect_error<ValueError>([&] { c.add_link("y", child); }, {"Chain::add_link", "already registered as 'x'"});
  expect_error<ValueError>([&] { c.add_link("a/b", other); }, {"Chain::add_link", "'/'"});
  expect_error<ValueError>([&] { c.add_link("self", c); }, {"Chain::add_link", "own child"});
  expect_error<ValueError>([&] { c.add_link("z", std::shared_ptr<Link>()); }, {"Chain::add_link", "null"});
  expect_error<ValueError>([&] { c.add_param("x"); }, {"Link::add_param", "'x'", "child"});
  c.add_param("w", filled({1}, 0.0));
  expect_error<ValueError>([&] { c.add_link("w", other); }, {"Chain::add_link", "'w'", "parameter"});

  Link plain;
  expect_error<NotImplementedError>([&] { plain(Variable(filled({1}, 0.0))); }, {"Link::forward"});
  expect_error<NotImplementedError>([&] { plain(std::vector<Variable>{filled({1}, 0.0), filled({1}, 0.0)}); },
                                    {"Link::forward", "2"});
}

TEST(Link, LazyParametersAppearAfterFirstCall) {
  Mlp m;
  EXPECT_EQ(paths(m), (std::vector<std::string>{"/l1/W", "/l1/b", "/l2/W", "/l2/b"}));
  EXPECT_EQ(paths(m, false), (std::vector<std::string>{"/l1/b", "/l2/b"}));
  EXPECT_TRUE(m.l1.W().array().is_null());
  EXPECT_EQ(m.count_params(), 4 + 3);
  m(Variable(rensa::test::randn({2, 5}, Dtype::float32)));
  EXPECT_EQ(paths(m, false), (std::vector<std::string>{"/l1/W", "/l1/b", "/l2/W", "/l2/b"}));
  EXPECT_EQ(m.l1.W().shape(), (Shape{4, 5}));
  EXPECT_EQ(m.l2.W().shape(), (Shape{3, 4}));
  EXPECT_EQ(m.count_params(), 4 * 5 + 4 + 3 * 4 + 3);
  // The registered parameter is the member's handle.
  EXPECT_TRUE(m.namedparams()[0].second.is(m.l1.W()));
}

TEST(Link, CleargradsAndZerograds) {
  Mlp m;
  Variable x(rensa::test::randn({2, 5}, Dtype::float32));
  F::sum(m(x)).backward();
  for (const auto& [path, v] : m.namedparams()) EXPECT_FALSE(v.grad().is_null()) << path;
  m.cleargrads();
  for (const auto& [path, v] : m.namedparams()) EXPECT_TRUE(v.grad().is_null()) << path;
  m.zerograds();
  for (const auto& [path, v] : m.namedparams()) {
    ASSERT_FALSE(v.grad().is_null()) << path;
    EXPECT_EQ(v.grad().shape(), v.shape());
    for (float g : v.grad().array().to_vector<float>()) EXPECT_EQ(g, 0.0f);
  }
  // zerograds skips uninitialized parameters; cleargrads includes them.
  Mlp lazy;
  lazy.zerograds();
  EXPECT_TRUE(lazy.l1.W().grad().is_null());
  EXPECT_FALSE(lazy.l1.b().grad().is_null());
  lazy.cleargrads();
  EXPECT_TRUE(lazy.l1.b().grad().is_null());
}

TEST(Link, CopyparamsCopiesIntoTheSameMemory) {
  Outer a, b;
  for (const auto& [path, v] : b.namedparams()) v.array().fill(7.0);
  b.in1.a.persistent("count").fill(3.0);
  const Array w_before = a.in1.a.param("W").array();
  a.copyparams(b);
  for (const auto& [path, v] : a.namedparams()) {
    for (float x : v.array().to_vector<float>()) EXPECT_EQ(x, 7.0f) << path;
  }
  EXPECT_TRUE(a.in1.a.param("W").array().shares_storage(w_before));
  EXPECT_FALSE(a.in1.a.param("W").array().shares_storage(b.in1.a.param("W").array()));
  EXPECT_EQ(a.in1.a.persistent("count").item<int64_t>(), 3);
  b.in1.b.persistent("count").fill(9.0);
  a.copyparams(b, /*copy_persistent=*/false);
  EXPECT_EQ(a.in1.b.persistent("count").item<int64_t>(), 0);

  // A lazy parameter adopts a copy of the initialized one.
  Mlp lazy, init;
  init(Variable(rensa::test::randn({1, 6}, Dtype::float32)));
  lazy.copyparams(init);
  ASSERT_FALSE(lazy.l1.W().array().is_null());
  EXPECT_TRUE(array_equal(lazy.l1.W().array(), init.l1.W().array()));
  EXPECT_FALSE(lazy.l1.W().array().shares_storage(init.l1.W().array()));
  // Both uninitialized: nothing to copy.
  Mlp lazy2, lazy3;
  lazy2.copyparams(lazy3);
  EXPECT_TRUE(lazy2.l1.W().array().is_null());
  // Only the source uninitialized: error.
  expect_error<ValueError>([&] { init.copyparams(lazy3); }, {"Link::copyparams", "/l1/W", "uninitialized"});
}

TEST(Link, CopyparamsAndAddgradsCheckStructure) {
  Outer a;
  Inner in;
  expect_error<ValueError>([&] { a.copyparams(in); }, {"Link::copyparams", "'/in1/scale'", "'/scale'"});
  expect_error<ValueError>([&] { a.addgrads(in); }, {"Link::addgrads", "'/in1/scale'", "'/scale'"});
  Plain p;
  struct Longer : Plain {
    Longer() { add_param("extra", filled({1}, 0.0)); }
  } longer;
  expect_error<ValueError>([&] { p.copyparams(longer); }, {"Link::copyparams", "'/extra'", "2 vs 3"});
  expect_error<ValueError>([&] { longer.copyparams(p); }, {"Link::copyparams", "this link", "'/extra'"});
  struct Wide : Link {
    Wide() {
      add_param("W", filled({2, 4}, 1.0));
      add_param("b", filled({2}, 2.0));
    }
  } wide;
  expect_error<ShapeError>([&] { p.copyparams(wide); }, {"Link::copyparams", "'/W'", "(2, 3)", "(2, 4)"});
  F::sum(wide.param("W")).backward();
  expect_error<ShapeError>([&] { p.addgrads(wide); }, {"Link::addgrads", "'/W'", "(2, 3)", "(2, 4)"});
}

TEST(Link, Addgrads) {
  Plain a, b;
  // b has gradients, a has none yet: a gets copies.
  b.param("W").set_grad(Variable(filled({2, 3}, 1.5)));
  a.addgrads(b);
  ASSERT_FALSE(a.param("W").grad().is_null());
  EXPECT_FALSE(a.param("W").grad().array().shares_storage(b.param("W").grad().array()));
  EXPECT_TRUE(a.param("b").grad().is_null());  // b's "b" had no gradient
  a.addgrads(b);
  for (float g : a.param("W").grad().array().to_vector<float>()) EXPECT_EQ(g, 3.0f);
  // b unchanged.
  for (float g : b.param("W").grad().array().to_vector<float>()) EXPECT_EQ(g, 1.5f);
  // A gradient of another dtype or device is converted.
  Plain c;
  c.to_device(Device::reference());
  c.param("b").set_grad(Variable(Array::full({2}, 4.0, Dtype::float32, Device::reference())));
  a.addgrads(c);
  EXPECT_EQ(a.param("b").grad().device(), Device::cpu());
  for (float g : a.param("b").grad().array().to_vector<float>()) EXPECT_EQ(g, 4.0f);
  // Addgrads into an uninitialized parameter that receives a gradient is an error.
  Mlp lazy, init;
  init(Variable(rensa::test::randn({1, 6}, Dtype::float32)));
  F::sum(init(Variable(rensa::test::randn({1, 6}, Dtype::float32)))).backward();
  expect_error<ValueError>([&] { lazy.addgrads(init); }, {"Link::addgrads", "/l1/W", "uninitialized"});
}

TEST(Link, ToDeviceKeepsVariablesAndMovesGrads) {
  Mlp m;
  Variable x(rensa::test::randn({3, 5}, Dtype::float32));
  F::sum(m(x)).backward();
  const Variable W = m.l1.W();
  const Variable gW = W.grad();
  const Array w_cpu = W.array().copy();
  const Array g_cpu = gW.array().copy();
  m.to_device(Device::reference());
  EXPECT_EQ(m.device(), Device::reference());
  EXPECT_EQ(m.l1.device(), Device::reference());
  for (const auto& [path, v] : m.namedparams()) {
    EXPECT_EQ(v.device(), Device::reference()) << path;
    EXPECT_EQ(v.grad().device(), Device::reference()) << path;
  }
  EXPECT_TRUE(m.l1.W().is(W));
  EXPECT_TRUE(W.grad().is(gW));
  EXPECT_TRUE(array_equal(W.array().to(Device::cpu()), w_cpu));
  EXPECT_TRUE(array_equal(gW.array().to(Device::cpu()), g_cpu));
  // It computes there.
  Variable y_ref = m(Variable(x.array().to(Device::reference())));
  EXPECT_EQ(y_ref.device(), Device::reference());
  m.to_device(Device::cpu());
  EXPECT_TRUE(m.l1.W().is(W));
  EXPECT_EQ(W.device(), Device::cpu());
  EXPECT_TRUE(allclose(m(x).array(), y_ref.array().to(Device::cpu()), 1e-5, 1e-6));

  // Persistent values move too; a lazy parameter is created on the link's device.
  Plain p;
  p.to_device(Device::reference());
  EXPECT_EQ(p.persistent("count").device(), Device::reference());
  Mlp lazy;
  lazy.to_device(Device::reference());
  lazy(Variable(x.array().to(Device::reference())));
  EXPECT_EQ(lazy.l1.W().device(), Device::reference());
}
