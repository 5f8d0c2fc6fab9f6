// convolution_nd/1d/3d, deconvolution_nd/1d/3d, dilated and depthwise convolution_2d: conformance
// (gradients of every order, layouts, size 0, cpu against reference), values computed with Chainer
// v7.8.1 on the same inputs, agreement with the 2-d functions where they coincide, and errors.
#include <cmath>
#include <vector>

#include "tests/unit/functions/chainer_inputs.h"
#include "tests/unit/functions/conformance.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::binary_fn;
using rensa::test::expect_conforms;
using rensa::test::expect_error;
using rensa::test::FunctionCase;
using rensa::test::randn;

namespace {

// Chainer's values below were computed on seq's inputs (chainer_inputs.h).
using rensa::test::seq;

void expect_values(const Variable& y, const Shape& shape, const std::vector<double>& expected) {
  ASSERT_EQ(y.shape(), shape);
  EXPECT_TRUE(allclose(y.array().astype(Dtype::float64), Array::from_vector(expected, shape), 1e-7, 1e-8)) << y.array();
}

const std::vector<double> kConv1d = {
    0.983301918,   1.767217933,   0.6634845361,  0.006477873568, 0.4589467832, -0.05515965822,
    -0.9703461709, -0.8493243661, -0.7738038525, 0.3119034733,   1.005107649,  0.4654158166,
    -1.604936149,  -0.9262691279, -0.2596463346, -1.468257437,   -2.231283169, -1.971824442,
    0.8184505948,  1.508165853,   0.4829330869,  -0.06417269353, 0.3411958381, -0.1415103513,
    -0.9467959819, -0.8257741771, -0.7659537895, 0.4296544185,   1.169958972,  0.5674666358,
    -1.607057788,  -0.8341900104, -0.1704314293, -1.59025166,    -2.426049597, -2.109518791};
const std::vector<double> kConv3d = {
    3.543518639,   3.787599415,   -0.3352159602, -2.020313708,  2.179153722,    -1.959611269,
    -1.738489374,  -2.166753922,  -1.406460783,  -0.8623920886, -0.1883690983,  -0.5832139093,
    -0.7975406672, -0.9625137882, -1.21707703,   1.029441665,   -0.05866625544, -1.48852498,
    -3.800686782,  -0.8985758501, 0.921344176,   -0.7712618151, -2.838590446,   -1.679454778,
    -1.340473892,  -1.465120162,  -0.8273634416, -1.921170319,  -2.440457095,   -1.017438691,
    -5.380011021,  -1.640326261,  -1.885387312,  0.03399631267, 0.3129348254,   0.1540005167};
const std::vector<double> kDeconv1d = {
    0.1011147443,  1.083608279,   0.01505479426, 0.9114883786,  -0.07100515578, 0.7393684785,  -0.1570651058,
    0.5672485785,  -0.2431250559, -0.3198812275, -0.1849037552, 0.4705038204,   -0.238691224,  0.3629288829,
    -0.2924786928, 0.2553539453,  -0.3462661615, 0.1477790078,  -0.4000536303,  -0.476809802,  -0.4709222547,
    -0.1426006379, -0.4924372422, -0.1856306129, -0.5139522297, -0.2286605879,  -0.5354672172, -0.2716905629,
    -0.5569822048, -0.6337383764, -0.9594649149, -0.8637377576, -0.9985698584,  -0.7952677636, -1.037674802,
    -0.7267977695, -1.076779745,  -0.6583277755, -1.115884689,  -1.085065923,   -0.9227586017, -1.178270688,
    -0.929591064,  -1.191935612,  -0.9364235262, -1.205600537,  -0.9432559885,  -1.219265461,  -0.9500884507,
    -0.9192696848, -0.8860522886, -1.145925521,  -0.8606122696, -1.095045483,   -0.8351722505, -1.044165445,
    -0.8097322315, -0.9932854066, -0.7842922125, -0.7534734466, -1.620084257,   -2.358789723,  -1.706144207,
    -2.530909623,  -1.792204157,  -2.042970058,  -1.364884523,  -1.848390256,   -1.450944473,  -1.459230651,
    -1.260653131,  -1.680994931,  -1.3144406,    -1.788569868,  -1.368228068,   -1.676124984,  -1.348675597,
    -1.857039862,  -1.402463065,  -1.410749243,  -0.9012220049, -1.003200138,   -0.9227369924, -1.046230113,
    -0.94425198,   -1.30927991,   -1.33246667,   -1.865689469,  -1.353981658,   -1.362267835,  -0.6751614066,
    -1.36153312,   -0.7142663501, -1.293063126,  -0.7533712936, -1.224593132,   -0.7924762372, -1.156123138,
    -0.8315811807, -0.8789723018, -0.8730847546, -1.078922993,  -0.8799172168,  -1.092587918,  -0.8867496791,
    -1.106252842,  -0.8935821413, -1.119917767,  -0.9004146036, -0.9478057247,  -1.071008102,  -1.515837149,
    -1.045568083,  -1.46495711,   -1.020128064,  -1.414077072,  -0.9946880455,  -1.363197034,  -0.9692480264,
    -1.016639148};
const std::vector<double> kDeconv3d = {
    -0.4608916186, -0.3948929407,  -0.5146790874,  -0.470195397,  -0.6681914307, -0.5806777653, -0.6789489245,
    -0.6129502466, -0.223281841,   -0.1343144602,  -0.3308567786, -0.2849193728, -0.5518215152, -0.4198241594,
    -0.5733365027, -0.4843691219,  -0.5684665562,  -0.5454978533, -0.622254025,  -0.6208003096, -0.6897064183,
    -0.6452227279, -0.700463912,   -0.6774952091,  -1.041766814,  -1.183067948,  -1.165914107,  -1.328730229,
    -0.9048268262, -1.024612973,   -0.9859441439,  -1.127245278,  -0.1124714045, -0.1447438858, -0.06740622799,
    -0.1427086843, -0.04589124048, -0.03513374673, 0.08523388611, 0.05296140484, -1.323758129,  -1.361409357,
    -1.447905422,  -1.507071638,   -1.394117953,   -1.410254194,  -1.475235271,  -1.512886499};
const std::vector<double> kDepthwise = {
    0.8239747132,  1.522848378,   0.5041573313,  0.2632040083,   0.2901340856,  -0.6037918397,  -1.878191421,
    -2.917670598,  -2.714368503,  0.9591564915,  1.675867637,    0.6218945251,  0.3638895137,   -0.7350534977,
    -1.355834163,  -1.830232565,  -2.548607626,  -2.043616372,   -1.161945857,  -1.350420055,   -0.8520137396,
    -0.5007234198, -0.2206288105, -0.423095019,  -0.8130541676,  -0.920992534,  -1.01948175,    -1.092849194,
    -1.256885258,  -0.7210752386, -0.3802359537, -0.09619273908, -0.3287744295, -0.7518940045,  -0.879005698,
    -0.9757661718, -1.386835625,  -1.215442583,  -0.7405137705,  -2.583461434,  -2.709607585,   -1.561208784,
    -0.6271239715, -0.2431250559, -0.203802055,  -1.304537655,   -1.141749036,  -0.6756603846,  -2.443172007,
    -2.555468573,  -1.447086234,  -0.5527625012, -0.1813362591,  -0.1468851693, -2.477412897,   -1.999213226,
    -1.183896959,  -1.278897259,  1.442130832,   1.594225803,    -0.3395790708, -0.4998511906,  -1.029221643,
    -2.461200042,  -1.945360929,  -1.105842266,  -1.198092293,   3.467399942,   -0.09741955699, -0.2520162934,
    -1.070391256,  -1.317874511,  -0.5016683348, -0.3967827707,  -0.6319212322, -1.380802706,   -1.595916238,
    -1.376732303,  -0.5932524033, -0.4813890054, -0.6531454766,  -0.4722541723, -0.4024149356,  -0.6199516541,
    -1.28019578,   -1.501300977,  -1.302292254,  -0.4924883187,  -0.3799962871, -0.5698259765,  0.5948691705,
    1.646995671,   1.094365772,   -0.1612808804, -1.991762934,   -1.852824088,  -1.726132793,   -1.781737406,
    -1.156276367,  0.6374846402,  1.661165467,   1.119536658,    -0.1201584157, -1.907087943,   -1.758582077,
    -1.612167401,  -1.660542727,  -1.05975556};
const std::vector<double> kDilated = {
    0.04376567287,  -0.0853242522,  0.433870193,   0.2079628242,  -0.09128448522, -0.4042694049,  -0.5030493644,
    -0.8598638026,  -0.9889537277,  -0.9274615674, -1.153368936,  -1.379276305,   -1.315748943,   -1.487868843,
    1.344986303,    1.054533971,    2.171205435,   1.173738632,   1.056351115,    0.004006557435, 0.1623888473,
    -0.6881800171,  -0.9786323485,  -0.7773654552, -1.261452674,  -1.745539893,   -1.527555273,   -1.882552567,
    -0.08110847762, -0.371560809,   0.01440062235, -0.5430265372, -1.027113756,   -1.005598769,   -1.360596063,
    -1.652720167,   -1.910900017,   -2.322156096,  -2.741698352,  -3.161240609,   -2.511575209,   -2.812785034,
    0.06033802811,  -0.197841822,   0.2415436493,  0.1887010955,  -0.230841161,   -0.2929874931,  -0.5941973183,
    -2.555750476,   -2.497020375,   -3.220343961,  -3.164521291,  -1.82227642,    -2.440325475,   -0.9915232678,
    0.5748845131,   0.6336146142,   1.469720975,   1.525543645,   1.581366316,    0.6824594507,   0.6981595767,
    -4.539561194,   -4.548283486,   -5.08237655,   -4.150806272,  -2.339156708,   -2.048234865,   -0.1016805146,
    0.8384313232,   0.829709031,    0.1125499837,  0.1977377046,  0.2829254254,   -0.5016408321,  -0.4282282058,
    -1.862862582,   -1.871584874,   -3.031472938,  -1.659863017,  -1.574675296,   -0.9015284638,  -0.8281158375,
    -0.1494429225,  -0.2198027465,  0.4454115144,  0.4542791782,  0.463146842,    0.262793432,    0.296083514,
    -2.402120264,   -2.472480088,   -1.912732877,  -0.1774033697, -0.1685357059,  0.9021669199,   0.9354570019,
    -0.4060099344,  -0.1594598072,  0.24932692,    0.5868796294,  -0.4293833202,  0.2728751445,   -0.7307404814,
    -1.241110481,   -0.9945603542,  -1.009211448,  -0.6716587384, -0.3341060289,  -0.5700754655,  -0.3665553134,
    0.6997763439,   0.9727840909,   1.975240673,   0.5424882696,  -0.01018484777, -0.2312988849,  -0.7899322353,
    -2.511072302,   -2.238064555,   -2.739853705,  -2.378750807,  -2.017647908,   -1.660067323,   -1.451604538,
    -0.520731651,   -0.2477239041,  0.1268160392,  -0.8658967214, -0.5047938229,  -1.035317426,   -0.8268546412,
    -1.896908989,   -1.779448786,   -2.198319191,  -2.054401369,  -1.910483547,   -1.628843874,   -1.554413647,
    -0.1153218654,  0.002138336734, 0.4681739469,  -0.3016842471, -0.1577664253,  -0.6222029485,  -0.5477727214};

const std::vector<double> kConv3dDepth = {
    0.6422514515,   1.517170048,    1.729339807,    0.8387210841,  0.5894088977,   1.126920157,    0.8257103315,
    0.3546338651,   0.2092623279,   0.7983077967,   1.088687442,   0.4291367779,   0.1431909642,   1.302747031,
    2.179846201,    0.9996473758,   -0.7884225322,  -0.9976121743, -0.4138727665,  -0.369098333,   -0.5611341337,
    0.4602462869,   2.144084803,    1.008151611,    -0.5815588347, -1.416500259,   -1.803770034,   -1.060848793,
    -1.130191016,   -0.08475160621, 2.314896359,    1.112891803,   0.5724731136,   -0.1243653501,  -1.155994464,
    -0.4748561264,  -0.4659884626,  -0.7256947139,  -0.5105448388, -0.184403795,   0.6680548994,   0.3430041421,
    -0.3522352347,  -0.09768967302, 0.003634288431, -0.3492551182, -0.4577749708,  -0.1255283224,  0.797290196,
    0.8009244844,   0.3990448697,   0.2309953727,   0.4262293472,  -0.6980741218,  -1.760013201,   -0.7502625037,
    0.264503512,    0.5338042847,   0.6628942098,   0.301573254,   0.4904108809,   -0.1056851076,  -0.7099945879,
    -0.270463745,   -1.33873238,    -1.888794703,   -1.044301976,  -0.5099397789,  -0.6829319082,  -1.341441398,
    -1.490011109,   -0.7650668267,  -2.155610408,   -3.263934795,  -2.118232243,   -1.080413052,   -1.178538839,
    -0.6732096955,  1.059212381,    0.5332404789,   0.05991075366, 1.366557278,    2.805619592,    1.334557859,
    1.330342085,    1.390384459,    0.4092287352,   0.2346335901,  -0.01133701542, -0.05305668213, 0.005673418913,
    -0.04462709745, 0.1090306174,   -0.4239426922,  -0.6189291422, -0.2425209782};
const std::vector<double> kDeconv3dDepth = {0,
                                            0,
                                            0,
                                            0,
                                            0,
                                            0,
                                            0.7862419591,
                                            1.463455265,
                                            0.6879708,
                                            0.7324544904,
                                            1.377395315,
                                            0.6556983187,
                                            0.7568769086,
                                            1.426240152,
                                            0.680120737,
                                            0.6600594648,
                                            1.254120252,
                                            0.6048182807,
                                            0.6219721221,
                                            1.156430579,
                                            0.5452159504,
                                            0.6112146283,
                                            1.156430579,
                                            0.5559734442,
                                            0.6786670216,
                                            1.291335365,
                                            0.6234258374,
                                            0.6248795528,
                                            1.205275415,
                                            0.5911533562,
                                            0.563242021,
                                            1.082000352,
                                            0.5295158244,
                                            0.4664245772,
                                            0.9098804516,
                                            0.4542133681,
                                            0.6004571346,
                                            1.156430579,
                                            0.5667309379,
                                            0.5896996408,
                                            1.156430579,
                                            0.5774884317,
                                            0.571092084,
                                            1.119215465,
                                            0.5588808749,
                                            0.5173046153,
                                            1.033155515,
                                            0.5266083936,
                                            0,
                                            0,
                                            0,
                                            0,
                                            0,
                                            0,
                                            0,
                                            0,
                                            0,
                                            0,
                                            0,
                                            0,
                                            0.2934324479,
                                            0.5423812054,
                                            0.2597062513,
                                            0.3687349042,
                                            0.7145011055,
                                            0.3565236951,
                                            0.5222472475,
                                            1.021525792,
                                            0.5100360384,
                                            0.5545197288,
                                            1.107585742,
                                            0.5638235072,
                                            0.369004038,
                                            0.568359492,
                                            0.2101129478,
                                            0.1939767072,
                                            0.2398198179,
                                            0.05660060447,
                                            0.4440373605,
                                            0.8866210056,
                                            0.4533411389,
                                            0.5193398168,
                                            1.058740906,
                                            0.5501585827,
                                            0.5867922101,
                                            1.193645692,
                                            0.6176109759,
                                            0.6190646913,
                                            1.279705642,
                                            0.6713984447,
                                            0.01894937633,
                                            -0.08871985628,
                                            -0.09691173885,
                                            -0.1560779545,
                                            -0.4172595304,
                                            -0.2504240822,
                                            0.5946422731,
                                            1.230860806,
                                            0.6469760265,
                                            0.6699447293,
                                            1.402980706,
                                            0.7437934703,
                                            0,
                                            0,
                                            0,
                                            0,
                                            0,
                                            0,
                                            0,
                                            0,
                                            0,
                                            0,
                                            0,
                                            0,
                                            0.04046436384,
                                            -0.04568988126,
                                            -0.07539675134,
                                            -0.04850301695,
                                            -0.2021096553,
                                            -0.1428491446,
                                            -0.05926051071,
                                            -0.2236246428,
                                            -0.1536066384,
                                            -0.1912578665,
                                            -0.4661043669,
                                            -0.2640890067,
                                            -0.1238054732,
                                            -0.3527145679,
                                            -0.2181516009,
                                            -0.169742879,
                                            -0.4230743919,
                                            -0.2425740192,
                                            -0.1374703977,
                                            -0.3585294294,
                                            -0.2103015379,
                                            -0.2264377785,
                                            -0.5149492035,
                                            -0.2777539312,
                                            -0.3232552223,
                                            -0.708584091,
                                            -0.374571375,
                                            -0.4552525781,
                                            -0.9510638152,
                                            -0.4850537433,
                                            -0.2156802848,
                                            -0.4934342159,
                                            -0.2669964374,
                                            -0.2616176905,
                                            -0.56379404,
                                            -0.2914188557,
                                            -0.3154051593,
                                            -0.6713689775,
                                            -0.3452063244,
                                            -0.4043725401,
                                            -0.8277887516,
                                            -0.4126587177,
                                            0,
                                            0,
                                            0,
                                            0,
                                            0,
                                            0};

rensa::testing::TestFunction fn3(std::function<Variable(const Variable&, const Variable&, const Variable&)> f) {
  return [f](const std::vector<Variable>& v) { return std::vector<Variable>{f(v[0], v[1], v[2])}; };
}

}  // namespace

