// The distance, likelihood and covariance losses: Chainer 7.8.1's values on the same inputs, the
// shared conformance checks, and errors.
#include <vector>

#include "tests/unit/functions/conformance.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
using rensa::test::expect_conforms;
using rensa::test::expect_error;
using rensa::test::FunctionCase;
using rensa::test::randn;
using rensa::testing::TestFunction;
using Vars = std::vector<Variable>;

namespace {

Variable m(const std::vector<double>& v, const Shape& shape) { return Variable(Array::from_vector(v, shape)); }

const Variable a = m({0.5, -1.0, 2.0, 1.5, 0.25, -0.75}, {2, 3});
const Variable b = m({1.0, 1.0, -1.0, 0.0, 0.5, -0.5}, {2, 3});
const Variable c = m({0.0, 0.0, 1.0, 1.0, 0.5, 0.0}, {2, 3});

void expect_values(const Variable& v, const std::vector<double>& want, double tol = 1e-12) {
  const auto got = v.array().to_vector<double>();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

Array labels(const std::vector<int32_t>& v) { return Array::from_vector(v); }

// Labels 0/1 or 0..k-1, as int32, for a batch of n (constant input i of a FunctionCase).
Array label_input(const Shape& shape, int64_t k, uint64_t seed) {
  std::vector<int32_t> v;
  for (int64_t i = 0; i < shape[0]; ++i) v.push_back(static_cast<int32_t>((static_cast<uint64_t>(i) * 7 + seed) % static_cast<uint64_t>(k)));
  return Array::from_vector(v, shape);
}

}  // namespace

TEST(LossFamily, KnownValuesFromChainer) {
  expect_values(F::absolute_error(a, b), {0.5, 2.0, 3.0, 1.5, 0.25, 0.25});
  expect_values(F::squared_error(a, b), {0.25, 4.0, 9.0, 2.25, 0.0625, 0.0625});
  expect_values(F::mean_absolute_error(a, b), {1.25});
  expect_values(F::huber_loss(a, b, 1.0), {4.125, 1.0625});
  expect_values(F::huber_loss(a, b, 0.5, "no"), {0.125, 0.875, 1.375, 0.625, 0.03125, 0.03125});
  expect_values(F::hinge(a, labels({2, 0})), {1.5});
  expect_values(F::hinge(a, labels({2, 0}), "L2", "no"), {2.25, 0.0, 0.0, 0.0, 1.5625, 0.0625});
  expect_values(F::contrastive(a, b, labels({1, 0}), 3.0), {3.844594748886634});
  expect_values(F::contrastive(a, b, labels({1, 0}), 3.0, "no"), {6.625, 1.0641894977732678});
  expect_values(F::triplet(a, b, c, 0.5), {6.75});
  expect_values(F::triplet(a, b, c, 5.0, "no"), {16.0, 6.5});
  expect_values(F::gaussian_kl_divergence(a, b), {5.092347514251148});
  expect_values(F::gaussian_kl_divergence(a, b, "no"),
                {0.48414091422952255, 0.8591409142295225, 2.1839397205857214, 1.125, 0.1056106353500641,
                 0.3345153298563167});
  expect_values(F::gaussian_nll(a, b, c), {11.008157138933418});
  expect_values(F::gaussian_nll(a, b, c, "no"),
                {1.0439385332046727, 2.9189385332046727, 3.0743960184761634, 1.8328029045225454,
                 1.1878926163206924, 0.9501885332046727});
  const Variable x01 = m({0.0, 1.0, 0.5, 1.0, 0.0, 0.25}, {2, 3});
  expect_values(F::bernoulli_nll(x01, a), {5.015990386717798});
  expect_values(F::bernoulli_nll(x01, a, "no"),
                {0.9740769841801067, 1.3132616875182228, 1.1269280110429727, 0.20141327798275244,
                 0.8259394198788436, 0.5743710061148999});
  const Variable z = m({1.0, 2.0, 0.5, -1.0}, {2, 2});
  expect_values(F::cross_covariance(a, z), {2.9267578125});
  expect_values(F::cross_covariance(a, z, "no"), {-0.125, -0.75, -0.15625, -0.9375, 0.34375, 2.0625});
  const Variable h = m({1.0, 2.0, 0.5, 0.5, -1.0, 3.0, 2.0, 0.0, 1.0}, {3, 3});
  expect_values(F::decov(h), {1.547067901234568});
  expect_values(F::decov(h, "no"), {0.0, 1.0 / 9, -5.0 / 12, 1.0 / 9, 0.0, -7.0 / 6, -5.0 / 12, -7.0 / 6, 0.0});
}

// Regressions: Chainer's reductions where rensa's differed (values from Chainer 7.8.1).
TEST(LossFamily, ReductionsAsChainer) {
  // triplet's mean divides the sum over every element by the batch size, for inputs of 3 axes too.
  const Variable z = m({0.0, 0.0}, {1, 1, 2});
  expect_values(F::triplet(z, z, z, 0.5), {1.0});
  std::vector<double> av(12), pv(12), nv(12);
  for (std::size_t i = 0; i < av.size(); ++i) {
    av[i] = static_cast<double>(i) * 0.1;
    pv[i] = av[i] * 0.5 + 0.05;
    nv[i] = av[i] * 0.9 - 0.1;
  }
  const Variable A(Array::from_vector(av, {2, 3, 2}), true), P(Array::from_vector(pv, {2, 3, 2}), true),
      N(Array::from_vector(nv, {2, 3, 2}), true);
  const Variable t = F::triplet(A, P, N, 1.0);
  expect_values(t, {2.3312000000000004});
  t.backward();
  expect_values(A.grad(), {-0.15, -0.11, -0.07, -0.03, 0.01, 0.05, 0.09, 0.13, 0.17, 0.21, 0.25, 0.29});
  expect_values(P.grad(), {0.05, 0.0, -0.05, -0.1, -0.15, -0.2, -0.25, -0.3, -0.35, -0.4, -0.45, -0.5});
  expect_values(N.grad(), {0.1, 0.11, 0.12, 0.13, 0.14, 0.15, 0.16, 0.17, 0.18, 0.19, 0.2, 0.21});
  // The VAE losses take reduce="mean": the mean over every element.
  const Variable mu = m({0.5, -1.0, 0.2, 0.3}, {2, 2}), ln_var = m({0.1, -0.2, 0.3, 0.0}, {2, 2});
  const Variable x = m({0.4, -0.8, 0.0, 1.0}, {2, 2});
  expect_values(F::gaussian_kl_divergence(mu, ln_var, "mean"), {0.1817200598412041});
  expect_values(F::gaussian_nll(x, mu, ln_var, "mean"), {1.0161306848714269});
  expect_values(F::bernoulli_nll(m({1.0, 0.0, 0.0, 1.0}, {2, 2}), m({0.3, -1.2, 2.0, 0.5}, {2, 2}), "mean"),
                {0.8546606767574094});
  expect_error<ValueError>([&] { F::gaussian_nll(x, mu, ln_var, "average"); }, {"gaussian_nll", "reduce", "average"});
}

TEST(LossFamily, Conforms) {
  auto bin = [](auto f) { return rensa::test::binary_fn(f); };
  std::vector<FunctionCase> cases{
      {.name = "absolute_error", .f = bin([](const Variable& x, const Variable& y) { return F::absolute_error(x, y); }),
       .shapes = {{3, 4}, {3, 4}}, .lo = -2, .hi = 2},
      {.name = "squared_error", .f = bin([](const Variable& x, const Variable& y) { return F::squared_error(x, y); }),
       .shapes = {{3, 4}, {3, 4}}},
      {.name = "mean_absolute_error",
       .f = bin([](const Variable& x, const Variable& y) { return F::mean_absolute_error(x, y); }),
       .shapes = {{3, 4}, {3, 4}}, .size_zero = false},
      {.name = "huber_loss", .f = bin([](const Variable& x, const Variable& y) { return F::huber_loss(x, y, 0.7); }),
       .shapes = {{3, 4}, {3, 4}}},
      {.name = "huber_loss_no", .f = bin([](const Variable& x, const Variable& y) { return F::huber_loss(x, y, 0.7, "no"); }),
       .shapes = {{3, 4}, {3, 4}}},
      {.name = "gaussian_kl_divergence",
       .f = bin([](const Variable& x, const Variable& y) { return F::gaussian_kl_divergence(x, y); }),
       .shapes = {{3, 4}, {3, 4}}},
      {.name = "bernoulli_nll", .f = bin([](const Variable& x, const Variable& y) { return F::bernoulli_nll(x, y, "no"); }),
       .shapes = {{3, 4}, {3, 4}}, .lo = 0, .hi = 1},
      {.name = "gaussian_nll",
       .f = [](const Vars& v) { return Vars{F::gaussian_nll(v[0], v[1], v[2])}; },
       .shapes = {{3, 4}, {3, 4}, {3, 4}}},
      {.name = "triplet",
       .f = [](const Vars& v) { return Vars{F::triplet(v[0], v[1], v[2], 3.0)}; },
       .shapes = {{3, 4}, {3, 4}, {3, 4}}, .size_zero = false},
      {.name = "triplet_3d",
       .f = [](const Vars& v) { return Vars{F::triplet(v[0], v[1], v[2], 3.0)}; },
       .shapes = {{3, 4, 2}, {3, 4, 2}, {3, 4, 2}}, .size_zero = false, .broadcast = false},
      {.name = "gaussian_kl_divergence_mean",
       .f = bin([](const Variable& x, const Variable& y) { return F::gaussian_kl_divergence(x, y, "mean"); }),
       .shapes = {{3, 4}, {3, 4}}, .size_zero = false},
      {.name = "cross_covariance",
       .f = bin([](const Variable& x, const Variable& y) { return F::cross_covariance(x, y); }),
       .shapes = {{5, 3}, {5, 2}}, .size_zero = false, .broadcast = false},
      {.name = "decov", .f = rensa::test::unary_fn([](const Variable& x) { return F::decov(x); }),
       .shapes = {{5, 3}}, .size_zero = false, .broadcast = false},
  };
  for (const auto& fc : cases) expect_conforms(fc);

  FunctionCase hinge{.name = "hinge", .f = [](const Vars& v) { return Vars{F::hinge(v[0], v[1].array(), "L2")}; },
                     .shapes = {{4, 3}, {4}}, .lo = -0.5, .hi = 0.5, .no_grads = {false, true},
                     .batched = {true, true}};
  hinge.make_input = [](std::size_t i, const Shape& s, Dtype, uint64_t seed) {
    return i == 1 ? label_input(s, 3, seed) : Array();
  };
  expect_conforms(hinge);
  FunctionCase con{.name = "contrastive",
                   .f = [](const Vars& v) { return Vars{F::contrastive(v[0], v[1], v[2].array(), 4.0)}; },
                   .shapes = {{4, 3}, {4, 3}, {4}}, .size_zero = false, .no_grads = {false, false, true},
                   .batched = {true, true, true}};
  con.make_input = [](std::size_t i, const Shape& s, Dtype, uint64_t seed) {
    return i == 2 ? label_input(s, 2, seed) : Array();
  };
  expect_conforms(con);
}

TEST(LossFamily, Errors) {
  const Variable x(randn({2, 3}));
  const Variable x4(randn({2, 4}));
  const Variable x32(randn({2, 3}, Dtype::float32));
  expect_error<ShapeError>([&] { F::absolute_error(x, x4); }, {"absolute_error", "x0 (2, 3)", "x1 (2, 4)"});
  expect_error<DtypeError>([&] { F::squared_error(x, x32); }, {"squared_error"});
  expect_error<DtypeError>([&] { F::mean_absolute_error(Variable(Array::zeros({2}, Dtype::int32)), x); },
                           {"mean_absolute_error", "int32"});
  expect_error<ValueError>([&] { F::huber_loss(x, x, 0.0); }, {"huber_loss", "delta", "0"});
  expect_error<ValueError>([&] { F::huber_loss(x, x, 1.0, "mean"); },
                           {"huber_loss", "unknown reduce 'mean'", "\"sum_along_second_axis\", \"no\""});
  expect_error<ShapeError>([&] { F::huber_loss(Variable(randn({3})), Variable(randn({3})), 1.0); },
                           {"huber_loss", "at least 2 axes", "(3,)"});
  expect_error<IndexError>([&] { F::hinge(x, labels({0, 3})); }, {"hinge", "label 3 at 1", "[0, 3)"});
  expect_error<IndexError>([&] { F::hinge(x, labels({-1, 0})); }, {"hinge", "label -1 at 0"});
  expect_error<ShapeError>([&] { F::hinge(x, labels({0})); }, {"hinge", "t (1,)", "(2,)"});
  expect_error<DtypeError>([&] { F::hinge(x, Array::zeros({2})); }, {"hinge", "int32 or int64", "float32"});
  expect_error<ValueError>([&] { F::hinge(x, labels({0, 1}), "L3"); }, {"hinge", "unknown norm 'L3'", "\"L1\", \"L2\""});
  expect_error<ShapeError>([&] { F::hinge(Variable(randn({2, 3, 1})), labels({0, 1})); }, {"hinge", "(N, K)"});
  expect_error<ValueError>([&] { F::contrastive(x, x, labels({0, 1}), 0.0); }, {"contrastive", "margin", "0"});
  expect_error<ValueError>([&] { F::contrastive(x, x, labels({0, 2})); }, {"contrastive", "0 or 1", "2"});
  expect_error<ShapeError>([&] { F::contrastive(Variable(randn({0, 3})), Variable(randn({0, 3})), labels({})); },
                           {"contrastive", "N > 0", "(0, 3)"});
  expect_error<ValueError>([&] { F::triplet(x, x, x, -1.0); }, {"triplet", "margin", "-1"});
  expect_error<ShapeError>([&] { F::triplet(x, x, x4); }, {"triplet", "anchor (2, 3)", "negative (2, 4)"});
  expect_error<ShapeError>([&] { F::triplet(Variable(randn({3})), Variable(randn({3})), Variable(randn({3}))); },
                           {"triplet", "at least 2 axes"});
  expect_error<ValueError>([&] { F::gaussian_kl_divergence(x, x, "average"); },
                           {"gaussian_kl_divergence", "unknown reduce 'average'", "\"sum\", \"mean\", \"no\""});
  expect_error<ShapeError>([&] { F::gaussian_nll(x, x, x4); }, {"gaussian_nll", "x (2, 3)", "ln_var (2, 4)"});
  expect_error<ShapeError>([&] { F::bernoulli_nll(x, x4); }, {"bernoulli_nll", "y (2, 4)"});
  expect_error<ShapeError>([&] { F::cross_covariance(x, Variable(randn({3, 3}))); },
                           {"cross_covariance", "(2, 3)", "(3, 3)"});
  expect_error<ShapeError>([&] { F::decov(Variable(randn({2}))); }, {"decov", "(N, K)", "(2,)"});
  expect_error<ValueError>([&] { F::decov(x, "sum"); }, {"decov", "unknown reduce 'sum'", "\"half_squared_sum\""});
}

// ---- crf1d and argmax_crf1d (Chainer 7.8.1's values on the same inputs) -------------------------

namespace {

Variable sin_arr(const Shape& shape, double off) {
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = std::sin(0.37 * static_cast<double>(k) + off);
  return Variable(Array::from_vector(v, shape));
}

const std::vector<Array> crf_labels{Array::from_vector<int32_t>({0, 2, 1}), Array::from_vector<int32_t>({1, 1}),
                                    Array::from_vector<int32_t>({2, 0}), Array::from_vector<int32_t>({1})};

std::vector<Variable> crf_inputs() {
  return {sin_arr({3, 3}, 0.2), sin_arr({2, 3}, 0.3), sin_arr({2, 3}, 0.4), sin_arr({1, 3}, 0.5)};
}

}  // namespace

TEST(Crf1d, MatchesChainer) {
  const Variable cost = sin_arr({3, 3}, 0.1);
  expect_values(F::crf1d(cost, crf_inputs(), crf_labels), {2.97736672133101});
  expect_values(F::crf1d(cost, crf_inputs(), crf_labels, "no"), {4.62633757362382, 3.18486269157285, 1.12089989879635});
  auto [score, path] = F::argmax_crf1d(cost, crf_inputs());
  expect_values(score, {5.73141228184877, 4.9247312962752, 0.660581201279201});
  ASSERT_EQ(path.size(), 4u);
  const std::vector<std::vector<int64_t>> want{{1, 1, 0}, {1, 1}, {1, 1}, {2}};
  for (std::size_t t = 0; t < 4; ++t) EXPECT_EQ(path[t].to_vector<int64_t>(), want[t]) << "step " << t;
}

TEST(Crf1d, GradientsAndErrors) {
  // Gradients reach the transition costs and every step's scores.
  const TestFunction f = [](const Vars& v) {
    return Vars{F::crf1d(v[0], {v[1], v[2], v[3], v[4]}, crf_labels, "no")};
  };
  std::vector<Array> inputs{sin_arr({3, 3}, 0.1).array()};
  for (const auto& x : crf_inputs()) inputs.push_back(x.array());
  rensa::testing::check_backward(f, inputs);
  rensa::testing::check_double_backward(f, inputs, {randn({3})});
  const Variable cost = sin_arr({3, 3}, 0.1);
  expect_error<ShapeError>([&] { F::crf1d(Variable(randn({3, 2})), crf_inputs(), crf_labels); },
                           {"crf1d", "cost must be (K, K)", "(3, 2)"});
  expect_error<ShapeError>([&] { F::crf1d(cost, {sin_arr({1, 3}, 0), sin_arr({2, 3}, 0)}, {crf_labels[3], crf_labels[1]}); },
                           {"crf1d", "xs[1] (2, 3)", "at most 1"});
  auto bad = crf_labels;
  bad[2] = Array::from_vector<int32_t>({3, 0});
  expect_error<IndexError>([&] { F::crf1d(cost, crf_inputs(), bad); }, {"crf1d", "label 3 at step 2", "[0, 3)"});
  expect_error<ValueError>([&] { F::crf1d(cost, crf_inputs(), {crf_labels[0]}); }, {"crf1d", "4 steps of xs but 1"});
  expect_error<ValueError>([&] { F::crf1d(cost, crf_inputs(), crf_labels, "sum"); }, {"crf1d", "unknown reduce 'sum'"});
}

// ---- connectionist_temporal_classification (Chainer 7.8.1's values on the same inputs) ---------

namespace {

std::vector<Variable> ctc_inputs() {
  std::vector<Variable> x;
  for (int i = 0; i < 5; ++i) x.push_back(sin_arr({3, 4}, 0.1 * i));
  return x;
}

const Array ctc_labels = Array::from_vector<int32_t>({1, 2, 3, 3, 2, 1}, {3, 2});

}  // namespace

TEST(Ctc, MatchesChainer) {
  expect_values(F::connectionist_temporal_classification(ctc_inputs(), ctc_labels, 0), {3.8797598042451});
  expect_values(F::connectionist_temporal_classification(ctc_inputs(), ctc_labels, 0, Array(), Array(), "no"),
                {4.11325213737709, 4.70999168989722, 2.81603558546099});
  expect_values(F::connectionist_temporal_classification(ctc_inputs(), ctc_labels, 0,
                                                         Array::from_vector<int32_t>({5, 4, 3}),
                                                         Array::from_vector<int32_t>({2, 2, 1}), "no"),
                {4.11325213737709, 4.45318631771268, 2.09655912902709});
}

TEST(Ctc, GradientsAndErrors) {
  const TestFunction f = [](const Vars& v) {
    return Vars{F::connectionist_temporal_classification(v, ctc_labels, 0, Array::from_vector<int32_t>({5, 4, 3}),
                                                         Array::from_vector<int32_t>({2, 2, 1}), "no")};
  };
  std::vector<Array> inputs;
  for (const auto& x : ctc_inputs()) inputs.push_back(x.array());
  rensa::testing::check_backward(f, inputs);
  rensa::testing::check_double_backward(f, inputs, {randn({3})});
  const auto x = ctc_inputs();
  expect_error<ValueError>([&] { F::connectionist_temporal_classification(x, ctc_labels, 4); },
                           {"connectionist_temporal_classification", "blank_symbol 4", "[0, 4)"});
  expect_error<IndexError>([&] { F::connectionist_temporal_classification(x, ctc_labels, 1); },
                           {"connectionist_temporal_classification", "label 1 of sequence 0", "blank"});
  expect_error<ShapeError>([&] { F::connectionist_temporal_classification(x, Array::zeros({2, 2}, Dtype::int32), 0); },
                           {"connectionist_temporal_classification", "t (2, 2)", "(3, L)"});
  expect_error<ValueError>(
      [&] { F::connectionist_temporal_classification(x, ctc_labels, 0, Array::from_vector<int32_t>({6, 1, 1})); },
      {"connectionist_temporal_classification", "input_length 6", "[1, 5]"});
  expect_error<ValueError>([&] { F::connectionist_temporal_classification(x, ctc_labels, 0, Array(), Array(), "sum"); },
                           {"connectionist_temporal_classification", "unknown reduce 'sum'"});
}

// ---- discriminative_margin_based_clustering_loss (Chainer 7.8.1's values, N == C) ----------------

TEST(DiscriminativeLoss, MatchesChainerAndDifferentiates) {
  const Variable e = sin_arr({3, 3, 2, 3}, 0.1);
  const Array labels = Array::from_vector<int32_t>({1, 1, 0, 2, 3, 3, 0, 2, 2, 1, 1, 0, 3, 3, 3, 1, 0, 2}, {3, 2, 3});
  const std::vector<std::vector<double>> want{{0.0963684055574046, 0.29230201793117, 0.00163010556976763},
                                              {0.0279860855381193, 0.881034438642219, 0.000645616065703749}};
  for (int norm : {1, 2}) {
    SCOPED_TRACE(norm);
    auto r = F::discriminative_margin_based_clustering_loss(e, labels, 0.1, 1.0, 3, norm);
    expect_values(r.variance, {want[static_cast<std::size_t>(norm - 1)][0]});
    expect_values(r.distance, {want[static_cast<std::size_t>(norm - 1)][1]});
    expect_values(r.regularization, {want[static_cast<std::size_t>(norm - 1)][2]});
  }
  // Gradients of the weighted sum (L2, whose masked pixels sit at the root's kink), and a batch
  // size other than C.
  const TestFunction f = [labels](const Vars& v) {
    auto r = F::discriminative_margin_based_clustering_loss(v[0], labels, 0.1, 1.0, 3, 2);
    return Vars{r.variance, r.distance, r.regularization};
  };
  rensa::testing::check_backward(f, {e.array()});
  const Array two = Array::from_vector<int32_t>({1, 1, 0, 2, 3, 3, 0, 2, 2, 1, 1, 0}, {2, 2, 3});
  auto r2 = F::discriminative_margin_based_clustering_loss(sin_arr({2, 3, 2, 3}, 0.4), two, 0.1, 1.0, 3);
  EXPECT_TRUE(std::isfinite(r2.variance.array().item<double>()));
  expect_error<ValueError>([&] { F::discriminative_margin_based_clustering_loss(e, labels, 0.1, 1.0, 3, 3); },
                           {"discriminative_margin_based_clustering_loss", "norm must be 1 or 2", "3"});
  expect_error<ShapeError>([&] { F::discriminative_margin_based_clustering_loss(e, labels, 0.1, 1.0, 4); },
                           {"discriminative_margin_based_clustering_loss", "(N, 4, H, W)", "(3, 3, 2, 3)"});
  expect_error<ValueError>(
      [&] { F::discriminative_margin_based_clustering_loss(e, Array::full({3, 2, 3}, 4.0, Dtype::int32), 0.1, 1.0, 3); },
      {"discriminative_margin_based_clustering_loss", "label 4", "[0, 3]"});
}

// ---- negative_sampling and black_out (Chainer 7.8.1's values with the same samples) -------------

TEST(SampledLosses, MatchChainer) {
  const Variable x = sin_arr({3, 4}, 0.1), W = sin_arr({6, 4}, 0.2);
  const Array t = Array::from_vector<int32_t>({1, 5, -1});
  const Array drawn = Array::from_vector<int32_t>({9, 2, 3, 0, 4, 4, 1, 2, 5}, {3, 3});
  Shape asked;
  const F::NegativeSampler sampler = [&](const Shape& shape) {
    asked = shape;
    return drawn;
  };
  expect_values(F::negative_sampling(x, t, W, sampler, 2), {2.99350416686187});
  EXPECT_EQ(asked, (Shape{3, 3}));
  Array used;
  expect_values(F::negative_sampling(x, t, W, sampler, 2, "no", &used), {0.618689966880875, 2.374814199981, 0.0});
  EXPECT_EQ(used.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 5, 4, 4, -1, 2, 5}));
  const Array t2 = Array::from_vector<int32_t>({1, 5, 0});
  const Array neg = Array::from_vector<int32_t>({2, 3, 0, 4, 1, 2}, {3, 2});
  expect_values(F::black_out(x, t2, W, neg), {1.95179179249826});
  expect_values(F::black_out(x, t2, W, neg, "no"), {0.210626522586514, 0.72653100637171, 4.91821784853656});
}

