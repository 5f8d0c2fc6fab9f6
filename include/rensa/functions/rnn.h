#pragma once
/// \file
/// Recurrent cells and stacked recurrent networks, with Chainer's gate layouts (so that Chainer's
/// weights load): lstm, slstm, tree_lstm, and the n_step family (lstm, gru, plain rnn, each uni-
/// or bi-directional). Composites of differentiable functions: every order of gradient works.
/// All inputs share one floating dtype and device (DtypeError / DeviceError otherwise).

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "rensa/core/variable.h"

namespace rensa::functions {

/// One LSTM step, Chainer's lstm(c_prev, x): x (B, 4H, ...) holds the gates interleaved per unit
/// (x[:, 4j + k] is gate k of unit j: a, i, f, o); c = tanh(a) sigmoid(i) + sigmoid(f) c_prev,
/// h = sigmoid(o) tanh(c). c_prev (B', H, ...) may have more rows than x (B' >= B): the extra rows
/// pass to c unchanged, and h has B rows. Returns (c, h). ShapeError when 4 does not divide x's
/// axis 1 or c_prev does not fit.
std::pair<Variable, Variable> lstm(const Variable& c_prev, const Variable& x);
/// The S-LSTM step of two children (Chainer's slstm): gates interleaved as in lstm, in x1 and x2;
/// c = tanh(a1) sigmoid(i1) + tanh(a2) sigmoid(i2) + sigmoid(f1) c1 + sigmoid(f2) c2,
/// h = sigmoid(o1 + o2) tanh(c). All four share one batch. Returns (c, h).
std::pair<Variable, Variable> slstm(const Variable& c_prev1, const Variable& c_prev2, const Variable& x1,
                                    const Variable& x2);
/// The N-ary tree LSTM step (Chainer's tree_lstm(c1, ..., cN, x)): x (B, (3 + N) H) holds the
/// gates as consecutive blocks of H columns: a, i, o, f1..fN; c = tanh(a) sigmoid(i) +
/// sum_k sigmoid(fk) ck, h = sigmoid(o) tanh(c). `inputs` is c1..cN then x. Returns (c, h).
std::pair<Variable, Variable> tree_lstm(const std::vector<Variable>& inputs);

/// What the n_step functions return: the last hidden (and cell) states of every layer and
/// direction, (n_layers * directions, B, H), and the last layer's outputs per time step.
struct NStepResult {
  /// The last hidden states, (n_layers * directions, B, H).
  Variable hy, cy;  // cy is null for gru and rnn
  /// The last layer's outputs per time step: ys[t] is (B_t, H * directions).
  std::vector<Variable> ys;
  /// \var cy
  /// The last cell states, like hy; null for gru and rnn.
};

/// Stacked LSTM over time-major inputs (Chainer's n_step_lstm): xs[t] is (B_t, I) with
/// B_0 >= B_1 >= ... (sequences sorted by decreasing length, then transposed; see
/// transpose_sequence); hx, cx (n_layers, B_0, H); ws[l] and bs[l] hold 8 weights
/// W0..W7 ((H, I) for W0..W3 of layer 0, (H, H) otherwise) and 8 biases (H,): W0/W4 input gate,
/// W1/W5 forget, W2/W6 cell, W3/W7 output, Wk (k < 4) applied to the layer's input and Wk (k >= 4)
/// to its previous h. Dropout with `dropout_ratio` on the inputs of layers above the first
/// (training mode). ys[t] is (B_t, H). ShapeError/ValueError for inconsistent shapes or counts.
NStepResult n_step_lstm(int64_t n_layers, double dropout_ratio, const Variable& hx, const Variable& cx,
                        const std::vector<std::vector<Variable>>& ws, const std::vector<std::vector<Variable>>& bs,
                        const std::vector<Variable>& xs);
/// Bi-directional n_step_lstm: ws/bs/hx/cx have 2 n_layers entries (forward then backward per
/// layer; layers above the first take 2H inputs); ys[t] is (B_t, 2H), the forward output first.
NStepResult n_step_bilstm(int64_t n_layers, double dropout_ratio, const Variable& hx, const Variable& cx,
                          const std::vector<std::vector<Variable>>& ws, const std::vector<std::vector<Variable>>& bs,
                          const std::vector<Variable>& xs);
/// Stacked GRU (Chainer's n_step_gru): 6 weights and biases per layer, W0/W3 reset gate, W1/W4
/// update gate, W2/W5 candidate: r = sigmoid(W0 x + b0 + W3 h + b3), z likewise with 1 and 4,
/// h~ = tanh(W2 x + b2 + r (W5 h + b5)), h' = (1 - z) h~ + z h.
NStepResult n_step_gru(int64_t n_layers, double dropout_ratio, const Variable& hx,
                       const std::vector<std::vector<Variable>>& ws, const std::vector<std::vector<Variable>>& bs,
                       const std::vector<Variable>& xs);
/// Bi-directional n_step_gru: ws/bs/hx have 2 n_layers entries (forward then backward per layer);
/// ys[t] is (B_t, 2H), the forward output first.
NStepResult n_step_bigru(int64_t n_layers, double dropout_ratio, const Variable& hx,
                         const std::vector<std::vector<Variable>>& ws, const std::vector<std::vector<Variable>>& bs,
                         const std::vector<Variable>& xs);
/// Stacked Elman RNN (Chainer's n_step_rnn): h' = activation(W0 x + b0 + W1 h + b1) with
/// activation "tanh" or "relu" (ValueError otherwise).
NStepResult n_step_rnn(int64_t n_layers, double dropout_ratio, const Variable& hx,
                       const std::vector<std::vector<Variable>>& ws, const std::vector<std::vector<Variable>>& bs,
                       const std::vector<Variable>& xs, std::string_view activation = "tanh");
/// Bi-directional n_step_rnn: ws/bs/hx have 2 n_layers entries (forward then backward per layer);
/// ys[t] is (B_t, 2H), the forward output first.
NStepResult n_step_birnn(int64_t n_layers, double dropout_ratio, const Variable& hx,
                         const std::vector<std::vector<Variable>>& ws, const std::vector<std::vector<Variable>>& bs,
                         const std::vector<Variable>& xs, std::string_view activation = "tanh");

}  // namespace rensa::functions
