// MultiNodeChainList: ChainerMN's forward, which threads a delegate variable through the
// components so that each rank's backward visits its communications in reverse order of forward
// (the order its peers expect).
#include "rensa/mn/multi_node_chain_list.h"

#include <deque>

#include "rensa/core/error.h"
#include "rensa/mn/functions.h"

namespace rensa::mn {

namespace MF = functions;

MultiNodeChainList::MultiNodeChainList(Communicator comm) : comm_(std::move(comm)) {
  RENSA_CHECK(comm_.valid(), ValueError, "MultiNodeChainList: null communicator (default-constructed)");
}

void MultiNodeChainList::check_ranks(const Ranks& ranks, const char* what) const {
  for (int r : ranks.ranks) {
    RENSA_CHECK(r >= 0 && r < comm_.size(), ValueError, "MultiNodeChainList::add_link: ", what, " ", r,
                " is not a rank of a communicator of size ", comm_.size());
  }
}

void MultiNodeChainList::add_link(Link& link, Ranks rank_in, Ranks rank_out) {
  check_ranks(rank_in, "rank_in");
  check_ranks(rank_out, "rank_out");
  if (rank_out.none()) {
    for (const auto& [in, out] : rank_inouts_) {
      RENSA_CHECK(!out.none(), ValueError, "MultiNodeChainList::add_link: component ", rank_inouts_.size(),
                  " has rank_out none, but an earlier component already gives the model's output");
    }
  }
  append(link);
  rank_inouts_.emplace_back(std::move(rank_in), std::move(rank_out));
}

void MultiNodeChainList::add_link(std::shared_ptr<Link> link, Ranks rank_in, Ranks rank_out) {
  RENSA_CHECK(link != nullptr, ValueError, "MultiNodeChainList::add_link: null link");
  Link& ref = *link;
  add_link(ref, std::move(rank_in), std::move(rank_out));
  owned_.push_back(std::move(link));
}

Variable MultiNodeChainList::forward(const std::vector<Variable>& inputs) {
  std::deque<Variable> to_self;  // outputs this rank sends itself
  Variable y, delegate;
  bool y_is_delegate = false;
  for (std::size_t i = 0; i < rank_inouts_.size(); ++i) {
    const auto& [rank_in, rank_out] = rank_inouts_[i];
    Link& f = (*this)[i];
    Variable x;
    if (rank_in.none()) {
      // After the first component, the inputs are joined to the graph so far.
      std::vector<Variable> xs =
          i == 0 || delegate.is_null() || inputs.empty() ? inputs : MF::pseudo_connect(delegate, inputs);
      x = f.forward(xs);
    } else {
      std::vector<Variable> xs;
      for (int r : rank_in.ranks) {
        Variable got;
        if (r == comm_.rank()) {
          RENSA_CHECK(!to_self.empty(), ValueError, "MultiNodeChainList: component ", i, " on rank ", r,
                      " receives from its own rank, but no earlier component sent this rank an output");
          got = to_self.front();
          to_self.pop_front();
          if (!delegate.is_null()) got = MF::pseudo_connect(delegate, got);
        } else {
          got = MF::recv(comm_, r, delegate);
        }
        xs.push_back(got);
        // Backward runs this input's path before the previous ones' (the reverse of forward).
        delegate = got;
      }
      delegate = Variable();  // each edge is backpropagated exactly once
      x = f.forward(xs);
    }
    if (rank_out.none()) {
      y = x;
      delegate = y;
      y_is_delegate = true;
    } else {
      for (std::size_t k = 0; k < rank_out.ranks.size(); ++k) {
        const int r = rank_out.ranks[k];
        if (r == comm_.rank()) {
          if (!delegate.is_null()) x = MF::pseudo_connect(delegate, x);
          to_self.push_back(x);
          delegate = x;
        } else {
          if (k > 0 && !delegate.is_null()) x = MF::pseudo_connect(delegate, x);
          delegate = MF::send(x, comm_, r);
        }
        y_is_delegate = false;
      }
    }
  }
  RENSA_CHECK(to_self.empty(), ValueError, "MultiNodeChainList: ", to_self.size(), " output(s) rank ", comm_.rank(),
              " sent itself were not received by a later component; check that rank_in and rank_out correspond");
  if (y.is_null()) return delegate;
  if (y_is_delegate) return y;
  return MF::pseudo_connect(delegate, y);
}

}  // namespace rensa::mn
