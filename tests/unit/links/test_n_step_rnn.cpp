// The n-step links (NStepLSTM, NStepBiLSTM, NStepGRU, NStepBiGRU, NStepRNNTanh/ReLU and their Bi
// variants): parameter names and shapes, Chainer 7.8.1's outputs on sequences of different
// lengths in no particular order, gradients, a Chainer .npz file, and errors.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tests/unit/links/recurrent_test_util.h"

using namespace rensa;
namespace F = rensa::functions;
namespace L = rensa::links;
namespace I = rensa::initializers;
using rensa::test::expect_error;
using rensa::test::expect_param_grads;
using rensa::test::expect_values;
using rensa::test::set_params;
using rensa::test::sin_array;
using rensa::test::sin_var;
using Vars = std::vector<Variable>;

namespace {

constexpr int64_t kI = 3, kH = 2;

std::unique_ptr<L::NStepRNNBase> make(const std::string& name, int64_t layers, double dropout = 0.0,
                                      L::NStepRNNOptions o = {}) {
  if (name == "NStepLSTM") return std::make_unique<L::NStepLSTM>(layers, kI, kH, dropout, o);
  if (name == "NStepBiLSTM") return std::make_unique<L::NStepBiLSTM>(layers, kI, kH, dropout, o);
  if (name == "NStepGRU") return std::make_unique<L::NStepGRU>(layers, kI, kH, dropout, o);
  if (name == "NStepBiGRU") return std::make_unique<L::NStepBiGRU>(layers, kI, kH, dropout, o);
  if (name == "NStepRNNTanh") return std::make_unique<L::NStepRNNTanh>(layers, kI, kH, dropout, o);
  if (name == "NStepRNNReLU") return std::make_unique<L::NStepRNNReLU>(layers, kI, kH, dropout, o);
  if (name == "NStepBiRNNTanh") return std::make_unique<L::NStepBiRNNTanh>(layers, kI, kH, dropout, o);
  return std::make_unique<L::NStepBiRNNReLU>(layers, kI, kH, dropout, o);
}

// Calls the link's forward, with cx for the LSTMs.
F::NStepResult call(L::NStepRNNBase& l, const Variable& hx, const Variable& cx, const Vars& xs) {
  if (auto* p = dynamic_cast<L::NStepLSTM*>(&l)) return (*p)(hx, cx, xs);
  if (auto* p = dynamic_cast<L::NStepBiLSTM*>(&l)) return (*p)(hx, cx, xs);
  return dynamic_cast<L::NStepHiddenOnlyBase&>(l)(hx, xs);
}

// The reference sequences: lengths 2, 3, 1.
Vars sequences() {
  return {sin_var({2, kI}, 1.0), sin_var({3, kI}, 1.1), sin_var({1, kI}, 1.2)};
}

struct Case {
  std::string name;
  bool lstm;
  int64_t dirs;
  std::vector<double> hy, cy;
  std::vector<std::vector<double>> ys;
  std::vector<double> hy_from_zeros;
};

// Chainer's outputs: 2 layers, parameters set_params(link, 1.0), hx = sin(0.37 k + 2.0),
// cx = sin(0.37 k + 2.1), then hx = cx = None.
const std::vector<Case>& cases() {
  static const std::vector<Case> c{
      {"NStepLSTM",
       true,
       1,
       {0.85166272231052, 0.459399937410015, 0.673496410778325, 0.638742447666879, 0.342358335614194,
        -0.0646391566750699, -0.0683565457852714, -0.12139039870947, -0.0687794877636557, -0.0999306661879951,
        -0.0276650628880235, -0.022457059253678},
       {2.36380971885631, 0.90965511475716, 1.76674103456321, 1.18403578223933, 0.433901451326916, -0.103499201131689,
        -0.1530695169635, -0.408714730421523, -0.164499114803856, -0.354757751561719, -0.048116487312947,
        -0.0468857507600644},
       {{-0.143528806383532, -0.225816075782445, -0.0683565457852714, -0.12139039870947},
        {-0.144975238669645, -0.154635901969696, -0.0676942279935375, -0.104287604925444, -0.0687794877636557,
         -0.0999306661879951},
        {-0.0276650628880235, -0.022457059253678}},
       {0.784520204781714, 0.384313773262958, 0.65368635025482, 0.643300049482809, 0.594652310195064, 0.18259614955068,
        -0.0383497787968677, -0.0907306160370787, -0.058916757647681, -0.0965295898960669, -0.0150349273247301,
        -0.071174589548074}},
      {"NStepBiLSTM",
       true,
       2,
       {0.85166272231052,    0.459399937410015,   0.673496410778325,   0.638742447666879,   0.342358335614194,
        -0.0646391566750699, -0.106566041988297,  -0.0684012905631273, -0.0847042037849012, -0.0423956831375119,
        -0.127823795751712,  -0.0570680011480195, -0.0358293029827585, -0.0586137965205654, -0.037834542898412,
        -0.0803966185868776, 0.0033932103074079,  0.026012825587458,   0.403791291474253,   0.664020212697756,
        0.130673069913146,   0.467482493227042,   -0.125363792681164,  -0.197889761547839},
       {2.36380971885631,   0.90965511475716,   1.76674103456321,   1.18403578223933,   0.433901451326916,
        -0.103499201131689, -0.376577759580336, -0.334497209206251, -0.327281258817427, -0.230767428220802,
        -0.41467519432899,  -0.246210605390963, -0.19145548376437,  -0.183350226031478, -0.197291931328169,
        -0.216857483071629, 0.0180458577580104, 0.0756985052945754, 0.687381825808242,  1.27702050038257,
        0.219812644818895,  0.789719231588998,  -0.402177649285934, -0.477051580041672},
       {{-0.0198862619963366, 0.00552944204054613, 0.403791291474253, 0.664020212697756, -0.0358293029827585,
         -0.0586137965205654, 0.387477463621385, 0.562120011825152},
        {-0.00129026095824029, 0.0613189666267479, 0.130673069913146, 0.467482493227042, -0.0324225256008468,
         -0.0459618521186688, 0.0899761444963852, 0.326645109723844, -0.037834542898412, -0.0803966185868776,
         0.0336500087350505, 0.0587094033981739},
        {0.0033932103074079, 0.026012825587458, -0.125363792681164, -0.197889761547839}},
       {0.784520204781714,   0.384313773262958,   0.65368635025482,    0.643300049482809,   0.594652310195064,
        0.18259614955068,    -0.0857723345787447, -0.0447766418403047, -0.0706213786410422, -0.0387562852651033,
        -0.0677625866001389, -0.0318647749648547, -0.041391677077427,  -0.0822039117119905, -0.0369997920093033,
        -0.0965288741143163, -0.0406482616361863, -0.0608404784203141, 0.0908508707992904,  0.406454642163611,
        0.261367745067963,   0.593539294392012,   0.0222734319699303,  0.207564999891277}},
      {"NStepGRU",
       false,
       1,
       {0.919407637757011, 0.696036967527615, 0.487043309441456, 0.427767381982115, -0.145878350801993,
        -0.289960089982622, -0.154022487289461, -0.352260664763124, 0.0369383320728672, -0.110945034738348,
        -0.195466443142212, 0.0248082614018167},
       {},
       {{-0.45789149430146, -0.567277191581399, -0.154022487289461, -0.352260664763124},
        {-0.504796952366284, -0.422208876346916, -0.178298248745435, -0.186676199974494, 0.0369383320728672,
         -0.110945034738348},
        {-0.195466443142212, 0.0248082614018167}},
       {0.220127332441229, 0.297626635974252, 0.272515613370899, 0.416951453139926, 0.10175848958722, 0.16434883859512,
        0.245617304124206, 0.0105802207778241, 0.304107344841034, -0.0459720610274692, 0.152040924785808,
        0.0468592997415778}},
      {"NStepBiGRU",
       false,
       2,
       {0.919407637757011,  0.696036967527615,  0.487043309441456,  0.427767381982115,   -0.145878350801993,
        -0.289960089982622, -0.190544813893461, -0.687846714054573, -0.0367709062764599, -0.654073412715051,
        -0.258736497027993, -0.584007902091146, -0.419813704007564, -0.672759093866926,  -0.201028034248317,
        -0.626119218211657, 0.257425325116717,  -0.324846688675673, -0.772165688224353,  -0.368419195155762,
        -0.683428403397455, -0.600967823194868, -0.532499435270992, -0.82406374373946},
       {},
       {{-0.445886719642263, -0.543328799026627, -0.772165688224353, -0.368419195155762, -0.419813704007564,
         -0.672759093866926, -0.609087779142496, -0.194210013658428},
        {-0.197159409568415, -0.44433865192871, -0.683428403397455, -0.600967823194868, -0.277065417122974,
         -0.569558616033195, -0.663205088840556, -0.550548080160979, -0.201028034248317, -0.626119218211657,
         -0.555537805789209, -0.571838974230754},
        {0.257425325116717, -0.324846688675673, -0.532499435270992, -0.82406374373946}},
       {0.220127332441229,  0.297626635974252,  0.272515613370899,  0.416951453139926,  0.10175848958722,
        0.16434883859512,   0.155665265588484,  -0.655731059278772, 0.22766745832825,   -0.653640694135463,
        0.0648609798624595, -0.592483217148796, -0.300289277110935, -0.512450899277933, -0.511530729143415,
        -0.468704670353939, -0.163189476014778, -0.42977074280508,  -0.599674377107695, -0.538292391100093,
        -0.628595335392929, -0.515703424840996, -0.48450675826024,  -0.449266783258705}},
      {"NStepRNNTanh",
       false,
       1,
       {0.990497960037367, 0.976871745600335, 0.805072449484256, 0.911311128154304, 0.941593212233058,
        0.843090398596982, 0.990566015975644, 0.957219683791871, 0.991443884711168, 0.958178572937287,
        0.902315603894319, 0.853888130928502},
       {},
       {{0.7878115276029, 0.794485147021042, 0.990566015975644, 0.957219683791871},
        {0.793044418902217, 0.790722086864373, 0.990532051665355, 0.957173375040951, 0.991443884711168,
         0.958178572937287},
        {0.902315603894319, 0.853888130928502}},
       {0.989731728779395, 0.975533072478162, 0.804900884908905, 0.911247444701536, 0.977390101642269,
        0.921237668239566, 0.992746033944596, 0.962860536625005, 0.99150203251889, 0.958304562896601, 0.956609146436009,
        0.907239086545001}},
      {"NStepRNNReLU",
       false,
       1,
       {4.24410733707607, 3.52414481530872, 3.444971865381, 3.42666828828012, 1.75191602323724, 1.23176457694481,
        6.94246570733534, 4.4127010329688, 9.03192055047888, 5.52593412163816, 2.06858783044626, 1.64272282139205},
       {},
       {{2.62828449616555, 2.05733664424787, 6.94246570733534, 4.4127010329688},
        {2.18283120283494, 1.76584539929803, 6.0934212402144, 3.91534237775056, 9.03192055047888, 5.52593412163816},
        {2.06858783044626, 1.64272282139205}},
       {3.5482655074533, 2.96080900810026, 3.27730102003953, 3.29078829097951, 2.23557266644168, 1.5971450084948,
        6.4408348265952, 4.10993853929566, 9.1083504390462, 5.56211890752703, 2.84456346286507, 2.10504532687048}},
      {"NStepBiRNNTanh",
       false,
       2,
       {0.990497960037367, 0.976871745600335,  0.805072449484256,  0.911311128154304,  0.941593212233058,
        0.843090398596982, 0.99318889747108,   0.875641840226364,  0.995555081787751,  0.899577519782852,
        0.955117515502081, 0.685767066786927,  0.974150200821931,  -0.138950733751755, 0.95546019848473,
        0.42074597974844,  0.988857546977475,  -0.271908988447072, 0.860826878448995,  -0.784734366312358,
        0.854814300409554, -0.779705966044226, 0.669912705386009,  -0.646906600485106},
       {},
       {{0.974983792114634, -0.502876927253161, 0.860826878448995, -0.784734366312358, 0.974150200821931,
         -0.138950733751755, 0.894140178084468, -0.778587191639604},
        {0.988570903362358, -0.443344039025154, 0.854814300409554, -0.779705966044226, 0.97728846379072,
         -0.317246001410992, 0.877330092462738, -0.808883409476323, 0.95546019848473, 0.42074597974844,
         0.793474159264096, -0.1449289317486},
        {0.988857546977475, -0.271908988447072, 0.669912705386009, -0.646906600485106}},
       {0.989731728779395,   0.975533072478162,  0.804900884908905,  0.911247444701536,  0.977390101642269,
        0.921237668239566,   0.995454729312142,  0.898007076781363,  0.99603919569355,   0.904562366233645,
        0.978156299421415,   0.782611957072983,  0.976056415775648,  -0.332179961603366, 0.966208339506845,
        -0.0205870228444081, 0.958665114407994,  -0.450810692854574, 0.847517676490882,  -0.771840472363914,
        0.851655526126668,   -0.776565065716638, 0.812487442308647,  -0.802954022310683}},
      {"NStepBiRNNReLU",
       false,
       2,
       {4.24410733707607, 3.52414481530872,
        3.444971865381,   3.42666828828012,
        1.75191602323724, 1.23176457694481,
        2.97774788661518, 1.43603332832278,
        3.75117424087867, 1.87129120372805,
        1.88707898123696, 0.839920717651514,
        6.00187421222939, 0,
        6.25862950937553, 0,
        3.28077520465342, 0,
        2.82527315286965, 0,
        2.50564927465026, 0,
        1.1278045813497,  0},
       {},
       {{3.91639103682937, 0, 2.82527315286965, 0, 6.00187421222939, 0, 2.98794023096698, 0},
        {4.07898754636312, 0, 2.50564927465026, 0, 5.85795172185858, 0, 3.07477918053637, 0, 6.25862950937553, 0,
         2.41851543028551, 0},
        {3.28077520465342, 0, 1.1278045813497, 0}},
       {3.5482655074533,  2.96080900810026,
        3.27730102003953, 3.29078829097951,
        2.23557266644168, 1.5971450084948,
        3.6061841884923,  1.79023329265573,
        4.02615122277869, 2.02638234046035,
        2.25300397552248, 1.05207549324716,
        5.37541459714968, 0,
        6.05211093160371, 0,
        2.99024956972956, 0,
        2.1787868517237,  0,
        2.3265293685417,  0,
        1.63443797474447, 0}},
  };
  return c;
}

}  // namespace

