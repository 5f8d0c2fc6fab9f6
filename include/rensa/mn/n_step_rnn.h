#pragma once
/// \file
/// create_multi_node_n_step_rnn (ChainerMN's): a stacked RNN link whose initial states come from
/// another rank and whose final states go to another, for sequence models split across ranks (an
/// encoder on one rank, its decoder on the next).
#include <memory>
#include <optional>
#include <vector>

#include "rensa/core/variable.h"
#include "rensa/links/link.h"
#include "rensa/links/n_step_rnn.h"
#include "rensa/mn/communicator.h"

namespace rensa::mn {

/// A stacked RNN link (child "actual_rnn") that receives its initial states from `rank_in` and sends
/// its final states to `rank_out` with mn::functions::recv/send (ChainerMN's _MultiNodeNStepRNN).
class MultiNodeNStepRNN : public Chain {
 public:
  /// The link's outputs plus the delegate variable of the sends (null when rank_out is none):
  /// backward must reach it, so a rank whose only output is the sent state calls
  /// delegate_variable.backward().
  struct Result {
    /// The last hidden states (and cell states; \p cy is null for the links without a cell state).
    Variable hy, cy;  ///< cy is null for the links without a cell state
    /// The outputs per sequence, as the link's ys.
    std::vector<Variable> ys;
    /// The delegate variable of the sends; null when rank_out is none.
    Variable delegate_variable;
  };

  /// Wraps `link`; `rank_in` / `rank_out`: the rank the initial states come from / the final ones go to (nullopt: none).
  MultiNodeNStepRNN(std::shared_ptr<links::NStepRNNBase> link, Communicator comm, std::optional<int> rank_in,
                    std::optional<int> rank_out);

  /// Runs the link over `xs`: with rank_in, hx (and cx for the LSTMs) are received from rank_in (hx and cx
  /// must then be null; ValueError otherwise); without, they are hx and cx (null: zeros). With rank_out,
  /// hy (then cy) are sent to rank_out. ValueError for cx given to a link without a cell state.
  Result forward(const std::vector<Variable>& xs, const Variable& hx = {}, const Variable& cx = {});
  using Link::forward;

  /// The wrapped n-step link.
  links::NStepRNNBase& actual_rnn() const { return *link_; }
  /// 2 for the LSTMs (h and c), else 1.
  int n_cells() const { return n_cells_; }

 private:
  std::shared_ptr<links::NStepRNNBase> link_;
  Communicator comm_;
  std::optional<int> rank_in_, rank_out_;
  int n_cells_;
};

/// ChainerMN's create_multi_node_n_step_rnn(actual_link, communicator, rank_in=None, rank_out=None), for
/// any of the n-step links (L::NStepLSTM, NStepBiLSTM, NStepGRU, NStepBiGRU, NStepRNNTanh, NStepRNNReLU,
/// NStepBiRNNTanh, NStepBiRNNReLU). ValueError for a null link or communicator, or ranks outside it or
/// equal to this rank.
std::shared_ptr<MultiNodeNStepRNN> create_multi_node_n_step_rnn(std::shared_ptr<links::NStepRNNBase> actual_link,
                                                                Communicator communicator,
                                                                std::optional<int> rank_in = std::nullopt,
                                                                std::optional<int> rank_out = std::nullopt);

}  // namespace rensa::mn
