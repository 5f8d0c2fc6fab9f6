// Function hooks: the order of the callbacks around forward and backward, their scope (thread,
// installation), the forward entry of functions (hooks see a function before it allocates), debug
// mode's NaN checks, and Chainer's TimerHook, PrintHook and the memory hook.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rensa/rensa.h"
#include "tests/unit/test_util.h"

namespace rensa {
namespace {

namespace F = functions;
using test::expect_error;

// Records every callback as "<kind> <label>"; forward posts also note the number of outputs.
class Recorder : public FunctionHook {
 public:
  explicit Recorder(std::string name = "Recorder") : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  void forward_preprocess(const ForwardCall& c) override {
    events.push_back("pre " + std::string(c.label) + " in=" + std::to_string(c.inputs.size()));
  }
  void forward_postprocess(const ForwardCall& c) override {
    events.push_back("post " + std::string(c.label) + " out=" + std::to_string(c.outputs.size()));
  }
  void backward_preprocess(const BackwardCall& c) override { events.push_back("bpre " + std::string(c.node.label())); }
  void backward_postprocess(const BackwardCall& c) override {
    events.push_back("bpost " + std::string(c.node.label()) + " gx=" + std::to_string(c.grad_inputs.size()));
  }
  std::vector<std::string> events;

 private:
  std::string name_;
};

TEST(FunctionHook, SeesForwardAndBackwardInOrderWithNestedCalls) {
  Variable x(Array::from_vector<double>({-1, 2, 3}, {3}), true);
  Recorder rec;
  {
    FunctionHookScope scope(rec);
    Variable y = F::relu(x);
    Variable z = F::sum(y);
    z.backward();
  }
  // relu's backward applies relu_grad: a forward nested inside the backward.
  const std::vector<std::string> expected = {
      "pre relu in=1",      "post relu out=1",      "pre sum in=1",  "post sum out=1",
      "bpre sum",           "pre reshape in=1",    "post reshape out=1",      "pre broadcast_to in=1",
      "post broadcast_to out=1", "bpost sum gx=1",
      "bpre relu",          "pre relu_grad in=1",  "post relu_grad out=1",    "bpost relu gx=1"};
  EXPECT_EQ(rec.events, expected);
}

TEST(FunctionHook, NothingIsSeenOutsideTheScopeOrOnOtherThreads) {
  Recorder rec;
  Variable x(Array::ones({2}), true);
  F::relu(x);
  {
    FunctionHookScope scope(rec);
    EXPECT_EQ(get_function_hooks(), std::vector<FunctionHook*>{&rec});
    std::thread([&] { F::relu(x); }).join();
  }
  F::relu(x);
  EXPECT_TRUE(rec.events.empty());
  EXPECT_TRUE(get_function_hooks().empty());
}

TEST(FunctionHook, TwoHooksOfOneNameAreRefused) {
  Recorder a, b;
  FunctionHookScope scope(a);
  expect_error<KeyError>([&] { FunctionHookScope again(b); }, {"FunctionHookScope", "Recorder", "already"});
  Recorder c("Other");
  FunctionHookScope other(c);
  EXPECT_EQ(get_function_hooks().size(), 2u);
}

TEST(FunctionHook, AFunctionThatThrowsStillGetsItsPostprocess) {
  Recorder rec;
  FunctionHookScope scope(rec);
  Variable ints(Array::zeros({2}, Dtype::int32));
  EXPECT_THROW(F::relu(ints), DtypeError);
  EXPECT_EQ(rec.events, (std::vector<std::string>{"pre relu in=1", "post relu out=0"}));
}

// A function applied through FunctionNode::apply (a user's function) is seen like the built-in ones.
class Twice : public FunctionNode {
 public:
  const char* label() const override { return "twice"; }
  std::vector<Array> forward(const std::vector<Array>& in) override {
    Array y = in[0].copy();
    y.assign(F::mul(Variable(in[0]), 2.0).array());
    return {y};
  }
  std::vector<Variable> backward(const BackwardContext& ctx) override { return {F::mul(ctx.grad_output(), 2.0)}; }
};

TEST(FunctionHook, SeesUserFunctionsAndWhatTheyApply) {
  Recorder rec;
  Variable x(Array::ones({2}), true);
  {
    FunctionHookScope scope(rec);
    std::make_shared<Twice>()->apply({x});
  }
  EXPECT_EQ(rec.events,
            (std::vector<std::string>{"pre twice in=1", "pre mul in=1", "post mul out=1", "post twice out=1"}));
}

// The hooks see each function before it allocates its outputs: the bytes the thread allocates
// between pre and post include the output, for the functions a ConvNet and an MLP spend their time in.
TEST(FunctionHook, FunctionsAreEnteredBeforeTheyAllocate) {
  function_hooks::MemoryProfileHook mem;
  Variable x(test::randn({2, 3, 8, 8}, Dtype::float32), true);
  Variable W(test::randn({4, 3, 3, 3}, Dtype::float32), true);
  Variable gamma(Array::ones({4})), beta(Array::zeros({4}));
  Variable Wl(test::randn({5, 64}, Dtype::float32), true);
  Array t = Array::from_vector<int32_t>({1, 2}, {2});
  {
    FunctionHookScope scope(mem);
    Variable h = F::convolution_2d(x, W, Variable(), {.pad = 1});
    h = F::batch_normalization(h, gamma, beta).y;
    h = F::relu(F::add(h, h));
    h = F::max_pooling_2d(h, 2);
    h = F::linear(F::reshape(h, {2, 64}), Wl);
    Variable loss = F::softmax_cross_entropy(h, t);
    loss.backward();
  }
  std::map<std::string, uint64_t> bytes;
  for (const auto& [name, e] : mem.summary()) bytes[name] = e.allocated_bytes;
  EXPECT_GE(bytes["convolution_2d"], 2u * 4 * 8 * 8 * 4);
  EXPECT_GE(bytes["batch_normalization"], 2u * 4 * 8 * 8 * 4);
  EXPECT_GE(bytes["add"], 2u * 4 * 8 * 8 * 4);
  EXPECT_GE(bytes["relu"], 2u * 4 * 8 * 8 * 4);
  EXPECT_GE(bytes["max_pooling_2d"], 2u * 4 * 4 * 4 * 4);
  EXPECT_GE(bytes["linear"], 2u * 5 * 4);
  EXPECT_GE(bytes["softmax_cross_entropy"], 4u);
  EXPECT_GE(mem.total_allocated_bytes(), bytes["convolution_2d"]);
  EXPECT_GE(mem.peak_bytes(), 2u * 4 * 8 * 8 * 4);
}

// Debug mode: a NaN output names the function, the output and where it was called.
TEST(DebugMode, ANaNOutputNamesTheFunctionAndTheCallSite) {
  Variable x(Array::from_vector<float>({1, -1, 4}, {3}));
  EXPECT_NO_THROW(F::log(x));  // off by default
  auto debug = using_config("debug", true);
  expect_error<ValueError>([&] { F::log(x); },
                           {"log", "NaN detected on forward computation", "output 0", "float32", "(3,)", "1 NaN of 3",
                            "the function was called at:"});
  EXPECT_NO_THROW(F::log(F::relu(x) + 1.0));
}

TEST(DebugMode, ANaNInsideALinkNamesTheLink) {
  auto debug = using_config("debug", true);
  links::Linear l(2, 2);
  Variable x(Array::from_vector<float>({NAN, 0}, {1, 2}));
  expect_error<ValueError>([&] { l(x); }, {"linear", "NaN detected", "in link Linear"});
}

// Returns NaN as its input's gradient.
class NaNGrad : public FunctionNode {
 public:
  const char* label() const override { return "nan_grad"; }
  std::vector<Array> forward(const std::vector<Array>& in) override { return {in[0].copy()}; }
  std::vector<Variable> backward(const BackwardContext& ctx) override {
    Array g = Array::empty(ctx.grad_output().shape(), ctx.grad_output().dtype());
    g.fill(std::nan(""));
    return {Variable(g)};
  }
};

TEST(DebugMode, ANaNGradientNamesTheFunctionAndWhereItWasCreated) {
  Variable x(Array::ones({2}), true);
  {
    Variable y = F::sum(std::make_shared<NaNGrad>()->apply({x})[0]);
    EXPECT_NO_THROW(y.backward());
  }
  auto debug = using_config("debug", true);
  Variable y = F::sum(std::make_shared<NaNGrad>()->apply({x})[0]);
  expect_error<ValueError>([&] { y.backward(); }, {"nan_grad", "NaN detected on backward computation",
                                                    "gradient of input 0", "(2,)", "the function was created at:"});
}

TEST(TimerHook, CountsCallsAndSplitsForwardFromBackward) {
  function_hooks::TimerHook timer;
  Variable x(test::randn({64, 64}, Dtype::float32), true);
  {
    FunctionHookScope scope(timer);
    for (int i = 0; i < 3; ++i) F::sum(F::relu(x)).backward();
  }
  const auto& s = timer.summary();
  ASSERT_GE(s.size(), 2u);
  EXPECT_EQ(s[0].first, "relu");
  EXPECT_EQ(s[0].second.forward_occurrence, 3);
  EXPECT_EQ(s[0].second.backward_occurrence, 3);
  EXPECT_EQ(s[0].second.occurrence, 6);
  EXPECT_NEAR(s[0].second.elapsed_time, s[0].second.forward_time + s[0].second.backward_time, 1e-12);
  double sum = 0;
  for (const auto& [name, e] : s) sum += e.elapsed_time;
  EXPECT_GT(timer.total_time(), 0.0);
  EXPECT_LE(timer.total_time(), sum + 1e-12);  // nested calls count once in the total

  std::ostringstream os;
  timer.print_report(os, "sec");
  const std::string report = os.str();
  EXPECT_EQ(report.rfind("FunctionName  ElapsedTime  Occurrence", 0) == std::string::npos, false) << report;
  EXPECT_NE(report.find("relu"), std::string::npos);
  EXPECT_NE(report.find("sec           6"), std::string::npos) << report;
  expect_error<ValueError>([&] { timer.print_report(os, "hours"); }, {"TimerHook::print_report", "hours", "ms"});
  EXPECT_NE(timer.summary_json().find("\"name\":\"relu\",\"elapsed_time\""), std::string::npos);
  EXPECT_NE(timer.summary_json().find("\"occurrence\":6,\"mean_time\""), std::string::npos);
  timer.clear();
  EXPECT_TRUE(timer.summary().empty());
}

TEST(TimerHook, ReportUnitsFollowChainer) {
  function_hooks::TimerHook timer;
  Variable x(Array::ones({4}));
  {
    FunctionHookScope scope(timer);
    F::relu(x);
  }
  std::ostringstream ns, auto_unit;
  timer.print_report(ns, "ns");
  timer.print_report(auto_unit);
  // "ns" always prints nanoseconds; "auto" the largest unit in which the time is at least 1.
  EXPECT_NE(ns.str().find("ns  "), std::string::npos) << ns.str();
  const double s = timer.summary()[0].second.elapsed_time;
  const std::string unit = s >= 1 ? "sec" : s >= 1e-3 ? "ms" : s >= 1e-6 ? "us" : "ns";
  EXPECT_NE(auto_unit.str().find(unit + "  "), std::string::npos) << auto_unit.str();
}

TEST(PrintHook, PrintsInputsBeforeForwardAndGradientsBeforeBackward) {
  std::ostringstream os;
  function_hooks::PrintHook print(os);
  Variable x(Array::from_vector<float>({1, 2, 3, 4}, {2, 2}), true);
  x.set_name("x");
  {
    FunctionHookScope scope(print);
    F::sum(F::relu(x)).backward();
  }
  const std::string out = os.str();
  EXPECT_EQ(out.rfind("function\trelu\ninput data\n<variable x>\n- device: cpu\n", 0), 0u) << out;
  EXPECT_NE(out.find("- shape: (2, 2)\n- dtype: float32\n- statistics: mean=2.50000000, std=1.11803399\n- grad: None"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("function\tsum\ninput data\n"), std::string::npos);
  EXPECT_NE(out.find("output gradient\n<variable at "), std::string::npos) << out;
}

TEST(Variable, DebugPrintFollowsChainer) {
  Variable v(Array::from_vector<double>({1, 2, 3, 4}, {4}));
  v.set_name("v");
  EXPECT_EQ(v.debug_print(),
            "<variable v>\n- device: cpu\n- backend: rensa::Array\n- shape: (4,)\n- dtype: float64\n"
            "- statistics: mean=2.50000000, std=1.11803399\n- grad: None");
  v.set_grad(Variable(Array::zeros({4}, Dtype::float64)));
  EXPECT_NE(v.debug_print().find("- grad: 0"), std::string::npos);
  v.set_grad(Variable(Array::from_vector<double>({2, 2, 2, 2}, {4})));
  EXPECT_NE(v.debug_print().find("- grad: mean=2.00000000, std=0.00000000"), std::string::npos);
  EXPECT_NE(Variable().debug_print().find("- shape: None\n- dtype: None\n- statistics: None\n- grad: None"),
            std::string::npos);
}

TEST(MemoryProfileHook, ReportsBytesPerFunction) {
  function_hooks::MemoryProfileHook mem;
  Variable x(Array::ones({1000}, Dtype::float32));
  {
    FunctionHookScope scope(mem);
    F::relu(x);
    F::relu(x);
  }
  ASSERT_EQ(mem.summary().size(), 1u);
  EXPECT_EQ(mem.summary()[0].second.occurrence, 2);
  EXPECT_GE(mem.summary()[0].second.allocated_bytes, 8000u);
  std::ostringstream os;
  mem.print_report(os, "KB");
  EXPECT_EQ(os.str().rfind("FunctionName  AllocatedBytes  Occurrence\n", 0), 0u) << os.str();
  EXPECT_NE(os.str().find("KB"), std::string::npos);
  expect_error<ValueError>([&] { mem.print_report(os, "kB"); }, {"MemoryProfileHook::print_report", "kB"});
}

}  // namespace
}  // namespace rensa
