#pragma once
/// \file
/// The computational graph behind variables as Graphviz dot text (Chainer's
/// chainer.computational_graph): variables and the functions that made them, back to the leaves.

#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "rensa/core/function_node.h"
#include "rensa/core/variable.h"

namespace rensa {

/// Dot attributes of a kind of node, e.g. {{"shape", "octagon"}, {"fillcolor", "#E0E0E0"}}.
using DotStyle = std::vector<std::pair<std::string, std::string>>;

/// Options of build_computational_graph (Chainer's arguments).
struct ComputationalGraphOptions {
  /// Chainer's defaults: variables filled grey octagons, functions filled blue records.
  DotStyle variable_style = {{"shape", "octagon"}, {"fillcolor", "#E0E0E0"}, {"style", "filled"}};
  /// Dot attributes of the function nodes (Chainer's default: filled blue records).
  DotStyle function_style = {{"shape", "record"}, {"fillcolor", "#6495ED"}, {"style", "filled"}};
  /// Direction of the graph: TB, BT, LR or RL.
  std::string rankdir = "TB";
  /// Show functions only (an edge per variable passed from one function to the next).
  bool remove_variable = false;
  /// Prefix variables' labels with their names ("x: (2, 3), float32").
  bool show_name = true;
};

/// The nodes and edges reachable backward from some variables.
class ComputationalGraph {
 public:
  /// A variable vertex or a function.
  using Node = std::variant<const detail::VariableNode*, const FunctionNode*>;
  /// Wraps nodes and edges found by build_computational_graph.
  ComputationalGraph(std::vector<Node> nodes, std::vector<std::pair<Node, Node>> edges,
                     ComputationalGraphOptions options);
  /// Nodes in the order found (outputs first), and edges from input to consumer.
  const std::vector<Node>& nodes() const { return nodes_; }
  /// Edges (input, consumer), in the order found.
  const std::vector<std::pair<Node, Node>>& edges() const { return edges_; }
  /// The graph in the dot language: "digraph graphname{rankdir=TB;<id> [label=...,shape=...];...
  /// <id> -> <id>;}", Chainer's text (node ids are addresses). A variable is labelled by its
  /// shape and dtype, "(2, 3), float32" ("float32" for a scalar), a function by its label.
  std::string dump() const;

 private:
  std::vector<Node> nodes_;
  std::vector<std::pair<Node, Node>> edges_;
  ComputationalGraphOptions options_;
};

/// Chainer's build_computational_graph: the functions and variables backward-reachable from
/// `outputs`, found in decreasing generation. ValueError for a null output or a bad rankdir.
ComputationalGraph build_computational_graph(const std::vector<Variable>& outputs,
                                             ComputationalGraphOptions options = {});

}  // namespace rensa
