// build_computational_graph's dot text (against Chainer 7.8.1's for the same graphs), DumpGraph in a
// training run, Config::keep_graph_on_report, and unchain_variables.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "rensa/rensa.h"
#include "tests/unit/test_util.h"
#include "tests/unit/training/training_test_util.h"

namespace rensa {
namespace {

namespace F = functions;
namespace E = extensions;
using testing_training::TempDir;
using training::Trainer;

// The dot text with node ids (addresses) replaced by their order of first appearance: n0, n1, ...
std::string canonical(const std::string& dot) {
  std::string out;
  std::map<std::string, std::string> ids;
  std::size_t i = 0;
  while (i < dot.size()) {
    const bool id_start = i > 0 && (dot[i - 1] == ';' || (i > 1 && dot[i - 1] == ' ' && dot[i - 2] == '>'));
    if (id_start && std::isdigit(static_cast<unsigned char>(dot[i]))) {
      std::size_t j = i;
      while (j < dot.size() && std::isdigit(static_cast<unsigned char>(dot[j]))) ++j;
      const std::string id = dot.substr(i, j - i);
      if (!ids.count(id)) ids[id] = "n" + std::to_string(ids.size());
      out += ids[id];
      i = j;
    } else {
      out += dot[i++];
    }
  }
  return out;
}

constexpr const char* kVar = R"(shape="octagon",fillcolor="#E0E0E0",style="filled")";
constexpr const char* kFn = R"(shape="record",fillcolor="#6495ED",style="filled")";

TEST(ComputationalGraph, DotTextFollowsChainer) {
  Variable x(Array::zeros({2, 3}), true);
  x.set_name("x");
  Variable y = F::relu(x);
  Variable z = F::sum(y);
  const std::string dot = canonical(build_computational_graph({z}).dump());
  // Chainer 7.8.1 writes the same nodes (in another order: a Python set's) and edges.
  const std::string expected = std::string("digraph graphname{rankdir=TB;") +  //
                               "n0 [label=\"float32\"," + kVar + "];" +       // z
                               "n1 [label=\"sum\"," + kFn + "];" +            //
                               "n2 [label=\"(2, 3), float32\"," + kVar + "];" +  // y
                               "n3 [label=\"relu\"," + kFn + "];" +            //
                               "n4 [label=\"x: (2, 3), float32\"," + kVar + "];" +
                               "n1 -> n0;n2 -> n1;n3 -> n2;n4 -> n3;}";
  EXPECT_EQ(dot, expected);
  EXPECT_EQ(build_computational_graph({z}).nodes().size(), 5u);
}

TEST(ComputationalGraph, FunctionsOnlyAndOptions) {
  Variable v(Array::zeros({3}), true);
  Variable w = v * 2.0;
  EXPECT_NE(build_computational_graph({w}).dump().find("[label=\"(3), float32\""), std::string::npos);
  Variable z = F::sum(F::relu(v));
  ComputationalGraphOptions only_functions;
  only_functions.remove_variable = true;
  only_functions.rankdir = "LR";
  EXPECT_EQ(canonical(build_computational_graph({z}, only_functions).dump()),
            std::string("digraph graphname{rankdir=LR;n0 [label=\"sum\",") + kFn + "];n1 [label=\"relu\"," + kFn +
                "];n1 -> n0;}");
  ComputationalGraphOptions plain;
  plain.variable_style = {};
  plain.function_style = {{"color", "red"}};
  plain.show_name = false;
  v.set_name("v");
  const std::string dot = build_computational_graph({z}, plain).dump();
  EXPECT_NE(dot.find("[label=\"(3), float32\",shape=\"oval\"];"), std::string::npos) << dot;
  EXPECT_NE(dot.find("[label=\"relu\",shape=\"box\",color=\"red\"];"), std::string::npos) << dot;
  ComputationalGraphOptions bad;
  bad.rankdir = "XY";
  test::expect_error<ValueError>([&] { build_computational_graph({z}, bad); }, {"rankdir", "'XY'"});
  test::expect_error<ValueError>([&] { build_computational_graph({Variable()}); }, {"build_computational_graph", "null"});
}

// An updater whose step reports a loss Variable, as Classifier does.
class LossUpdater : public testing_training::FakeUpdater {
 public:
  void update() override {
    FakeUpdater::update();
    Variable x(Array::ones({2, 2}), true);
    last_loss = F::sum(F::relu(x * 3.0));
    rensa::report("main/loss", last_loss);
    last_loss.backward();
  }
  Variable last_loss;
};

TEST(DumpGraph, WritesTheGraphOfTheFirstIterationAndRestoresTheFlag) {
  LossUpdater u;
  TempDir dir("dump_graph");
  Trainer trainer(u, {3, "iteration"}, dir.path());
  trainer.extend(E::DumpGraph("main/loss"));
  std::size_t kept_in_second = 99;
  trainer.extend([&](Trainer& t) { if (u.iteration() == 2) kept_in_second = t.observed_variables().size(); },
                 "count", {1, "iteration"});
  trainer.run();
  std::ifstream in(dir / "cg.dot");
  std::stringstream text;
  text << in.rdbuf();
  const std::string dot = canonical(text.str());
  EXPECT_EQ(dot.rfind("digraph graphname{rankdir=TB;n0 [label=\"float32\",", 0), 0u) << dot;
  for (const char* label : {"\"sum\"", "\"relu\"", "\"mul\"", "\"(2, 2), float32\""}) {
    EXPECT_NE(dot.find(label), std::string::npos) << label << " in " << dot;
  }
  EXPECT_FALSE(global_config().keep_graph_on_report);
  EXPECT_EQ(kept_in_second, 0u);  // kept only until the dump
}

TEST(DumpGraph, AnUnreportedRootIsNamed) {
  LossUpdater u;
  TempDir dir("dump_graph_missing");
  Trainer trainer(u, {1, "iteration"}, dir.path());
  trainer.extend(E::DumpGraph("main/accuracy"));
  test::expect_error<ValueError>([&] { trainer.run(); }, {"DumpGraph", "'main/accuracy'", "main/loss"});
  EXPECT_FALSE(global_config().keep_graph_on_report);
}

TEST(KeepGraphOnReport, KeepsReportedVariablesOnlyWhenOn) {
  Reporter reporter;
  Observation obs;
  ObservedVariables vars;
  Reporter::Scope scope(reporter, obs, &vars);
  Variable v(Array::scalar(2.0), true);
  rensa::report("a", v);
  EXPECT_TRUE(vars.empty());
  {
    auto keep = using_config("keep_graph_on_report", true);
    rensa::report("b", v);
  }
  EXPECT_EQ(obs.at("a"), 2.0);
  ASSERT_EQ(vars.count("b"), 1u);
  EXPECT_TRUE(vars.at("b").is(v));
}

TEST(UnchainVariables, CutsTheKeptGraphs) {
  global_config().keep_graph_on_report = true;
  LossUpdater u;
  TempDir dir("unchain");
  Trainer trainer(u, {2, "iteration"}, dir.path());
  bool had_creator = false;
  trainer.extend([&](Trainer&) { had_creator = u.last_loss.creator() != nullptr; }, "look", {1, "iteration"}, 50);
  trainer.extend(E::unchain_variables());
  trainer.run();
  global_config().keep_graph_on_report = false;
  EXPECT_TRUE(had_creator);
  EXPECT_EQ(u.last_loss.creator(), nullptr);
}

}  // namespace
}  // namespace rensa