TEST(ConvolutionNd, MatchesChainer) {
  F::ConvNdOptions o1{.stride = 2, .pad = 1, .dilate = 2, .groups = 2};
  expect_values(F::convolution_1d(seq({2, 4, 7}), seq({6, 2, 3}, 5), seq({6}, 11), o1), {2, 6, 3}, kConv1d);
  F::ConvNdOptions o3{.stride = {2, 1, 2}, .pad = {1, 0, 1}, .cover_all = true, .dilate = {1, 2, 1}, .groups = 2};
  expect_values(F::convolution_3d(seq({1, 4, 4, 3, 4}), seq({4, 2, 3, 2, 3}, 5), seq({4}, 11), o3), {1, 4, 3, 1, 3},
                kConv3d);
  F::DeconvNdOptions d1{.stride = 2, .pad = 1, .outsize = std::vector<int64_t>{10}, .groups = 2};
  expect_values(F::deconvolution_1d(seq({2, 4, 5}), seq({4, 3, 3}, 5), seq({6}, 11), d1), {2, 6, 10}, kDeconv1d);
  F::DeconvNdOptions d3{.stride = {2, 1, 2}, .pad = {1, 0, 1}, .dilate = {1, 2, 1}, .groups = 2};
  expect_values(F::deconvolution_3d(seq({1, 4, 2, 2, 2}), seq({4, 1, 3, 2, 2}, 5), seq({2}, 11), d3), {1, 2, 3, 4, 2},
                kDeconv3d);
  // Stride, pad and dilate on the first spatial axis, the one the N-d functions take apart.
  expect_values(F::convolution_3d(seq({1, 2, 7, 2, 3}), seq({3, 2, 3, 1, 2}, 5), Variable(),
                                  {.stride = {2, 1, 1}, .pad = {2, 0, 1}, .dilate = {2, 1, 1}}),
                {1, 3, 4, 2, 4}, kConv3dDepth);
  expect_values(
      F::deconvolution_3d(
          seq({1, 2, 3, 2, 2}), seq({2, 3, 3, 1, 2}, 5), Variable(),
          {.stride = {3, 1, 1}, .pad = {1, 0, 0}, .outsize = std::vector<int64_t>{9, 2, 3}, .dilate = {2, 1, 1}}),
      {1, 3, 9, 2, 3}, kDeconv3dDepth);
  expect_values(F::depthwise_convolution_2d(seq({2, 3, 5, 5}), seq({2, 3, 3, 3}, 5), seq({6}, 11), 2, 1), {2, 6, 3, 3},
                kDepthwise);
  expect_values(F::dilated_convolution_2d(seq({1, 2, 7, 7}), seq({3, 2, 3, 3}, 5), seq({3}, 11), 1, 2, 2), {1, 3, 7, 7},
                kDilated);
}