TEST(NStepRNN, ParameterNamesAndShapes) {
  L::NStepBiLSTM l(2, kI, kH, 0.0, {.seed = 1});
  EXPECT_EQ(l.size(), 4u);
  EXPECT_EQ(l.direction(), 2);
  const auto params = l.namedparams();
  ASSERT_EQ(params.size(), 4u * 16u);
  EXPECT_EQ(params[0].first, "/0/w0");
  EXPECT_EQ(params[1].first, "/0/b0");
  EXPECT_EQ(params[15].first, "/0/b7");
  EXPECT_EQ(params[16].first, "/1/w0");
  EXPECT_EQ(l.ws()[0][0].shape(), (Shape{kH, kI}));
  EXPECT_EQ(l.ws()[0][4].shape(), (Shape{kH, kH}));
  EXPECT_EQ(l.ws()[2][0].shape(), (Shape{kH, 2 * kH}));  // layer 1 reads both directions
  EXPECT_EQ(l.bs()[3][7].shape(), (Shape{kH}));
  EXPECT_TRUE(l.ws()[3][2].is(l[3].param("w2")));
  for (double b : l.bs()[1][3].array().to_vector<double>()) EXPECT_EQ(b, 0.0);
  // Default weights: LeCunNormal drawn in order w0, b0, w1, ... from the link's generator.
  Generator g(1);
  Array w0 = Array::empty({kH, kI});
  I::LeCunNormal()(w0, g);
  EXPECT_TRUE(array_equal(l.ws()[0][0].array(), w0));
  EXPECT_EQ(L::NStepGRU(1, kI, kH, 0.0).namedparams().size(), 12u);
  EXPECT_EQ(L::NStepRNNTanh(3, kI, kH, 0.0).namedparams().size(), 12u);
  L::NStepRNNReLU k(1, kI, kH, 0.0,
                    {.initialW = std::make_shared<I::One>(), .initial_bias = std::make_shared<I::Constant>(0.5)});
  for (double w : k.ws()[0][1].array().to_vector<double>()) EXPECT_EQ(w, 1.0);
  for (double b : k.bs()[0][1].array().to_vector<double>()) EXPECT_EQ(b, 0.5);
}

