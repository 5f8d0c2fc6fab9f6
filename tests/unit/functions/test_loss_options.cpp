// softmax_cross_entropy's and sigmoid_cross_entropy's options (class_weight, normalize,
// cache_score, soft targets): values and gradients against Chainer 7.8.1's on the same inputs (as
// literals), numerical gradient checks in float64, and the errors of bad options.
#include <cmath>
#include <string>
#include <vector>

#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::expect_error;
using rensa::test::randn;
using rensa::testing::check_backward;
using rensa::testing::check_double_backward;

namespace {

using Vec = std::vector<double>;

Array f64(const Vec& v, const Shape& shape) {
  return Array::from_vector<double>(v, shape);
}

const Array x2 = f64({0.2, -1.0, 0.5, 1.5, 1.0, 0.3, -0.7, 0.0, -0.4, 0.8, 2.0, -1.2}, {3, 4});
const Array t2 = Array::from_vector<int32_t>({3, -1, 1}, {3});
const Array cw = f64({0.5, 2.0, 1.0, 3.0}, {4});
// arange(24).reshape(2, 4, 3) * 0.1 - 1, with x3[1, 2, 0] = 2.5.
Array make_x3() {
  Vec v(24);
  for (int i = 0; i < 24; ++i) v[static_cast<std::size_t>(i)] = i * 0.1 - 1.0;
  v[1 * 12 + 2 * 3 + 0] = 2.5;
  return f64(v, {2, 4, 3});
}
const Array x3 = make_x3();
const Array t3 = Array::from_vector<int32_t>({0, 3, -1, 2, 1, 1}, {2, 3});
const Array soft2 = f64({0.1, 0.2, 0.3, 0.4, 1.0, 0.0, 0.0, 0.0, 0.25, 0.25, 0.25, 0.25}, {3, 4});
// |sin(arange(24) + 1)| normalized over axis 1.
const Array soft3 =
    f64({0.30060252178198205, 0.2357176643246663,   0.103065464957374,   0.27035601070950327, 0.24858245896163994,
         0.20406807393287285, 0.23469832224449363,  0.25647187399235705, 0.3009862590211241,  0.19434314526402102,
         0.2592280027213369,  0.39188020208862906,  0.4847341755780502,  0.26692585399502256, 0.20686685549879716,
         0.3321454674403866,  0.25905505856920863,  0.23890093073525798, 0.17290886551361026, 0.24599927438478827,
         0.266153402218739,   0.010211491467952813, 0.2280198130509806,  0.28807881154720594},
        {2, 4, 3});

struct Case {
  std::string name;
  Array x, t, class_weight;
  bool normalize;
  std::string reduce, soft_target_loss;
  Vec y, gx;  // Chainer's loss, and its gradient of sum(y * (1, 2, ...))
};

}  // namespace

