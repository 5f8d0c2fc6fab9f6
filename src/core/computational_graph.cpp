#include "rensa/core/computational_graph.h"

#include <algorithm>
#include <queue>
#include <set>
#include <sstream>
#include <tuple>

#include "rensa/core/error.h"

namespace rensa {

namespace {

using Node = ComputationalGraph::Node;

const void* address(const Node& n) {
  return std::visit([](auto* p) { return static_cast<const void*>(p); }, n);
}

// Chainer's VariableNode.label: "(2, 3), float32", "(3), float32", or "float32" for a scalar.
std::string variable_label(const detail::VariableNode& v, bool show_name) {
  std::ostringstream os;
  if (show_name) {
    if (auto impl = v.variable.lock(); impl && !impl->name.empty()) os << impl->name << ": ";
  }
  if (v.shape.size() > 0) {
    os << '(';
    for (std::size_t i = 0; i < v.shape.size(); ++i) os << (i ? ", " : "") << v.shape[i];
    os << "), ";
  }
  os << dtype_name(v.dtype);
  return os.str();
}

std::string dot_node(const Node& n, bool show_name, const DotStyle& style) {
  const bool is_variable = std::holds_alternative<const detail::VariableNode*>(n);
  DotStyle attrs = {{"label", is_variable ? variable_label(*std::get<0>(n), show_name)
                                          : std::string(std::get<1>(n)->label())},
                    {"shape", is_variable ? "oval" : "box"}};
  for (const auto& [k, v] : style) {
    auto it = std::find_if(attrs.begin(), attrs.end(), [&](const auto& a) { return a.first == k; });
    if (it != attrs.end()) it->second = v; else attrs.emplace_back(k, v);
  }
  std::ostringstream os;
  os << reinterpret_cast<uintptr_t>(address(n)) << " [";
  for (std::size_t i = 0; i < attrs.size(); ++i) os << (i ? "," : "") << attrs[i].first << "=\"" << attrs[i].second << '"';
  os << "];";
  return os.str();
}

}  // namespace

ComputationalGraph::ComputationalGraph(std::vector<Node> nodes, std::vector<std::pair<Node, Node>> edges,
                                       ComputationalGraphOptions options)
    : nodes_(std::move(nodes)), edges_(std::move(edges)), options_(std::move(options)) {
  const std::string& r = options_.rankdir;
  RENSA_CHECK(r == "TB" || r == "BT" || r == "LR" || r == "RL", ValueError,
              "ComputationalGraph: rankdir must be TB, BT, LR or RL, got '", r, "'");
}

std::string ComputationalGraph::dump() const {
  std::ostringstream os;
  os << "digraph graphname{rankdir=" << options_.rankdir << ';';
  for (const Node& n : nodes_) {
    const bool is_variable = std::holds_alternative<const detail::VariableNode*>(n);
    if (is_variable && options_.remove_variable) continue;
    os << dot_node(n, options_.show_name, is_variable ? options_.variable_style : options_.function_style);
  }
  std::set<std::pair<const void*, const void*>> drawn;
  auto draw = [&](const Node& head, const Node& tail) {
    if (drawn.insert({address(head), address(tail)}).second) {
      os << reinterpret_cast<uintptr_t>(address(head)) << " -> " << reinterpret_cast<uintptr_t>(address(tail)) << ';';
    }
  };
  for (const auto& [head, tail] : edges_) {
    if (!options_.remove_variable) {
      draw(head, tail);
      continue;
    }
    // Functions only: an edge from the creator of each variable a function consumes.
    if (const auto* v = std::get_if<const detail::VariableNode*>(&head); v && (*v)->creator) {
      draw(Node((*v)->creator.get()), tail);
    }
  }
  os << '}';
  return os.str();
}

ComputationalGraph build_computational_graph(const std::vector<Variable>& outputs, ComputationalGraphOptions options) {
  // Candidates by decreasing generation, then in the order pushed (Chainer's heap of -rank, count).
  using Entry = std::tuple<int64_t, uint64_t, Node>;
  auto later = [](const Entry& a, const Entry& b) {
    return std::tie(std::get<0>(a), std::get<1>(a)) > std::tie(std::get<0>(b), std::get<1>(b));
  };
  std::priority_queue<Entry, std::vector<Entry>, decltype(later)> cands(later);
  uint64_t pushed = 0;
  std::vector<Node> nodes;
  std::set<const void*> seen_nodes;
  std::vector<std::pair<Node, Node>> edges;
  std::set<std::pair<const void*, const void*>> seen_edges;
  auto add_node = [&](const Node& n) {
    if (seen_nodes.insert(address(n)).second) nodes.push_back(n);
  };
  auto rank = [](const Node& n) {
    if (const auto* v = std::get_if<const detail::VariableNode*>(&n)) return -(*v)->generation;
    return -std::get<const FunctionNode*>(n)->generation();
  };
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    RENSA_CHECK(!outputs[i].is_null(), ValueError, "build_computational_graph: output ", i, " is a null Variable");
    const Node n = outputs[i].node().get();
    cands.emplace(rank(n), pushed++, n);
    add_node(n);
  }
  while (!cands.empty()) {
    const Node cand = std::get<2>(cands.top());
    cands.pop();
    if (const auto* v = std::get_if<const detail::VariableNode*>(&cand)) {
      const FunctionNode* creator = (*v)->creator.get();
      if (creator && seen_edges.insert({creator, *v}).second) {
        cands.emplace(rank(creator), pushed++, creator);
        add_node(creator);
        add_node(cand);
        edges.emplace_back(creator, cand);
      }
    } else {
      const FunctionNode* f = std::get<const FunctionNode*>(cand);
      for (const auto& in : f->inputs()) {
        if (!in || !seen_edges.insert({in.get(), f}).second) continue;
        cands.emplace(rank(in.get()), pushed++, in.get());
        add_node(in.get());
        add_node(cand);
        edges.emplace_back(in.get(), cand);
      }
    }
  }
  return ComputationalGraph(std::move(nodes), std::move(edges), std::move(options));
}

}  // namespace rensa
