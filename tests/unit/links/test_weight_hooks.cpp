// The weight-normalizing link hooks: SpectralNormalization and WeightStandardization against their
// formulas (values worked by hand), their parameters and persistent values, gradients against
// central differences in float64, and what misuse gets.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "rensa/link_hooks/spectral_normalization.h"
#include "rensa/link_hooks/weight_standardization.h"
#include "rensa/rensa.h"
#include "tests/unit/test_util.h"

namespace rensa {
namespace {

namespace F = functions;
namespace L = links;
using link_hooks::SpectralNormalization;
using link_hooks::WeightStandardization;
using test::expect_error;

// A float64 Linear without bias holding `w` (out, in).
std::unique_ptr<L::Linear> linear_with(const std::vector<double>& w, int64_t out, int64_t in) {
  auto dtype = using_config("dtype", Dtype::float64);
  auto l = std::make_unique<L::Linear>(in, out, L::LinearOptions{.nobias = true});
  l->W().array().assign(Array::from_vector<double>(w, {out, in}));
  return l;
}

// Expects the gradient of sum(link(x) * gy) with respect to the link's W to match central
// differences (float64).
void expect_weight_grad_matches(Link& link, const Variable& W, const Variable& x, const Array& gy) {
  auto loss = [&] { return F::sum(link(x) * Variable(gy)); };
  W.cleargrad();
  loss().backward();
  const std::vector<double> analytic = W.grad().array().to_vector<double>();
  Array w = W.array();
  const std::vector<double> w0 = w.to_vector<double>();
  const double eps = 1e-6;
  for (std::size_t i = 0; i < w0.size(); ++i) {
    std::vector<double> wp = w0, wm = w0;
    wp[i] += eps;
    wm[i] -= eps;
    w.assign(Array::from_vector<double>(wp, w.shape()));
    const double lp = loss().array().item<double>();
    w.assign(Array::from_vector<double>(wm, w.shape()));
    const double lm = loss().array().item<double>();
    EXPECT_NEAR(analytic[i], (lp - lm) / (2 * eps), 1e-6 * (1 + std::abs(analytic[i]))) << "element " << i;
  }
  w.assign(Array::from_vector<double>(w0, w.shape()));
}

TEST(SpectralNormalization, DividesTheWeightByItsLargestSingularValue) {
  auto l = linear_with({3, 0, 0, 1}, 2, 2);
  auto sn = std::make_shared<SpectralNormalization>();
  l->add_hook(sn);
  EXPECT_EQ(sn->vector_name(), "W_u");
  EXPECT_EQ(sn->axis(), 0);
  ASSERT_EQ(l->persistent("W_u").shape(), Shape({2}));
  l->persistent("W_u").assign(Array::from_vector<double>({1, 0}, {2}));
  Variable x(Array::from_vector<double>({1, 1}, {1, 2}));
  {
    auto test_mode = using_config("train", false);
    const auto y = (*l)(x).array().to_vector<double>();
    // sigma = 3 (up to eps = 1e-6 in the norms): y = x (W / 3)^T.
    EXPECT_NEAR(y[0], 1.0, 1e-5);
    EXPECT_NEAR(y[1], 1.0 / 3.0, 1e-5);
  }
  // The weight itself is unchanged, and the link reads it plainly once the hook is gone.
  EXPECT_EQ(l->W().array().to_vector<double>(), (std::vector<double>{3, 0, 0, 1}));
  l->delete_hook("SpectralNormalization");
  EXPECT_THROW(l->persistent("W_u"), ValueError);
  EXPECT_EQ((*l)(x).array().to_vector<double>(), (std::vector<double>{3, 1}));
}

TEST(SpectralNormalization, StoresTheNewSingularVectorInTrainingOnly) {
  auto l = linear_with({3, 0, 0, 1}, 2, 2);
  l->add_hook(std::make_shared<SpectralNormalization>());
  l->persistent("W_u").assign(Array::from_vector<double>({0.6, 0.8}, {2}));
  Variable x(Array::from_vector<double>({1, 1}, {1, 2}));
  {
    auto test_mode = using_config("train", false);
    (*l)(x);
  }
  EXPECT_EQ(l->persistent("W_u").to_vector<double>(), (std::vector<double>{0.6, 0.8}));
  (*l)(x);
  // v = (1.8, 0.8) / |.|, u = W v / |W v| = (5.4, 0.8) / |(5.4, 0.8)|.
  const auto u = l->persistent("W_u").to_vector<double>();
  const double n = std::hypot(5.4, 0.8);
  EXPECT_NEAR(u[0], 5.4 / n, 1e-5);
  EXPECT_NEAR(u[1], 0.8 / n, 1e-5);
}

TEST(SpectralNormalization, GammaAndFactorScaleTheResult) {
  auto l = linear_with({3, 0, 0, 1}, 2, 2);
  l->add_hook(std::make_shared<SpectralNormalization>(
      link_hooks::SpectralNormalizationOptions{.use_gamma = true, .factor = 2.0}));
  // gamma starts at the largest singular value.
  EXPECT_NEAR(l->param("gamma").array().item<double>(), 3.0, 1e-12);
  EXPECT_EQ(l->param("gamma").ndim(), 0);
  l->persistent("W_u").assign(Array::from_vector<double>({1, 0}, {2}));
  auto test_mode = using_config("train", false);
  const auto y = (*l)(Variable(Array::from_vector<double>({1, 1}, {1, 2}))).array().to_vector<double>();
  // W_bar = gamma W / (sigma / factor) = 3 W / 1.5 = 2 W.
  EXPECT_NEAR(y[0], 6.0, 1e-4);
  EXPECT_NEAR(y[1], 2.0, 1e-4);
  l->delete_hook("SpectralNormalization");
  EXPECT_THROW(l->param("gamma"), ValueError);
}

TEST(SpectralNormalization, GradientMatchesCentralDifferences) {
  auto l = linear_with({0.5, -1.2, 0.3, 0.8, 0.1, -0.4}, 2, 3);
  l->add_hook(std::make_shared<SpectralNormalization>());
  Variable x(test::randn({4, 3}));
  for (int i = 0; i < 100; ++i) (*l)(x);  // power iteration to convergence: u then barely depends on W
  auto test_mode = using_config("train", false);
  expect_weight_grad_matches(*l, l->W(), x, test::randn({4, 2}, Dtype::float64, 7));
}

TEST(SpectralNormalization, WorksOnConvolutionsDeconvolutionsAndLazyLinks) {
  auto dtype = using_config("dtype", Dtype::float64);
  L::Deconvolution2D deconv(2, 3, 2);
  auto sn = std::make_shared<SpectralNormalization>();
  deconv.add_hook(sn);
  EXPECT_EQ(sn->axis(), 1);
  EXPECT_EQ(deconv.persistent("W_u").shape(), Shape({3}));
  deconv(Variable(test::randn({1, 2, 3, 3})));

  L::Linear lazy(5);
  lazy.add_hook(std::make_shared<SpectralNormalization>());
  Variable x(test::randn({2, 4}));
  Variable y = lazy(x);
  EXPECT_EQ(lazy.persistent("W_u").shape(), Shape({5}));
  // The output is x W_bar^T + b with sigma(W_bar) = 1: its largest singular value is about 1 after
  // convergence.
  for (int i = 0; i < 50; ++i) lazy(x);
  auto test_mode = using_config("train", false);
  std::vector<double> eye(16, 0.0);
  for (int i = 0; i < 4; ++i) eye[static_cast<std::size_t>(i * 5)] = 1.0;
  const Array probe = Array::from_vector<double>(eye, {4, 4});
  Variable wbar = lazy(Variable(probe)) - F::broadcast_to(lazy.b(), {4, 5});
  const auto m = wbar.array().to_vector<double>();
  double frob = 0;
  for (double v : m) frob += v * v;
  EXPECT_GE(std::sqrt(frob), 1.0 - 1e-6);  // |W_bar|_F >= sigma_max(W_bar) = 1
}

TEST(SpectralNormalization, MisuseIsRefused) {
  expect_error<ValueError>([] { SpectralNormalization({.n_power_iteration = 0}); }, {"SpectralNormalization", "n_power_iteration"});
  SpectralNormalization sn;
  expect_error<ValueError>([&] { LinkHookScope scope(sn); }, {"SpectralNormalization", "Link::add_hook"});
  EXPECT_TRUE(get_link_hooks().empty());
  L::Linear l(2, 2);
  expect_error<ValueError>([&] { l.add_hook(std::make_shared<SpectralNormalization>(link_hooks::SpectralNormalizationOptions{.weight_name = "V"})); },
                           {"SpectralNormalization", "Linear has no parameter 'V'"});
  EXPECT_TRUE(l.local_link_hooks().empty());
  // A link that does not read its weight through param_in_forward.
  L::Bilinear bl(2, 2, 3);
  bl.add_hook(std::make_shared<SpectralNormalization>());
  expect_error<ValueError>([&] { bl(Variable(Array::ones({1, 2})), Variable(Array::ones({1, 2}))); },
                           {"SpectralNormalization", "Bilinear did not read its weight 'W'"});
}

TEST(WeightStandardization, StandardizesEachOutputUnit) {
  auto l = linear_with({1, 2, 3, 4, 4, 4}, 2, 3);
  l->add_hook(std::make_shared<WeightStandardization>());
  const auto y = (*l)(Variable(Array::from_vector<double>({1, 0, 0}, {1, 3}))).array().to_vector<double>();
  // Row 0: mean 2, variance 2/3; row 1 is constant: all zeros.
  EXPECT_NEAR(y[0], -1.0 / std::sqrt(2.0 / 3.0 + 1e-5), 1e-12);
  EXPECT_NEAR(y[1], 0.0, 1e-12);
}

TEST(WeightStandardization, ConvolutionReadsTheStandardizedWeight) {
  auto dtype = using_config("dtype", Dtype::float64);
  L::Convolution2D conv(2, 3, 2, {.nobias = true});
  Variable x(test::randn({1, 2, 4, 4}));
  const Variable W(conv.W().array().copy());
  conv.add_hook(std::make_shared<WeightStandardization>(link_hooks::WeightStandardizationOptions{.eps = 1e-3}));
  const Variable ws =
      F::group_normalization(W, 1, Variable(Array::ones({2}, Dtype::float64)), Variable(Array::zeros({2}, Dtype::float64)), 1e-3);
  EXPECT_EQ(conv(x).array().to_vector<double>(), F::convolution_2d(x, ws).array().to_vector<double>());
}

TEST(WeightStandardization, GradientMatchesCentralDifferences) {
  auto l = linear_with({0.5, -1.2, 0.3, 0.8, 0.1, -0.4}, 2, 3);
  l->add_hook(std::make_shared<WeightStandardization>());
  expect_weight_grad_matches(*l, l->W(), Variable(test::randn({4, 3})), test::randn({4, 2}, Dtype::float64, 7));
}

// Two weight hooks on one link normalize in turn (Chainer's setattr chain): spectral normalization
// scales W, which standardization then undoes, so the result is standardization's alone.
TEST(WeightHooks, ComposeOnOneLink) {
  auto l = linear_with({1, 2, 3, 4, 4, 5}, 2, 3);
  l->add_hook(std::make_shared<SpectralNormalization>());
  l->add_hook(std::make_shared<WeightStandardization>(link_hooks::WeightStandardizationOptions{.eps = 1e-12}));
  Variable x(Array::from_vector<double>({1, -2, 0.5}, {1, 3}));
  const auto both = (*l)(x).array().to_vector<double>();
  l->delete_hook("SpectralNormalization");
  const auto ws = (*l)(x).array().to_vector<double>();
  ASSERT_EQ(both.size(), ws.size());
  for (std::size_t i = 0; i < ws.size(); ++i) EXPECT_NEAR(both[i], ws[i], 1e-8);
  expect_error<ValueError>([&] { l->set_param_transform("W", nullptr); }, {"set_param_transform", "'W'", "no transform"});
}

TEST(WeightStandardization, MisuseIsRefused) {
  expect_error<ValueError>([] { WeightStandardization({.eps = 0}); }, {"WeightStandardization", "eps"});
  WeightStandardization ws;
  expect_error<ValueError>([&] { LinkHookScope scope(ws); }, {"WeightStandardization", "Link::add_hook"});
}

}  // namespace
}  // namespace rensa