TEST(SoftmaxCrossEntropyOptions, MatchChainer) {
  const std::vector<Case> cases = {
      {"cw2 normalize=True reduce=mean",
       x2,
       t2,
       cw,
       true,
       "mean",
       "cross-entropy",
       {2.3752046911848193},
       {0.23732864070160095, 0.07148201290031288, 0.32036015594109674, -0.6291708095430107, -0.0, 0.0, 0.0, 0.0,
        0.0633207065338488, -0.789767850677334, 0.6979953166694604, 0.02845182747402486}},
      {"cw2 normalize=True reduce=no",
       x2,
       t2,
       cw,
       true,
       "no",
       "cross-entropy",
       {1.631323610599876, 0.0, 3.1190857717697624},
       {0.4746572814032019, 0.14296402580062575, 0.6407203118821935, -1.2583416190860215, -0.0, 0.0, 0.0, 0.0,
        0.3799242392030928, -4.738607104064004, 4.187971900016763, 0.17071096484414916}},
      {"cw2 normalize=False reduce=mean",
       x2,
       t2,
       cw,
       false,
       "mean",
       "cross-entropy",
       {1.5834697941232128},
       {0.1582190938010673, 0.04765467526687525, 0.21357343729406447, -0.41944720636200716, -0.0, 0.0, 0.0, 0.0,
        0.0422138043558992, -0.5265119004515559, 0.46533021111297357, 0.018967884982683238}},
      {"cw2 normalize=False reduce=no",
       x2,
       t2,
       cw,
       false,
       "no",
       "cross-entropy",
       {1.631323610599876, 0.0, 3.1190857717697624},
       {0.4746572814032019, 0.14296402580062575, 0.6407203118821935, -1.2583416190860215, -0.0, 0.0, 0.0, 0.0,
        0.3799242392030928, -4.738607104064004, 4.187971900016763, 0.17071096484414916}},
      {"cw3 mean",
       x3,
       t3,
       cw,
       true,
       "mean",
       "cross-entropy",
       {2.136469084389709},
       {-0.08492063894937894, 0.09047616630372643,  -0.0,
        0.02035500832679939,  0.12213004996079634,  0.0,
        0.027476387268213033, 0.1648583236092782,   0.0,
        0.03708924335436652,  -0.3774645398738009,  0.0,
        0.013528463952897796, 0.06031744420248426,  0.0603174442024843,
        0.01826151621979356,  -0.31857996669280253, -0.3185799666928024,
        -0.06506463220041343, 0.1099055490728521,   0.10990554907285213,
        0.03327465202772206,  0.14835697341746606,  0.14835697341746612}},
      {"plain3 normalize=False",
       x3,
       t3,
       Array(),
       false,
       "mean",
       "cross-entropy",
       {3.23044711980405},
       {-0.4246031947468947,  0.07539680525310535,  -0.0,
        0.10177504163399695,  0.10177504163399695,  0.0,
        0.13738193634106516,  0.13738193634106516,  0.0,
        0.1854462167718326,   -0.3145537832281674,  0.0,
        0.03382115988224449,  0.07539680525310533,  0.07539680525310537,
        0.045653790549483896, -0.39822495836600313, -0.398224958366003,
        -0.16266158050103358, 0.13738193634106513,  0.13738193634106516,
        0.08318663006930516,  0.18544621677183257,  0.18544621677183265}},
      {"soft cross-entropy mean",
       x2,
       soft2,
       Array(),
       true,
       "mean",
       "cross-entropy",
       {1.4165883863850626},
       {0.019406364600355764, -0.050781774911041584, -0.028808854235311827, 0.0601842645459976, -0.1705051990069303,
        0.08085805855026527, 0.029746017393679346, 0.05990112306298569, -0.06222643115538373, -0.013255950225777986,
        0.14933177222315344, -0.07384939084199171}},
      {"soft cross-entropy no",
       x2,
       soft2,
       Array(),
       true,
       "no",
       "cross-entropy",
       {1.4737745368666253, 0.7164477364036808, 2.0595428858848814},
       {0.058219093801067295, -0.15234532473312476, -0.08642656270593549, 0.18055279363799281, -1.023031194041582,
        0.4851483513015917, 0.1784761043620761, 0.35940673837791415, -0.5600378803984536, -0.11930355203200188,
        1.343985950008381, -0.6646445175779254}},
      {"soft kl-divergence mean",
       x2,
       soft2,
       Array(),
       true,
       "mean",
       "kl-divergence",
       {0.5278724907338135},
       {0.019406364600355764, -0.050781774911041584, -0.028808854235311827, 0.0601842645459976, -0.1705051990069303,
        0.08085805855026527, 0.029746017393679346, 0.05990112306298569, -0.06222643115538373, -0.013255950225777986,
        0.14933177222315344, -0.07384939084199171}},
      {"soft kl-divergence no",
       x2,
       soft2,
       Array(),
       true,
       "no",
       "kl-divergence",
       {0.19392071103285383, 0.7164478364036758, 0.6732489247649107},
       {0.058219093801067295, -0.15234532473312476, -0.08642656270593549, 0.18055279363799281, -1.023031194041582,
        0.4851483513015917, 0.1784761043620761, 0.35940673837791415, -0.5600378803984536, -0.11930355203200188,
        1.343985950008381, -0.6646445175779254}},
      {"soft3 mean",
       x3,
       soft3,
       Array(),
       true,
       "mean",
       "cross-entropy",
       {1.5453239741889224},
       {-0.02496815187929522,  -0.014154008969742596,  0.007954690924806117,  -0.01113432124025156,
        -0.007505395948941007, -8.633177747983481e-05, 0.006677591739606113,  0.003048666448295545,
        -0.004370397723165627, 0.029424881379940693,   0.01861073847038805,   -0.003497961424160645,
        -0.0695153093022602,   -0.019355373914801983,  -0.009345540832097737, -0.040139647723569795,
        -0.00925082921686914,  -0.00589180791121068,   0.08362799558072043,   0.004794099716223664,
        0.0014350784105652177, 0.026026961445109582,   0.02381210341544742,   0.013802270332743227}},
  };
  for (const Case& c : cases) {
    for (const bool cache : {true, false}) {
      SCOPED_TRACE(c.name + (cache ? "" : ", cache_score false"));
      Variable x(c.x.copy(), true);
      F::SoftmaxCrossEntropyOptions o;
      o.normalize = c.normalize;
      o.cache_score = cache;
      o.class_weight = c.class_weight;
      o.reduce = c.reduce;
      o.soft_target_loss = c.soft_target_loss;
      Variable y = F::softmax_cross_entropy(x, c.t, o);
      const Vec got = y.array().to_vector<double>();
      ASSERT_EQ(got.size(), c.y.size());
      for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], c.y[i], 1e-13) << "y " << i;
      Vec w(got.size());
      for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<double>(i + 1);
      Variable s = y.ndim() == 0 ? y : F::sum(F::mul(y, Variable(f64(w, y.shape()))));
      s.backward();
      const Vec gx = x.grad().array().to_vector<double>();
      ASSERT_EQ(gx.size(), c.gx.size());
      for (std::size_t i = 0; i < gx.size(); ++i) EXPECT_NEAR(gx[i], c.gx[i], 1e-13) << "gx " << i;
    }
  }
}

