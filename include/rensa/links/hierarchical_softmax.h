#pragma once
/// \file
/// BinaryHierarchicalSoftmax: the hierarchical softmax loss over a binary tree of word ids
/// (Chainer's L.BinaryHierarchicalSoftmax), with its Huffman tree builder.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rensa/links/initializers.h"
#include "rensa/links/link.h"

namespace rensa::links {

/// A binary tree whose leaves are word ids: Chainer's nested tuples, ((1, 2), 3) being
/// node(node(leaf(1), leaf(2)), leaf(3)).
struct BinaryTree {
  /// The word id of a leaf.
  int64_t id = 0;
  /// Empty for a leaf; left and right for an internal node.
  std::vector<BinaryTree> children;

  /// A leaf holding word `id`.
  static BinaryTree leaf(int64_t id) { return BinaryTree{id, {}}; }
  /// An internal node with `left` and `right` subtrees.
  static BinaryTree node(BinaryTree left, BinaryTree right) {
    return BinaryTree{0, {std::move(left), std::move(right)}};
  }
  /// True for a leaf (no children).
  bool is_leaf() const { return children.empty(); }
  /// Chainer's tuple notation, "((1, 2), 3)".
  std::string to_string() const;
};

/// Options of BinaryHierarchicalSoftmax.
struct BinaryHierarchicalSoftmaxOptions {
  /// Initializer of W; null means Uniform(1), as Chainer.
  std::shared_ptr<const initializers::Initializer> initialW = nullptr;
  /// Seed of the generator drawing W; unset: the thread's default generator.
  std::optional<uint64_t> seed = std::nullopt;
};

/// Parameter W (number of internal nodes, in_size) of the Config dtype. The internal nodes are
/// numbered in pre-order as Chainer's TreeParser numbers them; the path of word w is the nodes from
/// the root to its leaf, with code +1 at a node whose left subtree holds w and -1 otherwise.
/// forward(x (B, in_size), t (B,) int32/int64) is the sum over the batch and the path of t_b of
/// softplus(-code * W[node] . x_b) (Chainer's log(1 + exp(-wxy))), a 0-d Variable of x's dtype,
/// written with functions::embed_id, sum and softplus (differentiable in x and W, twice too).
/// A word id in [0, max id] that is not in the tree has an empty path (loss 0), as Chainer.
class BinaryHierarchicalSoftmax : public Link {
 public:
  /// ValueError for in_size < 1, a tree without an internal node (W would be empty), a negative
  /// or repeated leaf id (Chainer keeps the last repeat's path), or an internal node without two
  /// children.
  BinaryHierarchicalSoftmax(int64_t in_size, const BinaryTree& tree, BinaryHierarchicalSoftmaxOptions options = {});

  /// ShapeError unless x is (B, in_size) and t (B,); DtypeError for a non-integer t or x of
  /// another dtype than W; IndexError for a label outside [0, max id]. Messages start with
  /// "BinaryHierarchicalSoftmax".
  Variable forward(const Variable& x, const Array& t);
  /// forward(inputs[0], inputs[1].array()); ValueError unless there are two inputs.
  Variable forward(const std::vector<Variable>& inputs) override;
  /// forward(x, t) between the link hooks.
  Variable operator()(const Variable& x, const Array& t) {
    return call_forward({&x, 1}, [&] { return forward(x, t); });
  }

  /// Chainer's create_huffman_tree: repeatedly joins the two entries of least (count, order)
  /// (the order of `word_counts`, a joined tree taking the smaller order), the first taken going
  /// left. {0: 8, 1: 5, 2: 6, 3: 4} gives ((3, 1), (2, 0)). ValueError when empty.
  static BinaryTree create_huffman_tree(const std::vector<std::pair<int64_t, double>>& word_counts);

  /// The parameter W (number of internal nodes, in_size).
  const Variable& W() const { return W_; }
  /// The internal nodes on the path of `word` and their codes (empty for a word not in the tree).
  /// IndexError outside [0, max id].
  std::pair<std::vector<int32_t>, std::vector<double>> path(int64_t word) const;

 private:
  std::vector<int32_t> paths_;  // concatenated, word by word (Chainer's paths)
  std::vector<double> codes_;
  std::vector<int64_t> begins_;  // word w's path is [begins_[w], begins_[w + 1])
  Variable W_;
};

}  // namespace rensa::links
