// Maxout, Highway, PReLU, Swish, Parameter, SimplifiedDropconnect, GroupNormalization and
// BatchRenormalization: Chainer 7.8.1's outputs with the same weights and inputs, parameter
// names, gradients and errors.
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "rensa/links/activation.h"
#include "rensa/links/highway.h"
#include "rensa/links/normalization.h"
#include "rensa/links/parameter.h"
#include "rensa/links/simplified_dropconnect.h"
#include "rensa/serializers/npz.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
namespace L = rensa::links;
using rensa::test::expect_error;
using rensa::test::randn;

namespace {

// sin(0.37 k + off) in `shape`, float64: the inputs and weights of the reference script.
Array arr(const Shape& shape, double off) {
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = std::sin(0.37 * static_cast<double>(k) + off);
  return Array::from_vector(v, shape);
}

void expect_vec(const Array& a, const std::vector<double>& want) {
  const auto got = a.to_vector<double>();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12 * (1 + std::abs(want[i]))) << i;
}

std::vector<std::string> param_names(const Link& l) {
  std::vector<std::string> out;
  for (const auto& [path, v] : l.namedparams()) out.push_back(path);
  return out;
}

}  // namespace

TEST(ChainerLinks, MatchChainer) {
  auto guard = using_config("dtype", Dtype::float64);
  const Variable x(arr({2, 3}, 0.1));
  L::Maxout maxout(3, 2, 2);
  maxout.linear().W().array().assign(arr({4, 3}, 0.2));
  maxout.linear().b().array().assign(arr({4}, 0.3));
  expect_vec(maxout(x).array(), {1.8284003479425, 1.07061725381341, 3.3432890822844, 1.80773473283195});
  EXPECT_EQ(param_names(maxout), (std::vector<std::string>{"/linear/W", "/linear/b"}));

  L::Highway highway(3);
  expect_vec(highway.namedparams()[3].second.array(), {-1.0, -1.0, -1.0});  // transform/b starts at -1
  const auto hp = highway.namedparams();
  hp[0].second.array().assign(arr({3, 3}, 0.4));
  hp[1].second.array().assign(arr({3}, 0.5));
  hp[2].second.array().assign(arr({3, 3}, 0.6));
  hp[3].second.array().assign(arr({3}, 0.7));
  EXPECT_EQ(param_names(highway),
            (std::vector<std::string>{"/plain/W", "/plain/b", "/transform/W", "/transform/b"}));
  expect_vec(highway(x).array(), {1.30996065463817, 1.68097661424095, 0.850119113665755, 2.30854541867851,
                                  3.2865851919632, 1.23314461680003});

  L::PReLU prelu(Shape{3});
  expect_vec(prelu.W().array(), {0.25, 0.25, 0.25});
  expect_vec(prelu(x).array(), {0.0998334166468282, 0.452886285379068, 0.744643119970859, 0.935616001553386,
                                0.99995764649874, 0.928959715003869});
  L::Swish swish;
  expect_vec(swish(x).array(), {0.0524063186677415, 0.276860823719341, 0.504875737329541, 0.671971818738505,
                                0.731019288807011, 0.665937950451465});
  EXPECT_EQ(swish.beta().shape(), (Shape{3}));

  const Variable x4(arr({2, 4, 3}, 0.8));
  L::GroupNormalization gn(2);
  expect_vec(gn(x4).array(),
             {-0.474042479471921, 0.666034106380721, 1.10758879699767, 0.790859236430622, -0.24128671514322,
              -1.84915294519388, 1.73419603470584, 0.83155365756341, 0.0107200225019823, -0.617208888677537,
              -0.967245843594684, -0.992014982499011, -1.37465473820878, -0.944301571075319, -0.362969535588862,
              0.290660804399363, 0.928123648690491, 1.4631413917831, 0.70809377637459, 0.949809225970968,
              0.76301681711607, 0.172998026065607, -0.74039087171502, -1.85352697381221});
  EXPECT_EQ(param_names(gn), (std::vector<std::string>{"/gamma", "/beta"}));

  L::BatchRenormalization brn(4, 1.5, 0.5);
  brn.avg_mean().assign(F::mul(Variable(arr({4}, 0.9)), 0.1).array());
  brn.avg_var().assign(F::add(F::mul(Variable(arr({4}, 1.0)), 0.5), 1.0).array());
  expect_vec(brn(x4).array(),
             {0.558153675237929, 0.73658350187756, 0.80568984778131, 1.27455044578754, 0.841571651205943,
              0.167081787563846, -0.0401346673683944, -0.429495049576997, -0.783566723996913, -0.830742032231038,
              -0.963436834574229, -0.972826517420426, -0.829117275052212, -0.618107541628181, -0.333070211344503,
              -0.785846036619396, 0.0519232758728541, 0.755056722497945, 0.810473268591313, 0.891414108933644,
              0.82886479912523, 0.650715191797138, 0.381919067975877, 0.054340453591302});
  expect_vec(brn.avg_mean(), {0.0846924037828699, 0.14238972381644, 0.125776666408225, 0.057036100403898});
  expect_vec(brn.avg_var(), {1.34796098335399, 1.35060246815995, 1.39099446451957, 1.34755272259505});
  // Test mode normalizes with the running statistics, as BatchNormalization.
  auto test_mode = using_config("train", false);
  const Variable want = F::fixed_batch_normalization(x4, brn.gamma(), brn.beta(), Variable(brn.avg_mean()),
                                                     Variable(brn.avg_var()));
  expect_vec(brn(x4).array(), want.array().to_vector<double>());
}

