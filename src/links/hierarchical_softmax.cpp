// BinaryHierarchicalSoftmax: the tree parsed into Chainer's paths and codes, the loss composed of
// embed_id gathers so it needs no backward of its own.
#include "rensa/links/hierarchical_softmax.h"

#include <algorithm>
#include <map>
#include <queue>
#include <string>
#include <tuple>

#include "rensa/core/config.h"
#include "rensa/core/error.h"
#include "rensa/core/random.h"
#include "rensa/functions/activation.h"
#include "rensa/functions/basic_math.h"
#include "rensa/functions/embed_id.h"
#include "rensa/functions/reduction.h"

namespace rensa::links {
namespace {

constexpr const char* kLink = "BinaryHierarchicalSoftmax";

// Chainer's TreeParser: internal nodes numbered in pre-order; code +1 going left, -1 going right.
struct Parser {
  int32_t next_id = 0;
  std::vector<int32_t> path;
  std::vector<double> code;
  std::map<int64_t, std::pair<std::vector<int32_t>, std::vector<double>>> leaves;

  void parse(const BinaryTree& node) {
    if (node.is_leaf()) {
      RENSA_CHECK(node.id >= 0, ValueError, kLink, ": leaf ids must be non-negative, got ", node.id);
      RENSA_CHECK(!leaves.count(node.id), ValueError, kLink, ": leaf ", node.id, " appears twice in the tree");
      leaves[node.id] = {path, code};
      return;
    }
    RENSA_CHECK(node.children.size() == 2, ValueError, kLink, ": all internal nodes must have two child nodes, got ",
                node.children.size());
    path.push_back(next_id++);
    code.push_back(1.0);
    parse(node.children[0]);
    code.back() = -1.0;
    parse(node.children[1]);
    path.pop_back();
    code.pop_back();
  }
};

}  // namespace

std::string BinaryTree::to_string() const {
  if (is_leaf()) return std::to_string(id);
  return std::string("(").append(children[0].to_string()).append(", ").append(children[1].to_string()).append(")");
}

BinaryHierarchicalSoftmax::BinaryHierarchicalSoftmax(int64_t in_size, const BinaryTree& tree,
                                                     BinaryHierarchicalSoftmaxOptions options) {
  RENSA_CHECK(in_size >= 1, ValueError, kLink, ": in_size must be at least 1, got ", in_size);
  const Dtype dtype = get_dtype();
  RENSA_CHECK(is_floating(dtype), DtypeError, kLink, ": parameters need a floating dtype, the config's is ", dtype);
  Parser parser;
  parser.parse(tree);
  RENSA_CHECK(parser.next_id > 0, ValueError, kLink, ": the tree ", tree.to_string(), " has no internal node");
  const int64_t n_vocab = parser.leaves.rbegin()->first + 1;
  begins_.assign(static_cast<std::size_t>(n_vocab) + 1, 0);
  for (int64_t w = 0; w < n_vocab; ++w) {
    auto it = parser.leaves.find(w);
    if (it != parser.leaves.end()) {
      paths_.insert(paths_.end(), it->second.first.begin(), it->second.first.end());
      codes_.insert(codes_.end(), it->second.second.begin(), it->second.second.end());
    }
    begins_[static_cast<std::size_t>(w) + 1] = static_cast<int64_t>(paths_.size());
  }
  std::optional<Generator> own;
  if (options.seed) own.emplace(*options.seed);
  Array w = Array::empty({parser.next_id, in_size}, dtype, device_);
  const auto init = options.initialW ? options.initialW : std::make_shared<initializers::Uniform>(1.0);
  (*init)(w, own ? *own : default_generator());
  W_ = add_param("W", w);
}

std::pair<std::vector<int32_t>, std::vector<double>> BinaryHierarchicalSoftmax::path(int64_t word) const {
  const auto n_vocab = static_cast<int64_t>(begins_.size()) - 1;
  RENSA_CHECK(word >= 0 && word < n_vocab, IndexError, kLink, ": word ", word, " is outside [0, ", n_vocab, ")");
  const auto b = begins_[static_cast<std::size_t>(word)], e = begins_[static_cast<std::size_t>(word) + 1];
  return {std::vector<int32_t>(paths_.begin() + b, paths_.begin() + e),
          std::vector<double>(codes_.begin() + b, codes_.begin() + e)};
}

Variable BinaryHierarchicalSoftmax::forward(const Variable& x, const Array& t) {
  const Shape& ws = W_.shape();
  RENSA_CHECK((x.shape().size() == 2 && t.ndim() == 1 && x.shape()[0] == t.shape()[0] && x.shape()[1] == ws[1]),
              ShapeError, kLink, ": x ", x.shape(), " and t ", t.shape(), " must be (B, ", ws[1], ") and (B,) for W ",
              ws);
  RENSA_CHECK((t.dtype() == Dtype::int32 || t.dtype() == Dtype::int64), DtypeError, kLink,
              ": t must be int32 or int64, got ", t.dtype());
  RENSA_CHECK(x.dtype() == W_.dtype(), DtypeError, kLink, ": x is ", x.dtype(), ", W ", W_.dtype());
  const auto labels = t.to(Device::cpu()).to_vector<int64_t>();
  std::vector<int64_t> nodes, rows;
  std::vector<double> codes;
  const auto n_vocab = static_cast<int64_t>(begins_.size()) - 1;
  for (std::size_t b = 0; b < labels.size(); ++b) {
    const int64_t w = labels[b];
    RENSA_CHECK(w >= 0 && w < n_vocab, IndexError, kLink, ": t[", b, "] = ", w, " is outside [0, ", n_vocab, ")");
    for (auto p = begins_[static_cast<std::size_t>(w)]; p < begins_[static_cast<std::size_t>(w) + 1]; ++p) {
      nodes.push_back(paths_[static_cast<std::size_t>(p)]);
      rows.push_back(static_cast<int64_t>(b));
      codes.push_back(codes_[static_cast<std::size_t>(p)]);
    }
  }
  const Device dev = W_.device();
  const Variable w = functions::embed_id(Array::from_vector(nodes, dev), W_);  // (P, D)
  const Variable xs = functions::embed_id(Array::from_vector(rows, dev), x);   // (P, D)
  const Variable code(Array::from_vector(codes, dev).astype(x.dtype()));
  const Variable wxy = functions::mul(functions::sum(functions::mul(w, xs), {1}), code);
  return functions::sum(functions::softplus(functions::neg(wxy)));
}

Variable BinaryHierarchicalSoftmax::forward(const std::vector<Variable>& inputs) {
  RENSA_CHECK(inputs.size() == 2, ValueError, kLink, ": forward takes x and t, got ", inputs.size(), " inputs");
  return forward(inputs[0], inputs[1].array());
}

BinaryTree BinaryHierarchicalSoftmax::create_huffman_tree(const std::vector<std::pair<int64_t, double>>& word_counts) {
  RENSA_CHECK(!word_counts.empty(), ValueError, kLink, ": create_huffman_tree: empty vocabulary");
  // Python's PriorityQueue of (count, uid, tree): least count first, then least uid.
  using Entry = std::tuple<double, std::size_t, std::size_t>;  // count, uid, index into trees
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> q;
  std::vector<BinaryTree> trees;
  for (const auto& [word, count] : word_counts) {
    q.emplace(count, trees.size(), trees.size());
    trees.push_back(BinaryTree::leaf(word));
  }
  while (q.size() >= 2) {
    const auto [c1, id1, t1] = q.top();
    q.pop();
    const auto [c2, id2, t2] = q.top();
    q.pop();
    q.emplace(c1 + c2, std::min(id1, id2), trees.size());
    trees.push_back(BinaryTree::node(std::move(trees[t1]), std::move(trees[t2])));
  }
  return std::move(trees[std::get<2>(q.top())]);
}

}  // namespace rensa::links