TEST(NStepRNN, MatchesChainerOnUnsortedSequences) {
  auto guard = using_config("dtype", Dtype::float64);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    auto l = make(c.name, 2);
    set_params(*l, 1.0);
    const Variable hx = sin_var({2 * c.dirs, 3, kH}, 2.0);
    const Variable cx = c.lstm ? sin_var({2 * c.dirs, 3, kH}, 2.1) : Variable();
    const F::NStepResult r = call(*l, hx, cx, sequences());
    expect_values(r.hy, c.hy);
    if (c.lstm) {
      expect_values(r.cy, c.cy);
    } else {
      EXPECT_TRUE(r.cy.is_null());
    }
    ASSERT_EQ(r.ys.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(r.ys[i].shape(), (Shape{sequences()[i].shape()[0], kH * c.dirs}));
      expect_values(r.ys[i], c.ys[i]);
    }
    expect_values(call(*l, Variable(), Variable(), sequences()).hy, c.hy_from_zeros);
  }
}

TEST(NStepRNN, GradientsThroughSortingAndTransposition) {
  auto guard = using_config("dtype", Dtype::float64);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    auto l = make(c.name, 2);
    set_params(*l, 1.0);
    // Inputs: hx, cx (LSTMs), then the sequences.
    auto f = [&](const Vars& in) {
      const std::size_t first = c.lstm ? 2 : 1;
      const Vars xs(in.begin() + static_cast<std::ptrdiff_t>(first), in.end());
      const F::NStepResult r = call(*l, in[0], c.lstm ? in[1] : Variable(), xs);
      Vars out{r.hy};
      if (c.lstm) out.push_back(r.cy);
      out.insert(out.end(), r.ys.begin(), r.ys.end());
      return out;
    };
    std::vector<Array> inputs{sin_array({2 * c.dirs, 3, kH}, 2.0)};
    if (c.lstm) inputs.push_back(sin_array({2 * c.dirs, 3, kH}, 2.1));
    for (const Variable& x : sequences()) inputs.push_back(x.array());
    rensa::testing::check_backward(f, inputs);
    expect_param_grads(*l, [&] {
      Vars in;
      for (const Array& a : inputs) in.emplace_back(a);
      return rensa::test::weighted_sum(f(in));
    });
  }
}