TEST(ChainerLinks, GradientsReachEveryParameter) {
  auto guard = using_config("dtype", Dtype::float64);
  L::Maxout maxout(3, 2, 3);
  L::Highway highway(3);
  L::PReLU prelu(Shape{3});
  L::Swish swish(Shape{3});
  L::Parameter param(arr({3}, 0.2));
  L::SimplifiedDropconnect dropconnect(3, 2, 0.5);
  L::GroupNormalization gn(3, 3);
  std::vector<Link*> links{&maxout, &highway, &prelu, &swish, &dropconnect, &gn};
  const Variable x(randn({4, 3}));
  for (Link* l : links) {
    l->cleargrads();
    F::sum(F::square((*l)(x))).backward();
    for (const auto& [path, p] : l->namedparams()) {
      ASSERT_FALSE(p.grad().is_null()) << path;
      EXPECT_EQ(p.grad().shape(), p.shape()) << path;
    }
  }
  F::sum(F::mul(param(), Variable(arr({3}, 0.0)))).backward();
  expect_vec(param.W().grad().array(), arr({3}, 0.0).to_vector<double>());
  // In test mode SimplifiedDropconnect is the linear layer.
  auto test_mode = using_config("train", false);
  expect_vec(dropconnect(x).array(), F::linear(x, dropconnect.W(), dropconnect.b()).array().to_vector<double>());
}

TEST(ChainerLinks, SaveAndLoad) {
  const auto path = std::filesystem::temp_directory_path() / ("rensa_links_" + std::to_string(::getpid()) + ".npz");
  L::Swish a(Shape{3}, 0.5);
  L::Swish b;  // lazy: adopts the stored shape
  serializers::save_npz(path.string(), a);
  serializers::load_npz(path.string(), b);
  std::filesystem::remove(path);
  EXPECT_EQ(b.beta().array().to_vector<double>(), a.beta().array().to_vector<double>());
}

TEST(ChainerLinks, Errors) {
  expect_error<ValueError>([] { L::Maxout(3, 0, 2); }, {"Maxout", "out_size and pool_size", "0"});
  expect_error<ValueError>([] { L::Highway(0); }, {"Highway", "in_out_size", "0"});
  expect_error<ValueError>([] { L::SimplifiedDropconnect(3, 2, 1.0); }, {"SimplifiedDropconnect", "ratio", "1"});
  expect_error<ValueError>([] { L::GroupNormalization(0); }, {"GroupNormalization", "groups", "0"});
  expect_error<ValueError>([] { L::BatchRenormalization(3, 0.5); }, {"BatchRenormalization", "rmax >= 1"});
  expect_error<ValueError>([] { L::Parameter p(Array{}); }, {"Parameter", "null"});
  L::Parameter p(Array::zeros({2}));
  expect_error<ValueError>([&] { p(Variable(Array::zeros({1}))); }, {"Parameter", "no input", "(1,)"});
  L::BatchRenormalization brn(3);
  expect_error<ShapeError>([&] { brn(Variable(randn({2, 4}, Dtype::float32))); },
                           {"BatchRenormalization", "(2, 4)", "3 channels"});
  L::Swish swish;
  expect_error<ShapeError>([&] { swish(Variable(randn({3}, Dtype::float32))); }, {"Swish", "(3,)"});
  L::PReLU prelu(Shape{4});
  expect_error<ShapeError>([&] { prelu(Variable(randn({2, 3}, Dtype::float32))); }, {"prelu", "W (4,)", "(2, 3)"});
}