TEST(SampledLosses, GradientsAndErrors) {
  const Array t = Array::from_vector<int32_t>({1, 5, -1});
  const Array drawn = Array::from_vector<int32_t>({0, 2, 3, 0, 4, 4, 1, 2, 5}, {3, 3});
  const F::NegativeSampler sampler = [&](const Shape&) { return drawn; };
  const TestFunction ns = [&](const Vars& v) { return Vars{F::negative_sampling(v[0], t, v[1], sampler, 2, "no")}; };
  rensa::testing::check_backward(ns, {sin_arr({3, 4}, 0.1).array(), sin_arr({6, 4}, 0.2).array()});
  const Array neg = Array::from_vector<int32_t>({2, 3, 0, 4, 1, 2}, {3, 2});
  const TestFunction bo = [&](const Vars& v) {
    return Vars{F::black_out(v[0], Array::from_vector<int32_t>({1, 5, 0}), v[1], neg, "no")};
  };
  rensa::testing::check_backward(bo, {sin_arr({3, 4}, 0.1).array(), sin_arr({6, 4}, 0.2).array()});
  rensa::testing::check_double_backward(bo, {sin_arr({3, 4}, 0.1).array(), sin_arr({6, 4}, 0.2).array()},
                                        {randn({3})});
  const Variable x = sin_arr({3, 4}, 0.1), W = sin_arr({6, 4}, 0.2);
  expect_error<IndexError>([&] { F::negative_sampling(x, Array::from_vector<int32_t>({1, 6, 0}), W, sampler, 2); },
                           {"negative_sampling", "target 6 at 1", "[0, 6)"});
  expect_error<ValueError>([&] { F::negative_sampling(x, t, W, sampler, 3); },
                           {"negative_sampling", "sampler must return", "(3, 4)"});
  expect_error<ShapeError>([&] { F::negative_sampling(x, t, sin_arr({6, 3}, 0), sampler, 2); },
                           {"negative_sampling", "x (3, 4)", "W (6, 3)"});
  expect_error<ShapeError>([&] { F::black_out(x, Array::from_vector<int32_t>({1, 5, 0}), W, Array::zeros({2, 2}, Dtype::int32)); },
                           {"black_out", "samples must be (3, S)"});
}