TEST(NStepRNN, EmptySequencesAndEqualLengths) {
  auto guard = using_config("dtype", Dtype::float64);
  L::NStepLSTM l(1, kI, kH, 0.0);
  set_params(l, 1.0);
  const Variable hx = sin_var({1, 3, kH}, 2.0), cx = sin_var({1, 3, kH}, 2.1);
  // A length-0 sequence keeps its states and gets an empty output; the others are unaffected.
  const Vars xs{sin_var({2, kI}, 1.0), Variable(Array::zeros({0, kI}, Dtype::float64)), sin_var({3, kI}, 1.1)};
  const F::NStepResult r = l(hx, cx, xs);
  EXPECT_EQ(r.ys[1].shape(), (Shape{0, kH}));
  for (int64_t k = 0; k < kH; ++k) {
    EXPECT_EQ(r.hy.array().at<double>({0, 1, k}), hx.array().at<double>({0, 1, k}));
    EXPECT_EQ(r.cy.array().at<double>({0, 1, k}), cx.array().at<double>({0, 1, k}));
  }
  // Each sequence alone gives the same result: rows are independent.
  for (std::size_t i : {0u, 2u}) {
    const Variable h1(hx.array().slice(1, static_cast<int64_t>(i), static_cast<int64_t>(i) + 1).copy());
    const Variable c1(cx.array().slice(1, static_cast<int64_t>(i), static_cast<int64_t>(i) + 1).copy());
    const F::NStepResult alone = l(h1, c1, {xs[i]});
    EXPECT_TRUE(allclose(alone.ys[0].array(), r.ys[i].array(), 1e-13, 1e-13));
  }
  // All empty: the states pass through.
  const F::NStepResult none =
      l(hx, cx,
        {Variable(Array::zeros({0, kI}, Dtype::float64)), Variable(Array::zeros({0, kI}, Dtype::float64)),
         Variable(Array::zeros({0, kI}, Dtype::float64))});
  EXPECT_TRUE(array_equal(none.hy.array(), hx.array()));
  EXPECT_EQ(none.ys[2].shape(), (Shape{0, kH}));
}