// Each case's accumulation is the length of one output's sum: C / groups times the kernel's taps
// (the N-d cases sum several 2-d convolutions, in a different order on each backend).
TEST(ConvolutionNd, Conforms) {
  expect_conforms({.name = "convolution_1d",
                   .f = fn3([](const Variable& x, const Variable& W, const Variable& b) {
                     return F::convolution_1d(x, W, b, {.stride = 2, .pad = 1, .dilate = 2, .groups = 2});
                   }),
                   .shapes = {{2, 4, 9}, {6, 2, 3}, {6}},
                   .batched = {true, false, false},
                   .accumulation = 2 * 3 + 1});
  expect_conforms({.name = "convolution_3d",
                   .f = fn3([](const Variable& x, const Variable& W, const Variable& b) {
                     return F::convolution_3d(
                         x, W, b,
                         {.stride = {2, 1, 2}, .pad = {1, 0, 1}, .cover_all = true, .dilate = {1, 2, 1}, .groups = 2});
                   }),
                   .shapes = {{2, 4, 4, 3, 4}, {4, 2, 3, 2, 3}, {4}},
                   .batched = {true, false, false},
                   .big_leading = 40,
                   .accumulation = 2 * 3 * 2 * 3});  // C / groups * kd * kh * kw
  expect_conforms({.name = "convolution_nd (4 spatial axes)",
                   .f = binary_fn([](const Variable& x, const Variable& W) {
                     return F::convolution_nd(x, W, Variable(), {.stride = {1, 2, 1, 1}, .pad = {0, 1, 1, 0}});
                   }),
                   .shapes = {{2, 2, 3, 4, 3, 2}, {2, 2, 2, 2, 2, 2}},
                   .batched = {true, false},
                   .big_leading = 20,
                   .accumulation = 2 * 16});  // C * 2^4
  expect_conforms({.name = "deconvolution_1d",
                   .f = fn3([](const Variable& x, const Variable& W, const Variable& b) {
                     return F::deconvolution_1d(
                         x, W, b, {.stride = 2, .pad = 1, .outsize = std::vector<int64_t>{10}, .groups = 2});
                   }),
                   .shapes = {{2, 4, 5}, {4, 3, 3}, {6}},
                   .batched = {true, false, false},
                   .accumulation = 2 * 3 + 1});
  expect_conforms({.name = "deconvolution_3d",
                   .f = fn3([](const Variable& x, const Variable& W, const Variable& b) {
                     return F::deconvolution_3d(x, W, b,
                                                {.stride = {2, 1, 2},
                                                 .pad = {1, 0, 1},
                                                 .outsize = std::vector<int64_t>{4, 4, 3},
                                                 .dilate = {1, 2, 1},
                                                 .groups = 2});
                   }),
                   .shapes = {{2, 4, 2, 2, 2}, {4, 1, 3, 2, 2}, {2}},
                   .batched = {true, false, false},
                   .big_leading = 40,
                   .accumulation = 2 * 3 * 2 * 2});  // C / groups * kd * kh * kw
  expect_conforms({.name = "depthwise_convolution_2d",
                   .f = fn3([](const Variable& x, const Variable& W, const Variable& b) {
                     return F::depthwise_convolution_2d(x, W, b, 2, 1);
                   }),
                   .shapes = {{2, 3, 5, 5}, {2, 3, 3, 3}, {6}},
                   .batched = {true, false, false},
                   .accumulation = 3 * 3 + 1});
  expect_conforms({.name = "dilated_convolution_2d",
                   .f = fn3([](const Variable& x, const Variable& W, const Variable& b) {
                     return F::dilated_convolution_2d(x, W, b, 1, 2, 2);
                   }),
                   .shapes = {{2, 2, 6, 6}, {3, 2, 3, 3}, {3}},
                   .batched = {true, false, false},
                   .accumulation = 2 * 3 * 3 + 1});
}

