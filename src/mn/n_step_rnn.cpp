// create_multi_node_n_step_rnn: an n-step RNN link between a recv of its initial states and a send of
// its final states.
#include "rensa/mn/n_step_rnn.h"

#include "rensa/core/error.h"
#include "rensa/mn/functions.h"

namespace rensa::mn {

namespace MF = functions;

namespace {
bool has_cell_state(const links::NStepRNNBase& link) {
  return dynamic_cast<const links::NStepLSTM*>(&link) != nullptr ||
         dynamic_cast<const links::NStepBiLSTM*>(&link) != nullptr;
}
void check_rank(const char* what, std::optional<int> r, const Communicator& comm) {
  if (!r) return;
  RENSA_CHECK(*r >= 0 && *r < comm.size() && *r != comm.rank(), ValueError, "create_multi_node_n_step_rnn: ", what, " ",
              *r, " must be another rank of a communicator of size ", comm.size(), " (this is rank ", comm.rank(), ")");
}
}  // namespace

MultiNodeNStepRNN::MultiNodeNStepRNN(std::shared_ptr<links::NStepRNNBase> link, Communicator comm,
                                     std::optional<int> rank_in, std::optional<int> rank_out)
    : link_(std::move(link)), comm_(std::move(comm)), rank_in_(rank_in), rank_out_(rank_out) {
  RENSA_CHECK(link_ != nullptr, ValueError, "create_multi_node_n_step_rnn: null link");
  RENSA_CHECK(comm_.valid(), ValueError, "create_multi_node_n_step_rnn: null communicator (default-constructed)");
  check_rank("rank_in", rank_in_, comm_);
  check_rank("rank_out", rank_out_, comm_);
  n_cells_ = has_cell_state(*link_) ? 2 : 1;
  add_link("actual_rnn", link_);
}

MultiNodeNStepRNN::Result MultiNodeNStepRNN::forward(const std::vector<Variable>& xs, const Variable& hx_in,
                                                     const Variable& cx_in) {
  Variable hx = hx_in, cx = cx_in;
  RENSA_CHECK(n_cells_ == 2 || cx.is_null(), ValueError, "MultiNodeNStepRNN: cx given to a link without a cell state");
  if (rank_in_) {
    RENSA_CHECK(hx.is_null() && cx.is_null(), ValueError, "MultiNodeNStepRNN: hx and cx come from rank ", *rank_in_,
                " (rank_in); pass none");
    hx = MF::recv(comm_, *rank_in_);
    // c after h, connected to it: backward returns c's gradient first, the order the sender expects.
    if (n_cells_ == 2) cx = MF::recv(comm_, *rank_in_, hx);
  }
  rensa::functions::NStepResult out;
  if (n_cells_ == 2) {
    if (auto* lstm = dynamic_cast<links::NStepLSTM*>(link_.get())) {
      out = lstm->forward(hx, cx, xs);
    } else {
      out = dynamic_cast<links::NStepBiLSTM&>(*link_).forward(hx, cx, xs);
    }
  } else {
    out = dynamic_cast<links::NStepHiddenOnlyBase&>(*link_).forward(hx, xs);
  }
  Result result{out.hy, out.cy, out.ys, Variable()};
  if (rank_out_) {
    result.delegate_variable = MF::send(out.hy, comm_, *rank_out_);
    if (n_cells_ == 2) {
      result.delegate_variable = MF::send(MF::pseudo_connect(result.delegate_variable, out.cy), comm_, *rank_out_);
    }
  }
  return result;
}

std::shared_ptr<MultiNodeNStepRNN> create_multi_node_n_step_rnn(std::shared_ptr<links::NStepRNNBase> actual_link,
                                                                Communicator communicator, std::optional<int> rank_in,
                                                                std::optional<int> rank_out) {
  return std::make_shared<MultiNodeNStepRNN>(std::move(actual_link), std::move(communicator), rank_in, rank_out);
}

}  // namespace rensa::mn
