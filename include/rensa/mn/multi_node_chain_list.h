#pragma once
/// \file
/// MultiNodeChainList (ChainerMN's): one model split across ranks. Each rank builds the components
/// it runs, each with the ranks it receives its inputs from (`rank_in`) and sends its output to
/// (`rank_out`); forward strings them together with mn::functions::send/recv and delegate variables,
/// so one backward() per rank runs every rank's share in a consistent order.
#include <initializer_list>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "rensa/core/variable.h"
#include "rensa/links/link.h"
#include "rensa/mn/communicator.h"

namespace rensa::mn {

/// The ranks of rank_in or rank_out: one rank, several, or none (ChainerMN's None: the component
/// takes the model's inputs, or gives the model's output).
struct Ranks {
  Ranks() = default;
  /// None (ChainerMN's None).
  Ranks(std::nullopt_t) {}                                  // NOLINT(google-explicit-constructor)
  /// One rank.
  Ranks(int rank) : ranks{rank} {}                          // NOLINT(google-explicit-constructor)
  /// Several ranks.
  Ranks(std::initializer_list<int> list) : ranks(list) {}   // NOLINT(google-explicit-constructor)
  /// Several ranks.
  Ranks(std::vector<int> list) : ranks(std::move(list)) {}  // NOLINT(google-explicit-constructor)
  /// True for none (no ranks).
  bool none() const { return ranks.empty(); }
  /// The ranks, in the order given; empty for none.
  std::vector<int> ranks;
};

/// A ChainList of components, each run on this rank with inputs received from `rank_in` and output
/// sent to `rank_out` (ChainerMN's MultiNodeChainList). Forward, per component in the order added:
/// - rank_in none: the component gets the model's inputs; otherwise one input received from each rank of
///   rank_in, in order (this rank itself: the output this rank sent itself earlier in forward).
/// - rank_out none: the output is the model's output (at most one such component); otherwise it is sent
///   to each rank of rank_out in order.
/// forward returns the model's output, connected (pseudo_connect) to the delegate variable of the last
/// send, or only that delegate variable when this rank has no output (a null variable when this rank
/// has no components); call backward() on it (or on a loss computed from it). Every rank must call forward and backward once per step, in the same step.
/// Tags are 0, as in ChainerMN.
class MultiNodeChainList : public ChainList {
 public:
  /// ValueError for a null communicator.
  explicit MultiNodeChainList(Communicator comm);

  /// Appends a component (owned). ValueError for a null link, ranks outside the communicator, or a second
  /// component whose rank_out is none.
  void add_link(std::shared_ptr<Link> link, Ranks rank_in = {}, Ranks rank_out = {});
  /// Appends a component owned elsewhere.
  void add_link(Link& link, Ranks rank_in = {}, Ranks rank_out = {});

  /// Runs the components (see the class comment). ValueError when a component with rank_in none comes
  /// first and the model gets no inputs, or when outputs this rank sent itself are not all consumed.
  Variable forward(const std::vector<Variable>& inputs) override;
  Variable forward(const Variable& x) override { return forward(std::vector<Variable>{x}); }

  /// The communicator the components send and receive through.
  const Communicator& communicator() const { return comm_; }

 private:
  void check_ranks(const Ranks& ranks, const char* what) const;
  Communicator comm_;
  std::vector<std::pair<Ranks, Ranks>> rank_inouts_;
  std::vector<std::shared_ptr<Link>> owned_;
};

}  // namespace rensa::mn
