#pragma once
/// \file
/// The tree LSTM links (Chainer's L.ChildSumTreeLSTM and L.NaryTreeLSTM), with Chainer's child
/// names so its .npz files load. Neither keeps a state: forward(cs, hs, x) combines the cell
/// states cs and outputs hs of a node's children with the node's input x and returns the node's
/// (c, h), each (B, H). A null entry of cs or hs stands for zeros (a missing child); a null x
/// stands for zeros (B, in_size), B taken from the first non-null state. in_size -1 leaves it to
/// the first x (W_x waits for it, as Chainer's in_size None).

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "rensa/links/linear.h"
#include "rensa/links/link.h"

namespace rensa::links {

/// Options of the tree LSTM links.
struct TreeLSTMOptions {
  /// Seed of the children's generators (child k, in registration order, draws with seed + k);
  /// unset: the thread's default generator.
  std::optional<uint64_t> seed = std::nullopt;
};

/// Child-Sum tree LSTM (Tai et al. 2015): children W_x = Linear(in_size, 4 H), W_h_aio =
/// Linear(H, 3 H, nobias) and W_h_f = Linear(H, H, nobias). With any number of children (cs and hs
/// of equal length): a, i, o from W_x x + W_h_aio (sum of hs), and child k's forget gate from
/// W_x x + W_h_f h_k; the result does not depend on the children's order. With none:
/// c = sigmoid(i) tanh(a), h = sigmoid(o) tanh(c).
class ChildSumTreeLSTM : public Chain {
 public:
  /// ValueError unless out_size > 0 and in_size >= 0 (-1: inferred from the first input).
  ChildSumTreeLSTM(int64_t in_size, int64_t out_size, TreeLSTMOptions options = {});
  /// ValueError when cs and hs differ in length or every input is null; ShapeError naming the link
  /// when x is not (B, in_size) or a state is not (B, H).
  std::pair<Variable, Variable> forward(const std::vector<Variable>& cs, const std::vector<Variable>& hs,
                                        const Variable& x);
  /// forward(cs, hs, x) between the link hooks.
  std::pair<Variable, Variable> operator()(const std::vector<Variable>& cs, const std::vector<Variable>& hs,
                                           const Variable& x) {
    std::vector<Variable> args(cs);
    args.insert(args.end(), hs.begin(), hs.end());
    args.push_back(x);
    return call_forward(args, [&] { return forward(cs, hs, x); });
  }
  using Link::forward;

  /// The input size, or -1 until known.
  int64_t in_size() const { return W_x_.in_size(); }
  /// H, the number of units.
  int64_t state_size() const { return state_size_; }
  /// Input to the gates a, i, o and f: Linear(in_size, 4 H).
  Linear& W_x() { return W_x_; }
  /// Sum of the children's h to a, i and o: Linear(H, 3 H, nobias).
  Linear& W_h_aio() { return W_h_aio_; }
  /// Each child's h to its forget gate: Linear(H, H, nobias).
  Linear& W_h_f() { return W_h_f_; }

 private:
  int64_t state_size_;
  Linear W_x_, W_h_aio_, W_h_f_;
};

/// N-ary tree LSTM (Tai et al. 2015, as extended by Bowman et al. 2016): children W_x =
/// Linear(in_size, (3 + N) H) and W_h1 .. W_hN = Linear(H, (3 + N) H, nobias). The gates
/// (a, i, o, f1..fN, in blocks of H) are W_x x + sum_k W_hk h_k (a null h_k adds nothing), then
/// functions::tree_lstm(c1, ..., cN, gates). The children's order matters.
class NaryTreeLSTM : public Chain {
 public:
  /// ValueError unless n_ary >= 1.
  NaryTreeLSTM(int64_t in_size, int64_t out_size, int64_t n_ary = 2, TreeLSTMOptions options = {});
  /// cs and hs must each hold n_ary entries (ValueError); shapes as ChildSumTreeLSTM.
  std::pair<Variable, Variable> forward(const std::vector<Variable>& cs, const std::vector<Variable>& hs,
                                        const Variable& x);
  /// forward(cs, hs, x) between the link hooks.
  std::pair<Variable, Variable> operator()(const std::vector<Variable>& cs, const std::vector<Variable>& hs,
                                           const Variable& x) {
    std::vector<Variable> args(cs);
    args.insert(args.end(), hs.begin(), hs.end());
    args.push_back(x);
    return call_forward(args, [&] { return forward(cs, hs, x); });
  }
  using Link::forward;

  /// The input size, or -1 until known.
  int64_t in_size() const { return W_x_.in_size(); }
  /// H, the number of units.
  int64_t state_size() const { return state_size_; }
  /// Number of children each node has.
  int64_t n_ary() const { return n_ary_; }
  /// Input to the gates: Linear(in_size, (3 + n_ary) H).
  Linear& W_x() { return W_x_; }
  /// W_hk for k in 1..n_ary (IndexError otherwise).
  Linear& W_h(int64_t k);

 private:
  int64_t state_size_, n_ary_;
  Linear W_x_;
  std::vector<std::unique_ptr<Linear>> W_h_;
};

}  // namespace rensa::links
