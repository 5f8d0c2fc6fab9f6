#pragma once
/// \file
/// The stacked recurrent links over batches of sequences of different lengths (Chainer's
/// L.NStepLSTM, L.NStepBiLSTM, L.NStepGRU, L.NStepBiGRU, L.NStepRNNTanh, L.NStepRNNReLU,
/// L.NStepBiRNNTanh, L.NStepBiRNNReLU). Each is a ChainList whose child "k" (k = layer * directions
/// + direction, the forward direction first) holds parameters w0, b0, w1, b1, ... with Chainer's
/// names and shapes (see functions::n_step_lstm for what each weight does), so Chainer's .npz files
/// of these links load.
///
/// forward takes hx (and cx for the LSTMs), each (n_layers * directions, B, H) or null for zeros,
/// and xs: B sequences, xs[i] (L_i, in_size), in any order of lengths. As Chainer's links, it sorts
/// the sequences by decreasing length (stably), transposes them to time-major batches, runs the
/// n_step function and restores the order: ys[i] is (L_i, H * directions), hy[:, i] (and cy) the
/// last states of sequence i. A sequence of length 0 gets ys[i] (0, H * directions) and its hx row.
/// Dropout (training mode) applies to the inputs of the layers above the first.

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "rensa/functions/rnn.h"
#include "rensa/links/initializers.h"
#include "rensa/links/link.h"

namespace rensa::links {

/// Options of the n-step links.
struct NStepRNNOptions {
  /// Initializer of every weight; null means LeCunNormal() (N(0, 1 / fan_in)).
  std::shared_ptr<const initializers::Initializer> initialW = nullptr;
  /// Initializer of every bias; null means zeros.
  std::shared_ptr<const initializers::Initializer> initial_bias = nullptr;
  /// Seed of the link's own generator (drawing w0, b0, w1, ... of child "0", then of "1", ...);
  /// unset: the thread's default generator.
  std::optional<uint64_t> seed = std::nullopt;
};

/// What the n-step links share: the parameters and the sorting, transposing and restoring around
/// the n_step function.
class NStepRNNBase : public ChainList {
 public:
  /// Number of stacked layers.
  int64_t n_layers() const { return n_layers_; }
  /// Size of each input vector of the first layer.
  int64_t in_size() const { return in_size_; }
  /// H, the number of units per direction.
  int64_t out_size() const { return out_size_; }
  /// Dropout ratio on the inputs of the layers above the first (training mode).
  double dropout() const { return dropout_; }
  /// 2 for the bi-directional links, else 1.
  int64_t direction() const { return direction_; }
  /// w0.. of each child, in child order (Chainer's ws).
  const std::vector<std::vector<Variable>>& ws() const { return ws_; }
  /// b0.. of each child (Chainer's bs).
  const std::vector<std::vector<Variable>>& bs() const { return bs_; }

 protected:
  /// The recurrent cell the link stacks.
  enum class Cell { lstm, gru, rnn_tanh, rnn_relu };
  /// ValueError naming `link` unless n_layers > 0, in_size >= 0, out_size > 0 and
  /// 0 <= dropout < 1; DtypeError for a non-floating Config dtype.
  NStepRNNBase(const char* link, Cell cell, bool bi, int64_t n_layers, int64_t in_size, int64_t out_size,
               double dropout, const NStepRNNOptions& options);
  /// Runs the network (cx used by the LSTMs only). ValueError for no sequences or a null one;
  /// ShapeError naming the link for a sequence that is not (L, in_size) or states that are not
  /// (n_layers * directions, B, H); DtypeError when dtypes differ.
  functions::NStepResult run(const Variable& hx, const Variable& cx, const std::vector<Variable>& xs);
  /// run() between the link hooks (the call operators' path).
  functions::NStepResult call_run(const Variable& hx, const Variable& cx, const std::vector<Variable>& xs) {
    std::vector<Variable> args{hx, cx};
    args.insert(args.end(), xs.begin(), xs.end());
    return call_forward(args, [&] { return run(hx, cx, xs); });
  }

