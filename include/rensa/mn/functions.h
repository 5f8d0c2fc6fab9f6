#pragma once
/// \file
/// Differentiable communication (ChainerMN's chainermn.functions): point-to-point send and recv with
/// delegate variables and pseudo_connect, and the collectives bcast, gather, scatter, allgather and
/// alltoall (allreduce is in rensa/mn/batch_normalization.h). Each records a backward that is the
/// dual communication, so one model can be split across ranks (model parallelism).
///
/// The rules every rank must keep (as in ChainerMN):
/// - Forward: the ranks call matching operations in the same order (a send with its recv; every
///   rank a collective).
/// - Backward: every recorded communication runs its dual communication in backward, so every rank
///   must backpropagate through each of them exactly once, and in an order that matches its peers'.
///   A rank whose output leaves by `send` calls backward() on the delegate variable `send` returns;
///   a rank with several disconnected pieces joins them with the delegate variables (recv's
///   `delegate_variable`, pseudo_connect) so one backward visits them in reverse order of forward.
/// - Each function records its backward whenever backprop is enabled, even when no input requires a
///   gradient (through an internal dummy input, as ChainerMN does), so that every rank takes part
///   in the dual communication. Under no_backprop_mode() nothing is recorded, on every rank alike.
/// - Gradients of send/recv, bcast, gather and scatter cross ranks as data: first order only
///   (NotImplementedError when double backprop reaches them). allgather, alltoall and allreduce have
///   backward passes written with themselves, so higher-order gradients work.
/// - rensa::grad(outputs, inputs) runs only the functions with a requested input behind them, so on a
///   rank where no requested input lies behind a communication, its dual is skipped and the peers
///   wait: use backward() for model-parallel graphs.
///
/// A rank that waits for a peer that never comes (a send without its recv, a backward that is not
/// run) is ended by the communicator's watchdog with a line naming both ranks and the tag; a
/// gradient whose shape or dtype differs from what was sent throws CommunicationError naming both.
#include <vector>

#include "rensa/core/variable.h"
#include "rensa/mn/batch_normalization.h"
#include "rensa/mn/communicator.h"

namespace rensa::mn::functions {

/// Sends `x` to rank `rank` with `tag` (ChainerMN's send(x, communicator, rank, tag=0)) and returns
/// the delegate variable: a float32 scalar zero (ChainerMN's is an empty array; a scalar lets
/// `delegate.backward()` seed itself) that carries the graph. x may live on any device; it travels
/// through host memory. Blocks until the message is handed to MPI (for large messages, until the
/// peer receives it). Backward through it receives x's gradient from `rank` (sent by recv's
/// backward) and passes it on to x; the gradient must have x's shape and dtype (CommunicationError
/// naming both ranks and the tag otherwise). Connect the
/// delegate to the rest of this rank's graph (recv's delegate_variable, pseudo_connect) or call
/// backward() on it. ValueError for a null x or communicator, `rank` equal to this rank or outside
/// the communicator, or a negative tag.
Variable send(const Variable& x, const Communicator& communicator, int rank, int tag = 0);
/// send() of several variables as one message (recv_tuple receives them).
Variable send(const std::vector<Variable>& xs, const Communicator& communicator, int rank, int tag = 0);

/// Receives what rank `rank` sent with send() and `tag` (ChainerMN's recv(communicator, rank,
/// delegate_variable=None, tag=0)); shape and dtype come with the message, on the cpu device.
/// Backward sends the output's gradient back to `rank`. `delegate_variable` (a delegate returned by
/// an earlier send or an earlier output of this rank's graph) is an input of the recorded node, so
/// backward reaches it after this recv's backward: that keeps the order of the ranks' backward
/// communications consistent. CommunicationError when the message holds more than one variable
/// (use recv_tuple) or did not come from mn::functions::send; ValueError as for send.
Variable recv(const Communicator& communicator, int rank, const Variable& delegate_variable = {}, int tag = 0);
/// recv() returning every variable of the message (ChainerMN's recv(..., force_tuple=True)).
std::vector<Variable> recv_tuple(const Communicator& communicator, int rank, const Variable& delegate_variable = {},
                                 int tag = 0);

/// Returns `actual_variable` unchanged, with `delegate_variable` recorded as an extra input
/// (ChainerMN's pseudo_connect): backward passes the gradient through and gives the delegate a zero
/// gradient, so the graph behind the delegate (a send) is backpropagated too, after what follows.
/// Double backprop works. ValueError for a null argument.
Variable pseudo_connect(const Variable& delegate_variable, const Variable& actual_variable);
/// pseudo_connect() of several variables.
std::vector<Variable> pseudo_connect(const Variable& delegate_variable, const std::vector<Variable>& actual_variables);

/// Root's `x` on every rank (ChainerMN's bcast(comm, x, root=0)); other ranks' `x` is ignored and may
/// be null. Backward: the gradients of every rank gathered to root and summed into x's gradient
/// (first order only: NotImplementedError when double backprop reaches it).
///
/// For the collectives: ValueError for a null communicator or a root outside it (checked on each
/// rank); errors in the data (a null x on root, wrong counts, dtypes that differ across ranks) are
/// found by the communicator on every rank alike, so all ranks throw the same exception, prefixed
/// with the function, the rank and the collective (`mn::functions::gather: rank 1 on host b: gather
/// #7 (flat, 48 B): ...`).
Variable bcast(Communicator comm, const Variable& x, int root = 0);

/// On root: every rank's `x` in rank order (ChainerMN's gather(comm, x, root=0); shapes may differ,
/// dtypes must agree). On the other ranks: one element, a delegate variable (float32 scalar zero) to
/// backpropagate from (ChainerMN returns it there too). Backward: root scatters the gradients back
/// (first order only).
std::vector<Variable> gather(Communicator comm, const Variable& x, int root = 0);

/// Rank i gets root's xs[i] (ChainerMN's scatter(comm, xs, root=0)); root passes comm.size()
/// variables (ValueError on every rank otherwise), the others' xs are ignored. Backward: the
/// gradients gathered to root (first order only).
Variable scatter(Communicator comm, const std::vector<Variable>& xs, int root = 0);

/// Every rank's `x` in rank order, on every rank (ChainerMN's allgather(comm, x); shapes may differ,
/// dtypes must agree). Backward: alltoall of the output gradients, summed. Double backprop works.
std::vector<Variable> allgather(Communicator comm, const Variable& x);

/// Rank i sends xs[j] to rank j and gets rank j's xs[i] as element j (ChainerMN's alltoall(comm,
/// xs)); every rank passes comm.size() variables (ValueError on every rank otherwise). Backward:
/// alltoall of the gradients. Double backprop works.
std::vector<Variable> alltoall(Communicator comm, const std::vector<Variable>& xs);

}  // namespace rensa::mn::functions