TEST(SoftmaxCrossEntropyOptions, Backward) {
  const auto f = [](const Array& t, F::SoftmaxCrossEntropyOptions o) {
    return [t, o](const Variable& x) { return F::softmax_cross_entropy(x, t, o); };
  };
  F::SoftmaxCrossEntropyOptions weighted;
  weighted.class_weight = cw;
  check_backward(f(t2, weighted), randn({3, 4}));
  weighted.normalize = false;
  weighted.cache_score = false;
  check_backward(f(t3, weighted), randn({2, 4, 3}, Dtype::float64, 2));
  weighted.reduce = "no";
  check_backward(f(t3, weighted), randn({2, 4, 3}, Dtype::float64, 3), randn({2, 3}, Dtype::float64, 4));
  F::SoftmaxCrossEntropyOptions soft;
  check_backward(f(soft3, soft), randn({2, 4, 3}, Dtype::float64, 5));
  soft.soft_target_loss = "kl-divergence";
  soft.reduce = "no";
  check_backward(f(soft2, soft), randn({3, 4}, Dtype::float64, 6), randn({3}, Dtype::float64, 7));
  // Targets that do not sum to 1 get the gradient of the loss as computed.
  check_backward(f(F::mul(Variable(soft2), Variable(Array::scalar(1.7, Dtype::float64))).array(), soft),
                 randn({3, 4}, Dtype::float64, 8), randn({3}, Dtype::float64, 9));
  const auto dbl = [](const Array& t, F::SoftmaxCrossEntropyOptions o) {
    return
        [t, o](const std::vector<Variable>& v) { return std::vector<Variable>{F::softmax_cross_entropy(v[0], t, o)}; };
  };
  F::SoftmaxCrossEntropyOptions w2;
  w2.class_weight = cw;
  check_double_backward(dbl(t2, w2), {randn({3, 4}, Dtype::float64, 10)}, {Array::scalar(0.7, Dtype::float64)});
  check_double_backward(dbl(soft2, F::SoftmaxCrossEntropyOptions{}), {randn({3, 4}, Dtype::float64, 11)},
                        {Array::scalar(-1.1, Dtype::float64)});
}