 private:
  const char* link_;
  Cell cell_;
  int64_t n_layers_, in_size_, out_size_, direction_;
  double dropout_;
  std::vector<std::vector<Variable>> ws_, bs_;
};

/// Stacked LSTM: 8 weights per child (w0..w3 on the layer input, w4..w7 on h).
class NStepLSTM : public NStepRNNBase {
 public:
  /// ValueError unless n_layers > 0, in_size >= 0, out_size > 0 and 0 <= dropout < 1.
  NStepLSTM(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout, const NStepRNNOptions& options = {});
  /// Returns hy, cy (like hx) and ys.
  functions::NStepResult forward(const Variable& hx, const Variable& cx, const std::vector<Variable>& xs) {
    return run(hx, cx, xs);
  }
  /// forward(hx, cx, xs) between the link hooks.
  functions::NStepResult operator()(const Variable& hx, const Variable& cx, const std::vector<Variable>& xs) {
    return call_run(hx, cx, xs);
  }
  using Link::forward;
};

/// Bi-directional stacked LSTM (layers above the first take 2 H inputs).
class NStepBiLSTM : public NStepRNNBase {
 public:
  /// ValueError unless n_layers > 0, in_size >= 0, out_size > 0 and 0 <= dropout < 1.
  NStepBiLSTM(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout, const NStepRNNOptions& options = {});
  /// Returns hy, cy (like hx) and ys (ys[i] is (L_i, 2 H)).
  functions::NStepResult forward(const Variable& hx, const Variable& cx, const std::vector<Variable>& xs) {
    return run(hx, cx, xs);
  }
  /// forward(hx, cx, xs) between the link hooks.
  functions::NStepResult operator()(const Variable& hx, const Variable& cx, const std::vector<Variable>& xs) {
    return call_run(hx, cx, xs);
  }
  using Link::forward;
};

/// The links without a cell state: forward(hx, xs) returns hy and ys (cy null).
class NStepHiddenOnlyBase : public NStepRNNBase {
 public:
  /// Returns hy (like hx) and ys; cy is null.
  functions::NStepResult forward(const Variable& hx, const std::vector<Variable>& xs) { return run(hx, {}, xs); }
  /// forward(hx, xs) between the link hooks.
  functions::NStepResult operator()(const Variable& hx, const std::vector<Variable>& xs) {
    return call_run(hx, {}, xs);
  }
  using Link::forward;

 protected:
  using NStepRNNBase::NStepRNNBase;
};

/// Stacked GRU: 6 weights per child (w0..w2 on the layer input, w3..w5 on h).
class NStepGRU : public NStepHiddenOnlyBase {
 public:
  /// ValueError unless n_layers > 0, in_size >= 0, out_size > 0 and 0 <= dropout < 1.
  NStepGRU(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout, const NStepRNNOptions& options = {});
};
/// Bi-directional stacked GRU (layers above the first take 2 H inputs).
class NStepBiGRU : public NStepHiddenOnlyBase {
 public:
  /// ValueError unless n_layers > 0, in_size >= 0, out_size > 0 and 0 <= dropout < 1.
  NStepBiGRU(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout, const NStepRNNOptions& options = {});
};
/// Stacked Elman RNN with tanh: 2 weights per child (w0 on the layer input, w1 on h).
class NStepRNNTanh : public NStepHiddenOnlyBase {
 public:
  /// ValueError unless n_layers > 0, in_size >= 0, out_size > 0 and 0 <= dropout < 1.
  NStepRNNTanh(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout,
               const NStepRNNOptions& options = {});
};
/// Stacked Elman RNN with relu.
class NStepRNNReLU : public NStepHiddenOnlyBase {
 public:
  /// ValueError unless n_layers > 0, in_size >= 0, out_size > 0 and 0 <= dropout < 1.
  NStepRNNReLU(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout,
               const NStepRNNOptions& options = {});
};
/// Bi-directional stacked Elman RNN with tanh (layers above the first take 2 H inputs).
class NStepBiRNNTanh : public NStepHiddenOnlyBase {
 public:
  /// ValueError unless n_layers > 0, in_size >= 0, out_size > 0 and 0 <= dropout < 1.
  NStepBiRNNTanh(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout,
                 const NStepRNNOptions& options = {});
};
/// Bi-directional stacked Elman RNN with relu (layers above the first take 2 H inputs).
class NStepBiRNNReLU : public NStepHiddenOnlyBase {
 public:
  /// ValueError unless n_layers > 0, in_size >= 0, out_size > 0 and 0 <= dropout < 1.
  NStepBiRNNReLU(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout,
                 const NStepRNNOptions& options = {});
};

}  // namespace rensa::links