TEST(NStepRNN, DropoutOnlyInTraining) {
  auto guard = using_config("dtype", Dtype::float64);
  L::NStepGRU l(2, kI, kH, 0.5, {.seed = 3});
  EXPECT_EQ(l.dropout(), 0.5);
  Array test_mode;
  {
    auto no_train = using_config("train", false);
    test_mode = l(Variable(), sequences()).hy.array();
    EXPECT_TRUE(array_equal(l(Variable(), sequences()).hy.array(), test_mode));
  }
  L::NStepGRU plain(2, kI, kH, 0.0, {.seed = 3});
  EXPECT_TRUE(array_equal(plain(Variable(), sequences()).hy.array(), test_mode));
  EXPECT_FALSE(allclose(l(Variable(), sequences()).hy.array(), test_mode));
}

TEST(NStepRNN, SerializeRoundTripAndChainerNpz) {
  L::NStepBiGRU a(2, kI, kH, 0.0, {.seed = 4});
  const std::string path = rensa::test::temp_npz("n_step");
  serializers::save_npz(path, a);
  L::NStepBiGRU b(2, kI, kH, 0.0, {.seed = 5});
  serializers::load_npz(path, b);
  std::filesystem::remove(path);
  rensa::test::expect_same_params(a, b);

  // Chainer's L.NStepLSTM(2, 3, 2, 0.0), float32, parameters set_params(link, 1.0).
  L::NStepLSTM l(2, kI, kH, 0.0);
  serializers::load_npz(std::string(RENSA_TEST_FIXTURES_DIR) + "/chainer_n_step_lstm.npz", l);
  L::NStepLSTM want(2, kI, kH, 0.0);
  set_params(want, 1.0);
  rensa::test::expect_same_params(l, want);
  const Vars xs{Variable(sin_array({2, kI}, 1.0).astype(Dtype::float32)),
                Variable(sin_array({3, kI}, 1.1).astype(Dtype::float32))};
  const F::NStepResult r = l(Variable(), Variable(), xs);
  expect_values(
      r.hy,
      {0.784520149, 0.384313762, 0.653686345, 0.643300056, -0.0383497812, -0.090730615, -0.0589167513, -0.096529603},
      1e-6);
  expect_values(r.ys[1], {-0.0145596107, -0.0711517558, -0.0393617488, -0.0905372947, -0.0589167513, -0.096529603},
                1e-6);
}

