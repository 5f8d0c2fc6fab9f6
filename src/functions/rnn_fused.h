#pragma once
// The fused LSTM and GRU used by lstm and the n_step LSTMs and GRUs: one kernel per step each way
// (lstm_/gru_forward and _backward), and for a whole layer one function node whose backward runs
// the recurrence in reverse and computes the recurrent weight's gradient as one matrix product.
// Under double backprop the backward recomputes the same steps from differentiable functions.
#include <cstdint>
#include <utility>
#include <vector>

#include "rensa/core/backend.h"
#include "rensa/core/variable.h"

namespace rensa::functions::detail {

/// The cell of Chainer's lstm for rows of equal count: returns (c, h) of the pre-activations x
/// (B, 4H, layout `gates`) and c_prev (B, H). Inputs already checked.
std::pair<Variable, Variable> lstm_cell(const Variable& c_prev, const Variable& x, const LstmGates& gates);

/// One direction of one LSTM layer over time. p (sum B_t, 4H): the input projections with both
/// biases, rows of step t at the offset of the steps before it (gates i, f, a, o in blocks of H);
/// w_h (4H, H): the recurrent weights stacked in the same gate order; h0, c0 (B_0, H). Steps run
/// from the last to the first when `reverse`; rows past a step's batch keep their state. Returns
/// ys (sum B_t, H, rows as p's), and the final h and c (B_0, H).
struct LstmLayer {
  Variable ys, h, c;
};
LstmLayer lstm_layer(const Variable& p, const std::vector<int64_t>& batch_sizes, const Variable& w_h,
                     const Variable& h0, const Variable& c0, bool reverse);

/// One direction of one GRU layer over time, as lstm_layer: p (sum B_t, 3H) the input projections
/// with the input biases (blocks r, z, n), w_h (3H, H) and b_h (3H,) the recurrent weights and
/// biases in the same order, h0 (B_0, H). Returns ys (sum B_t, H) and the final h (c null).
LstmLayer gru_layer(const Variable& p, const std::vector<int64_t>& batch_sizes, const Variable& w_h,
                    const Variable& b_h, const Variable& h0, bool reverse);

}  // namespace rensa::functions::detail