// 16-bit logits and float32 soft targets are computed in float32.
TEST(SoftmaxCrossEntropyOptions, MixedDtypes) {
  F::SoftmaxCrossEntropyOptions o;
  o.class_weight = cw.astype(Dtype::float32);
  Variable y = F::softmax_cross_entropy(Variable(x2.astype(Dtype::float16)), t2, o);
  EXPECT_EQ(y.dtype(), Dtype::float32);
  EXPECT_NEAR(y.array().item<double>(), 2.3752046911848193, 2e-3);
  Variable ys = F::softmax_cross_entropy(Variable(x2), soft2.astype(Dtype::float32));
  EXPECT_EQ(ys.dtype(), Dtype::float64);
  EXPECT_NEAR(ys.array().item<double>(), 1.4165883863850626, 1e-7);
}

TEST(SoftmaxCrossEntropyOptions, Errors) {
  F::SoftmaxCrossEntropyOptions o;
  o.class_weight = f64({1, 2, 3}, {3});
  expect_error<ShapeError>([&] { F::softmax_cross_entropy(Variable(x2), t2, o); },
                           {"softmax_cross_entropy", "class_weight", "(3,)", "(4,)"});
  o.class_weight = Array::from_vector<int32_t>({1, 2, 3, 4}, {4});
  expect_error<DtypeError>([&] { F::softmax_cross_entropy(Variable(x2), t2, o); },
                           {"softmax_cross_entropy", "class_weight", "floating", "int32"});
  F::SoftmaxCrossEntropyOptions bad;
  bad.soft_target_loss = "kl";
  expect_error<ValueError>([&] { F::softmax_cross_entropy(Variable(x2), soft2, bad); },
                           {"softmax_cross_entropy", "soft_target_loss", "kl"});
  bad = {};
  bad.reduce = "sum";
  expect_error<ValueError>([&] { F::softmax_cross_entropy(Variable(x2), t2, bad); },
                           {"softmax_cross_entropy", "reduce", "sum"});
  expect_error<ShapeError>(
      [&] {
        F::softmax_cross_entropy(Variable(x2), f64({0.5, 0.5}, {1, 2}));
      },
      {"softmax_cross_entropy", "(1, 2)", "soft targets", "(3, 4)"});
}

TEST(SigmoidCrossEntropyOptions, NormalizeMatchesChainer) {
  const Array xs = f64({0.5, -1.0, 2.0, 0.0, 1.5, -0.3}, {2, 3});
  const Array ts = Array::from_vector<int32_t>({1, 0, -1, -1, -1, 1}, {2, 3});
  const std::vector<std::pair<bool, std::pair<double, Vec>>> want = {
      {true, {0.5472313053889523, {-0.1258468895993818, 0.08964714045666504, 0.0, 0.0, 0.0, -0.19148083893721965}}},
      {false, {0.8208469580834283, {-0.1887703343990727, 0.13447071068499755, 0.0, 0.0, 0.0, -0.28722125840582946}}},
  };
  for (const auto& [normalize, expected] : want) {
    Variable x(xs.copy(), true);
    Variable y = F::sigmoid_cross_entropy(x, ts, {.normalize = normalize});
    EXPECT_NEAR(y.array().item<double>(), expected.first, 1e-14) << normalize;
    y.backward();
    const Vec gx = x.grad().array().to_vector<double>();
    for (std::size_t i = 0; i < gx.size(); ++i) EXPECT_NEAR(gx[i], expected.second[i], 1e-14) << normalize << " " << i;
  }
  check_backward([ts](const Variable& x) { return F::sigmoid_cross_entropy(x, ts, {.normalize = false}); },
                 randn({2, 3}, Dtype::float64, 12));
  // Every entry ignored: the divisor is still at least 1.
  const Array none = Array::from_vector<int32_t>({-1, -1}, {1, 2});
  EXPECT_EQ(F::sigmoid_cross_entropy(Variable(f64({1, 2}, {1, 2})), none, {.normalize = false}).array().item<double>(),
            0.0);
}