// Where the N-d functions and the 2-d ones compute the same thing, they agree.
TEST(ConvolutionNd, AgreesWith2d) {
  const Array x = randn({2, 4, 9}), W = randn({6, 2, 3}, Dtype::float64, 2), b = randn({6}, Dtype::float64, 3);
  const Variable y1 = F::convolution_1d(x, W, b, {.stride = 2, .pad = 1, .dilate = 2, .groups = 2});
  const Variable y2 = F::convolution_2d(x.reshape({2, 4, 1, 9}), W.reshape({6, 2, 1, 3}), b,
                                        {.stride = {1, 2}, .pad = {0, 1}, .dilate = {1, 2}, .groups = 2});
  EXPECT_TRUE(allclose(y1.array(), y2.array().reshape(y1.shape()), 1e-12, 1e-12));
  // A 3-d convolution of one plane with a kernel one plane deep is a 2-d one.
  const Array x3 = randn({2, 3, 1, 5, 6}), W3 = randn({4, 3, 1, 3, 2}, Dtype::float64, 4);
  const Variable y3 = F::convolution_3d(x3, W3, b.index({Slice{0, 4}}), {.stride = {1, 2, 1}, .pad = {0, 1, 1}});
  const Variable y3_2d = F::convolution_2d(x3.reshape({2, 3, 5, 6}), W3.reshape({4, 3, 3, 2}), b.index({Slice{0, 4}}),
                                           {.stride = {2, 1}, .pad = {1, 1}});
  EXPECT_TRUE(allclose(y3.array(), y3_2d.array().reshape(y3.shape()), 1e-12, 1e-12));
  const Array x4 = randn({2, 3, 5, 6}), W4 = randn({3, 3, 3, 3}, Dtype::float64, 5);
  EXPECT_TRUE(allclose(F::convolution_nd(x4, W4, Variable(), {.stride = 2, .pad = 1}).array(),
                       F::convolution_2d(x4, W4, Variable(), {.stride = 2, .pad = 1}).array(), 1e-12, 1e-12));
  EXPECT_TRUE(allclose(F::deconvolution_nd(x4.index({Slice{}, Slice{0, 3}}), W4, Variable(), {.stride = 2}).array(),
                       F::deconvolution_2d(x4.index({Slice{}, Slice{0, 3}}), W4, Variable(), {.stride = 2}).array(),
                       1e-12, 1e-12));
  // deconvolution_1d is the transpose of convolution_1d: <conv(x), y> = <x, deconv(y)>.
  const Array xa = randn({2, 4, 10}), ya = randn({2, 6, 5}, Dtype::float64, 6),
              Wa = randn({6, 2, 3}, Dtype::float64, 7);
  const double lhs = F::sum(F::convolution_1d(xa, Wa, Variable(), {.stride = 2, .pad = 1, .groups = 2}) * Variable(ya))
                         .array()
                         .item<double>();
  const Variable back = F::deconvolution_1d(ya, Wa, Variable(),
                                            {.stride = 2, .pad = 1, .outsize = std::vector<int64_t>{10}, .groups = 2});
  const double rhs = F::sum(back * Variable(xa)).array().item<double>();
  EXPECT_NEAR(lhs, rhs, 1e-9 * (1 + std::abs(lhs)));
  // Depthwise: output channel c M + m is channel c convolved with W[m, c].
  const Array xd = randn({1, 2, 4, 4}), Wd = randn({3, 2, 3, 3}, Dtype::float64, 8);
  const Variable yd = F::depthwise_convolution_2d(xd, Wd);
  for (int64_t c = 0; c < 2; ++c) {
    for (int64_t m = 0; m < 3; ++m) {
      const Variable one =
          F::convolution_2d(xd.index({Slice{}, Slice{c, c + 1}}), Wd.index({Slice{m, m + 1}, Slice{c, c + 1}}));
      EXPECT_TRUE(allclose(yd.array().index({Slice{}, Slice{c * 3 + m, c * 3 + m + 1}}), one.array(), 1e-12, 1e-12))
          << "c " << c << " m " << m;
    }
  }
}

