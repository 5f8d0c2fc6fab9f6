// The mixed-precision policy (Config::dtype mixed16 / mixed_bf16): float32 parameters, 16-bit
// compute in Linear, the convolutions and EmbedID, float32 normalization, softmax and losses.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "tests/unit/test_util.h"

namespace F = rensa::functions;
namespace L = rensa::links;

namespace rensa {
namespace {

Array as64(const Variable& v) { return v.array().astype(Dtype::float64); }

// A 16-bit result against float32's on the same inputs: bfloat16 keeps 8 significant bits (relative
// rounding 2^-9 per operation), float16 11; a dot product of n terms rounds its inputs once and its
// output once, so a few units of 2^-8 of the output's scale bound the difference.
void expect_close_to(const Variable& half, const Variable& full, double rtol) {
  ASSERT_EQ(half.shape(), full.shape());
  const Array a = as64(half), b = as64(full);
  const double scale = F::max(F::absolute(Variable(b))).array().item<double>();
  EXPECT_TRUE(allclose(a, b, rtol, rtol * scale)) << "max |difference| "
                                                    << F::max(F::absolute(F::sub(Variable(a), Variable(b))))
                                                           .array()
                                                           .item<double>()
                                                    << " at scale " << scale;
}

struct Policy {
  Dtype policy, compute;
  double rtol;
};
class MixedPolicy : public ::testing::TestWithParam<Policy> {};

TEST(MixedPolicyDtype, NamesAndRefusals) {
  EXPECT_EQ(dtype_from_name("mixed16"), Dtype::mixed16);
  EXPECT_EQ(dtype_from_name("mixed_bf16"), Dtype::mixed_bf16);
  EXPECT_EQ(dtype_name(Dtype::mixed_bf16), "mixed_bf16");
  EXPECT_TRUE(is_mixed(Dtype::mixed16));
  EXPECT_FALSE(is_floating(Dtype::mixed16));
  // A policy is not an array dtype: allocation and casts say so, naming the call (regression: the
  // message named neither zeros nor cast).
  test::expect_error<DtypeError>([] { (void)Array::zeros({2, 2}, Dtype::mixed_bf16); },
                                 {"Array::zeros", "dtype mixed_bf16 is a mixed-precision policy", "bfloat16"});
  test::expect_error<DtypeError>([] { (void)Array::full({2}, 1.0, Dtype::mixed16); }, {"Array::full", "mixed16"});
  test::expect_error<DtypeError>([] { (void)Array::zeros({2}).astype(Dtype::mixed16); }, {"Array::astype", "mixed16"});
  test::expect_error<DtypeError>([] { (void)functions::cast(Variable(Array::zeros({2})), Dtype::mixed16); },
                                 {"cast", "dtype mixed16", "float16"});
  EXPECT_THROW((void)promote_types(Dtype::mixed16, Dtype::float32), DtypeError);
  EXPECT_THROW((void)dtype_from_name("mixed32"), DtypeError);
}

TEST(MixedPolicyDtype, GetDtypeAndComputeDtype) {
  EXPECT_EQ(get_dtype(), Dtype::float32);
  EXPECT_FALSE(mixed_compute_dtype());
  {
    auto g = using_config("dtype", Dtype::mixed_bf16);
    EXPECT_EQ(config().dtype, Dtype::mixed_bf16);
    EXPECT_EQ(get_dtype(), Dtype::float32);
    EXPECT_EQ(get_dtype(Dtype::float64), Dtype::float64);
    EXPECT_EQ(mixed_compute_dtype(), Dtype::bfloat16);
  }
  {
    auto g = using_config("dtype", Dtype::mixed16);
    EXPECT_EQ(mixed_compute_dtype(), Dtype::float16);
    // mixed_cast leaves integers and null variables alone.
    const Variable ids(Array::zeros({3}, Dtype::int32));
    EXPECT_EQ(L::mixed_cast(ids).dtype(), Dtype::int32);
    EXPECT_TRUE(L::mixed_cast(Variable()).is_null());
  }
  const Variable x(Array::zeros({3}));
  EXPECT_EQ(L::mixed_cast(x).dtype(), Dtype::float32);  // no policy: unchanged
}

TEST_P(MixedPolicy, LinearKeepsFloat32ParamsAndComputesIn16Bit) {
  const Policy p = GetParam();
  const Array x = test::randn({8, 20}, Dtype::float32, 3);
  auto g = using_config("dtype", p.policy);
  L::Linear l(20, 7);
  l.b().array().assign(test::randn({7}, Dtype::float32, 4));
  ASSERT_EQ(l.W().dtype(), Dtype::float32);
  ASSERT_EQ(l.b().dtype(), Dtype::float32);
  const Variable y = l(Variable(x));
  EXPECT_EQ(y.dtype(), p.compute);
  // The same product on float32 copies of the 16-bit-rounded inputs.
  Variable ref;
  {
    auto f32 = using_config("dtype", Dtype::float32);
    const auto round = [&](const Array& a) { return Variable(a.astype(p.compute).astype(Dtype::float32)); };
    ref = F::linear(round(x), round(l.W().array()), round(l.b().array()));
  }
  expect_close_to(y, ref, p.rtol);
  // Gradients arrive in the parameters' dtype.
  F::sum(y).backward();
  EXPECT_EQ(l.W().grad().dtype(), Dtype::float32);
  EXPECT_EQ(l.b().grad().dtype(), Dtype::float32);
  // d sum(x W^T + b) / db = batch size, exact in 16 bits.
  EXPECT_TRUE(allclose(l.b().grad().array(), Array::full({7}, 8.0, Dtype::float32), 0, 0));
}

TEST_P(MixedPolicy, ConvolutionsComputeIn16Bit) {
  const Policy p = GetParam();
  const Array x = test::randn({2, 3, 9, 9}, Dtype::float32, 5);
  auto g = using_config("dtype", p.policy);
  L::Convolution2D conv(3, 4, 3, {.pad = 1});
  L::Deconvolution2D deconv(4, 3, 2, {.stride = 2});
  ASSERT_EQ(conv.W().dtype(), Dtype::float32);
  const Variable h = conv(Variable(x));
  const Variable y = deconv(h);
  EXPECT_EQ(h.dtype(), p.compute);
  EXPECT_EQ(y.dtype(), p.compute);
  EXPECT_EQ(y.shape(), (Shape{2, 3, 18, 18}));
  Variable h_ref;
  {
    auto f32 = using_config("dtype", Dtype::float32);
    h_ref = F::convolution_2d(Variable(x), conv.W(), conv.b(), {.pad = 1});
  }
  expect_close_to(h, h_ref, 4 * p.rtol);
  F::sum(y).backward();
  EXPECT_EQ(conv.W().grad().dtype(), Dtype::float32);
  EXPECT_EQ(deconv.W().grad().dtype(), Dtype::float32);
}

TEST_P(MixedPolicy, EmbedIdCastsTheSelectedRows) {
  const Policy p = GetParam();
  auto g = using_config("dtype", p.policy);
  L::EmbedID embed(10, 4);
  ASSERT_EQ(embed.W().dtype(), Dtype::float32);
  const Array ids = Array::from_vector<int32_t>({1, 7, 7}, {3});
  const Variable y = embed(Variable(ids));
  EXPECT_EQ(y.dtype(), p.compute);
  const Variable ref = F::cast(F::embed_id(ids, embed.W()), p.compute);
  EXPECT_TRUE(allclose(as64(y), as64(ref), 0, 0));
  F::sum(y).backward();
  EXPECT_EQ(embed.W().grad().dtype(), Dtype::float32);
  EXPECT_EQ(embed.W().grad().array().astype(Dtype::float64).to_vector<double>()[7 * 4], 2.0);
}

TEST_P(MixedPolicy, NormalizationComputesInFloat32AndReturnsTheInputDtype) {
  const Policy p = GetParam();
  const Array x32 = test::randn({6, 3, 4, 4}, Dtype::float32, 6);
  auto g = using_config("dtype", p.policy);
  L::BatchNormalization bn(3);
  ASSERT_EQ(bn.gamma().dtype(), Dtype::float32);
  ASSERT_EQ(bn.avg_mean().dtype(), Dtype::float32);
  const Variable x(x32.astype(p.compute), true);
  const Variable y = bn(x);
  EXPECT_EQ(y.dtype(), p.compute);
  EXPECT_EQ(bn.avg_mean().dtype(), Dtype::float32);
  // The statistics are those of the 16-bit input computed in float32.
  L::BatchNormalization ref_bn(3);
  {
    auto f32 = using_config("dtype", Dtype::float32);
    const Variable y_ref = ref_bn(Variable(x.array().astype(Dtype::float32)));
    expect_close_to(y, y_ref, p.rtol);
  }
  EXPECT_TRUE(allclose(bn.avg_mean(), ref_bn.avg_mean(), 1e-6, 1e-7));
  EXPECT_TRUE(allclose(bn.avg_var(), ref_bn.avg_var(), 1e-6, 1e-7));
  F::sum(F::square(F::cast(y, Dtype::float32))).backward();
  EXPECT_EQ(x.grad().dtype(), p.compute);
  EXPECT_EQ(bn.gamma().grad().dtype(), Dtype::float32);
  {
    auto test_mode = using_config("train", false);
    EXPECT_EQ(bn(x).dtype(), p.compute);
  }
  L::LayerNormalization ln(5);
  EXPECT_EQ(ln(Variable(test::randn({2, 5}, Dtype::float32).astype(p.compute))).dtype(), p.compute);
}

TEST_P(MixedPolicy, SoftmaxAndLossesComputeInFloat32) {
  const Policy p = GetParam();
  const Variable x(test::randn({5, 10}, Dtype::float32, 7).astype(p.compute), true);
  const Array t = Array::from_vector<int32_t>({0, 3, 9, 2, 2}, {5});
  const Variable loss = F::softmax_cross_entropy(x, t);
  EXPECT_EQ(loss.dtype(), Dtype::float32);
  const Variable ref = F::softmax_cross_entropy(Variable(x.array().astype(Dtype::float32)), t);
  EXPECT_FLOAT_EQ(loss.array().item<float>(), ref.array().item<float>());
  loss.backward();
  EXPECT_EQ(x.grad().dtype(), p.compute);
  EXPECT_EQ(F::softmax(x).dtype(), p.compute);
  EXPECT_EQ(F::log_softmax(x).dtype(), p.compute);
  EXPECT_EQ(F::mean_squared_error(x, x).dtype(), Dtype::float32);
}

// Regression: the accuracy of 16-bit scores was a 16-bit number, so 891 hits of 1000 read 0.890625
// in bfloat16.
TEST_P(MixedPolicy, AccuracyOfHalfScoresIsExactFloat32) {
  const Policy p = GetParam();
  std::vector<int32_t> labels(1000);
  for (int i = 0; i < 1000; ++i) labels[static_cast<std::size_t>(i)] = i < 891 ? 1 : 0;
  Array y = Array::zeros({1000, 2}, Dtype::float32);
  y.slice(1, 1, 2).fill(1.0);  // every prediction is class 1
  const Variable acc = F::accuracy(Variable(y.astype(p.compute)), Array::from_vector(labels, {1000}));
  EXPECT_EQ(acc.dtype(), Dtype::float32);
  EXPECT_FLOAT_EQ(acc.array().item<float>(), 0.891f);
  const Variable bin =
      F::binary_accuracy(Variable(Array::ones({1000}, p.compute)), Array::from_vector(labels, {1000}));
  EXPECT_FLOAT_EQ(bin.array().item<float>(), 0.891f);
}

// An MLP trained under the policy follows the float32 run: same initial parameters (float32 under
// both), losses within the 16-bit rounding of the activations.
TEST_P(MixedPolicy, ClassifierTrainsLikeFloat32) {
  const Policy p = GetParam();
  const Array x = test::randn({64, 12}, Dtype::float32, 8);
  const Array t = F::argmax(Variable(F::matmul(Variable(x), Variable(test::randn({12, 3}, Dtype::float32, 9))).array()),
                            1)
                      .array()
                      .astype(Dtype::int32);
  auto run = [&](Dtype dtype) {
    auto g = using_config("dtype", dtype);
    optimizers::Adam opt;
    struct Net : Chain {
      L::Linear a{12, 32, {.seed = 1}}, b{32, 3, {.seed = 2}};
      Net() {
        add_link("a", a);
        add_link("b", b);
      }
      Variable forward(const Variable& h) override { return b(F::relu(a(h))); }
      using Link::forward;
    };
    L::Classifier clf(std::make_shared<Net>());
    opt.setup(clf);
    opt.set_hyperparam("alpha", 0.01);
    std::vector<double> losses;
    for (int i = 0; i < 30; ++i) {
      opt.update([&] { return clf({Variable(x), Variable(t)}); });
      losses.push_back(clf.loss().array().item<double>());
    }
    return losses;
  };
  const std::vector<double> full = run(Dtype::float32), half = run(p.policy);
  EXPECT_LT(half.back(), 0.5 * half.front());
  for (std::size_t i = 0; i < full.size(); ++i) EXPECT_NEAR(half[i], full[i], 0.05 * full[0]) << "step " << i;
}

INSTANTIATE_TEST_SUITE_P(Policies, MixedPolicy,
                         ::testing::Values(Policy{Dtype::mixed_bf16, Dtype::bfloat16, 1.0 / 64},
                                           Policy{Dtype::mixed16, Dtype::float16, 1.0 / 512}),
                         [](const auto& info) { return std::string(dtype_name(info.param.policy)); });

}  // namespace
}  // namespace rensa

// A policy whose 16-bit products are emulated says so once, with what it costs.
TEST(MixedPolicyNotice, SaysOnceWhenEmulated) {
  const std::string bf = rensa::links::mixed_policy_notice(rensa::Dtype::bfloat16);
  EXPECT_EQ(bf.empty(), rensa::native_bf16()) << bf;
  if (!bf.empty()) {
    EXPECT_NE(bf.find("bfloat16 is emulated"), std::string::npos) << bf;
  }
  EXPECT_NE(rensa::links::mixed_policy_notice(rensa::Dtype::float16).find("float16 is emulated"), std::string::npos);
  EXPECT_EQ(rensa::links::mixed_policy_notice(rensa::Dtype::float32), "");
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process: nothing said yet
  EXPECT_EXIT(
      {
        rensa::global_config().dtype = rensa::Dtype::mixed16;
        const rensa::Variable x(rensa::Array::zeros({2, 2}, rensa::Dtype::float32));
        rensa::links::mixed_cast(x);
        rensa::links::mixed_cast(x);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "^rensa: mixed16: float16 is emulated[^\n]*\n$");
}