TEST(NStepRNN, Errors) {
  expect_error<ValueError>([] { L::NStepLSTM(0, 3, 2, 0.0); }, {"NStepLSTM", "n_layers", "0"});
  expect_error<ValueError>([] { L::NStepGRU(1, 3, 0, 0.0); }, {"NStepGRU", "out_size", "0"});
  expect_error<ValueError>([] { L::NStepRNNTanh(1, 3, 2, 1.0); }, {"NStepRNNTanh", "dropout", "1"});
  L::NStepLSTM l(2, kI, kH, 0.0);
  const Vars xs{Variable(Array::zeros({2, kI})), Variable(Array::zeros({4, kI}))};
  expect_error<ValueError>([&] { l(Variable(), Variable(), {}); }, {"NStepLSTM", "no sequence"});
  expect_error<ShapeError>(
      [&] {
        l(Variable(), Variable(), {xs[0], Variable(Array::zeros({4, 5}))});
      },
      {"NStepLSTM", "xs[1] (4, 5)", "(L, 3)"});
  expect_error<ShapeError>(
      [&] {
        l(Variable(Array::zeros({2, 3, kH})), Variable(), xs);
      },
      {"NStepLSTM", "hx (2, 3, 2)", "(2, 2, 2)", "2 sequences"});
  expect_error<ShapeError>(
      [&] {
        l(Variable(), Variable(Array::zeros({1, 2, kH})), xs);
      },
      {"NStepLSTM", "cx (1, 2, 2)", "(2, 2, 2)"});
  expect_error<DtypeError>(
      [&] {
        l(Variable(), Variable(), {Variable(Array::zeros({2, kI}, Dtype::float64))});
      },
      {"NStepLSTM", "float64", "float32"});
  L::NStepBiRNNReLU r(1, kI, kH, 0.0);
  expect_error<ShapeError>([&] { r(Variable(Array::zeros({1, 2, kH})), xs); }, {"NStepBiRNNReLU", "(2, 2, 2)"});
  expect_error<ValueError>([&] { r(Variable(), {Variable()}); }, {"NStepBiRNNReLU", "xs[0] is null"});
}