TEST(ConvolutionNd, Errors) {
  const Array x3 = Array::zeros({2, 4, 5, 5, 5}, Dtype::float64);
  const Array W3 = Array::zeros({6, 4, 3, 3, 3}, Dtype::float64);
  expect_error<ShapeError>(
      [&] {
        F::convolution_3d(Array::zeros({2, 4, 5, 5}, Dtype::float64), W3);
      },
      {"convolution_3d", "(2, 4, 5, 5)", "5 axes"});
  expect_error<ShapeError>([&] { F::convolution_1d(x3, W3); }, {"convolution_1d", "(2, 4, 5, 5, 5)", "3 axes"});
  expect_error<ShapeError>(
      [&] {
        F::convolution_nd(x3, Array::zeros({6, 4, 3, 3}, Dtype::float64));
      },
      {"convolution_nd", "(6, 4, 3, 3)", "(2, 4, 5, 5, 5)"});
  expect_error<ShapeError>(
      [&] {
        F::convolution_nd(x3, Array::zeros({6, 3, 3, 3, 3}, Dtype::float64));
      },
      {"convolution_nd", "(6, 3, 3, 3, 3)", "4 channels"});
  expect_error<ShapeError>([&] { F::convolution_nd(x3, W3, Array::zeros({5}, Dtype::float64)); },
                           {"convolution_nd", "b (5,)", "6 output channels"});
  expect_error<ShapeError>(
      [&] {
        F::convolution_nd(x3, Array::zeros({6, 4, 3, 3, 9}, Dtype::float64));
      },
      {"convolution_nd", "spatial axis 2", "(2, 4, 5, 5, 5)"});
  expect_error<ValueError>(
      [&] {
        F::convolution_nd(x3, W3, Variable(), {.stride = {1, 2}});
      },
      {"convolution_nd", "stride (1, 2)", "3 spatial axes"});
  expect_error<ValueError>([&] { F::convolution_nd(x3, W3, Variable(), {.pad = -1}); }, {"convolution_nd", "pad (-1)"});
  expect_error<ShapeError>(
      [&] {
        F::convolution_nd(x3, Array::zeros({6, 2, 3, 3, 3}, Dtype::float64), Variable(), {.groups = 3});
      },
      {"convolution_nd", "groups 3"});
  expect_error<DtypeError>([&] { F::convolution_nd(x3, W3.astype(Dtype::float32)); }, {"convolution_nd", "float32"});
  const Array xd = Array::zeros({2, 4, 3, 3, 3}, Dtype::float64), Wd = Array::zeros({4, 2, 3, 3, 3}, Dtype::float64);
  expect_error<ShapeError>(
      [&] {
        F::deconvolution_3d(xd, Wd, Variable(), {.outsize = std::vector<int64_t>{9, 5, 5}});
      },
      {"deconvolution_3d", "outsize (9, 5, 5)", "(2, 4, 3, 3, 3)"});
  expect_error<ValueError>(
      [&] {
        F::deconvolution_3d(xd, Wd, Variable(), {.outsize = std::vector<int64_t>{5, 5}});
      },
      {"deconvolution_3d", "outsize (5, 5)"});
  expect_error<ShapeError>([&] { F::deconvolution_1d(xd, Wd); }, {"deconvolution_1d", "(2, 4, 3, 3, 3)", "3 axes"});
  expect_error<ShapeError>(
      [&] {
        F::deconvolution_nd(xd, Array::zeros({3, 2, 3, 3, 3}, Dtype::float64));
      },
      {"deconvolution_nd", "4 channels", "(3, 2, 3, 3, 3)"});
  expect_error<ShapeError>([&] { F::deconvolution_nd(xd, Wd, Variable(), {.pad = 4}); },
                           {"deconvolution_nd", "empty", "(2, 4, 3, 3, 3)"});
  const Array x2 = Array::zeros({2, 3, 5, 5}, Dtype::float64);
  expect_error<ShapeError>(
      [&] {
        F::depthwise_convolution_2d(x2, Array::zeros({2, 4, 3, 3}, Dtype::float64));
      },
      {"depthwise_convolution_2d", "(2, 3, 5, 5)", "(2, 4, 3, 3)"});
  expect_error<ShapeError>(
      [&] {
        F::depthwise_convolution_2d(x2, Array::zeros({2, 3, 3, 3}, Dtype::float64), Array::zeros({3}, Dtype::float64));
      },
      {"depthwise_convolution_2d", "b (3,)", "6"});
  expect_error<ShapeError>(
      [&] {
        F::dilated_convolution_2d(x2, Array::zeros({2, 4, 3, 3}, Dtype::float64));
      },
      {"dilated_convolution_2d", "(2, 3, 5, 5)", "(2, 4, 3, 3)"});
}
