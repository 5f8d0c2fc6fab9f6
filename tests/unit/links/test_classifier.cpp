// links::Classifier: loss, accuracy, reports under the observer's name, backward.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "rensa/links/classifier.h"
#include "rensa/links/linear.h"
#include "rensa/training/reporter.h"
#include "tests/unit/test_util.h"

using namespace rensa;
namespace F = rensa::functions;
namespace L = rensa::links;
using rensa::test::expect_error;
using rensa::test::randn;
using rensa::training::Observation;
using rensa::training::Reporter;

namespace {

struct Mlp : Chain {
  L::Linear l1{5, {.seed = 1}}, l2{3, {.seed = 2}};
  Mlp() {
    add_link("l1", l1);
    add_link("l2", l2);
  }
  Variable forward(const Variable& x) override { return l2(F::relu(l1(x))); }
  using Link::forward;
};

Array labels() { return Array::from_vector<int64_t>({0, 2, 1, 2}); }

// Adds its two inputs and feeds the sum to a Linear: a predictor of several inputs.
struct TwoInputs : Chain {
  L::Linear l{3, {.seed = 3}};
  TwoInputs() { add_link("l", l); }
  Variable forward(const std::vector<Variable>& in) override { return l(in.at(0) + in.at(1)); }
  using Link::forward;
};

}  // namespace

TEST(Classifier, ReportsLossAndAccuracyAndBackpropagates) {
  auto mlp = std::make_shared<Mlp>();
  L::Classifier model(mlp);
  std::vector<std::string> paths;
  for (const auto& [path, v] : model.namedparams()) paths.push_back(path);
  EXPECT_EQ(paths, (std::vector<std::string>{"/predictor/l1/W", "/predictor/l1/b", "/predictor/l2/W",
                                             "/predictor/l2/b"}));
  EXPECT_EQ(&model.predictor(), mlp.get());
  EXPECT_EQ(&model.child("predictor"), mlp.get());
  EXPECT_TRUE(model.y().is_null());

  Reporter reporter;
  reporter.add_observer("main", &model);
  Observation obs;
  Variable x(randn({4, 6}, Dtype::float32, 4));
  Variable loss;
  {
    Reporter::Scope scope(reporter, obs);
    loss = model({x, Variable(labels())});
  }
  const Variable y = (*mlp)(x);
  const double want_loss = F::softmax_cross_entropy(y, labels()).array().item<double>();
  const double want_acc = F::accuracy(y, labels()).array().item<double>();
  ASSERT_EQ(obs.size(), 2u);
  EXPECT_NEAR(obs.at("main/loss"), want_loss, 1e-6);
  EXPECT_NEAR(obs.at("main/accuracy"), want_acc, 1e-12);
  EXPECT_TRUE(model.loss().is(loss));
  EXPECT_TRUE(allclose(model.y().array(), y.array()));
  EXPECT_NEAR(model.accuracy().array().item<double>(), want_acc, 1e-12);

  model.cleargrads();
  loss.backward();
  for (const auto& [path, v] : model.namedparams()) {
    ASSERT_FALSE(v.grad().is_null()) << path;
    EXPECT_EQ(v.grad().shape(), v.shape()) << path;
  }
  // The same gradients as the loss computed by hand.
  const Array gW = mlp->l1.W().grad().array().copy();
  model.cleargrads();
  F::softmax_cross_entropy((*mlp)(x), labels()).backward();
  EXPECT_TRUE(allclose(mlp->l1.W().grad().array(), gW, 1e-5, 1e-7));

  // Outside a reporter scope nothing is reported and nothing fails.
  EXPECT_NO_THROW(model({x, Variable(labels())}));
}

TEST(Classifier, OptionsLossAccuracyAndLabelIndex) {
  // No accuracy.
  L::Classifier model(std::make_shared<L::Linear>(6, 3, L::LinearOptions{.seed = 1}), {.compute_accuracy = false});
  Reporter reporter;
  reporter.add_observer("main", &model);
  Observation obs;
  Variable x(randn({4, 6}, Dtype::float32, 4));
  {
    Reporter::Scope scope(reporter, obs);
    model({x, Variable(labels())});
  }
  EXPECT_EQ(obs.size(), 1u);
  EXPECT_TRUE(obs.contains("main/loss"));
  EXPECT_TRUE(model.accuracy().is_null());
  model.set_compute_accuracy(true);
  EXPECT_TRUE(model.compute_accuracy());
  model({x, Variable(labels())});
  EXPECT_FALSE(model.accuracy().is_null());

  // A regression loss with the target first, and a custom metric.
  L::Classifier reg(std::make_shared<L::Linear>(6, 2, L::LinearOptions{.seed = 2}),
                    {.lossfun = [](const Variable& y, const Variable& t) { return F::mean_squared_error(y, t); },
                     .accfun = [](const Variable& y, const Variable&) { return F::sum(y); },
                     .label_index = 0});
  Variable t(randn({4, 2}, Dtype::float32, 8));
  Variable l = reg({t, x});
  EXPECT_NEAR(l.array().item<double>(),
              F::mean_squared_error(reg.predictor()(x), t).array().item<double>(), 1e-6);
  EXPECT_NEAR(reg.accuracy().array().item<double>(), F::sum(reg.y()).array().item<double>(), 1e-6);

  // A predictor of several inputs gets every input but the label.
  auto two = std::make_shared<TwoInputs>();
  L::Classifier multi(two);
  Variable x2(randn({4, 6}, Dtype::float32, 9));
  Variable lm = multi({x, x2, Variable(labels())});
  EXPECT_NEAR(lm.array().item<double>(),
              F::softmax_cross_entropy(two->l(x + x2), labels()).array().item<double>(), 1e-6);
}

TEST(Classifier, Errors) {
  expect_error<ValueError>([] { L::Classifier(nullptr); }, {"Classifier", "null predictor"});
  L::Classifier model(std::make_shared<L::Linear>(6, 3));
  Variable x(randn({4, 6}, Dtype::float32, 4));
  expect_error<NotImplementedError>([&] { model(x); }, {"Classifier::forward"});
  expect_error<ValueError>([&] { model(std::vector<Variable>{x}); }, {"Classifier::forward", "1 input"});
  L::Classifier bad(std::make_shared<L::Linear>(6, 3), {.label_index = 2});
  expect_error<IndexError>([&] { bad({x, Variable(labels())}); }, {"Classifier::forward", "label_index 2", "2 inputs"});
  // Reporting with an observer the reporter does not know is an error of the reporter.
  Reporter reporter;
  Observation obs;
  Reporter::Scope scope(reporter, obs);
  EXPECT_THROW(model({x, Variable(labels())}), ValueError);
  // Labels of the wrong shape: the loss's own error.
  EXPECT_THROW(model({x, Variable(Array::from_vector<int64_t>({0, 1}))}), ShapeError);
}
