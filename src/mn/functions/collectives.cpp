// Differentiable collectives: bcast, gather, scatter, allgather, alltoall. Each backward is the dual
// collective (bcast <-> gather+sum, gather <-> scatter, allgather <-> alltoall+sum, alltoall <->
// alltoall). Bad arguments (null arrays, wrong counts, differing dtypes) are left to the
// communicator, which finds them on every rank alike, so all ranks throw together instead of some
// waiting for the others.
#include <string>
#include <utility>
#include <vector>

#include "rensa/core/error.h"
#include "rensa/core/function_node.h"
#include "rensa/functions/basic_math.h"
#include "rensa/mn/functions.h"

namespace rensa::mn::functions {
namespace {

void check_comm(const char* op, const Communicator& comm) {
  RENSA_CHECK(comm.valid(), ValueError, op, ": null communicator (default-constructed)");
}

void check_root(const char* op, const Communicator& comm, int root) {
  check_comm(op, comm);
  RENSA_CHECK(root >= 0 && root < comm.size(), ValueError, op, ": root ", root,
              " is not a rank of a communicator of size ", comm.size());
}

// Runs a communicator call, naming the differentiable function in front of its error (type kept).
template <class Fn>
auto named(const char* op, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (...) {
    rethrow_with_context(std::string(op) + ": ");
  }
}

// Recording even when no input requires grad keeps every rank's backward collectives in step.
Variable dummy() {
  return Variable(Array::zeros({}, Dtype::float32), true);
}

// bcast, gather and scatter have a first-order backward: gradients cross ranks as data.
void check_first_order(const char* op) {
  RENSA_CHECK(!config().enable_backprop, NotImplementedError, op,
              ": double backprop through this collective is not supported (allgather, alltoall and allreduce "
              "support it)");
}

Array sum_arrays(const std::vector<Array>& xs) {
  Array total = xs.at(0);
  for (std::size_t i = 1; i < xs.size(); ++i) total = rensa::functions::add(total, xs[i]).array();
  return total;
}

std::vector<Array> arrays_of(const std::vector<Variable>& xs) {
  std::vector<Array> out;
  out.reserve(xs.size());
  for (const Variable& x : xs) out.push_back(x.is_null() ? Array() : x.array());
  return out;
}

std::vector<Array> grad_arrays(const BackwardContext& ctx) {
  std::vector<Array> out;
  for (std::size_t i = 0; i < ctx.num_outputs(); ++i) out.push_back(ctx.grad_output(i).array());
  return out;
}

}  // namespace

Variable bcast(Communicator comm, const Variable& x, int root) {
  rensa::detail::ForwardEntry entry("mn_bcast", x);
  check_root("mn::functions::bcast", comm, root);
  const bool is_root = comm.rank() == root;
  Array y =
      named("mn::functions::bcast", [&] { return comm.bcast(is_root && !x.is_null() ? x.array() : Array(), root); });
  std::vector<Variable> inputs;
  if (is_root) inputs.push_back(x);
  inputs.push_back(dummy());
  return record("mn_bcast", std::span<const Variable>(inputs), {std::move(y)},
                [comm, root, is_root](const BackwardContext& ctx) mutable {
                  check_first_order("mn::functions::bcast");
                  std::vector<Array> gs = comm.gather(ctx.grad_output().array(), root);
                  std::vector<Variable> gxs;
                  if (is_root) gxs.emplace_back(sum_arrays(gs));
                  gxs.emplace_back();
                  return gxs;
                })[0];
}

std::vector<Variable> gather(Communicator comm, const Variable& x, int root) {
  rensa::detail::ForwardEntry entry("mn_gather", x);
  check_root("mn::functions::gather", comm, root);
  std::vector<Array> ys =
      named("mn::functions::gather", [&] { return comm.gather(x.is_null() ? Array() : x.array(), root); });
  const bool is_root = comm.rank() == root;
  if (!is_root) ys = {Array::zeros({}, Dtype::float32)};  // the delegate variable
  return record("mn_gather", {x, dummy()}, std::move(ys), [comm, root, is_root](const BackwardContext& ctx) mutable {
    check_first_order("mn::functions::gather");
    Array gx = comm.scatter(is_root ? grad_arrays(ctx) : std::vector<Array>{}, root);
    return std::vector<Variable>{Variable(std::move(gx)), Variable()};
  });
}

Variable scatter(Communicator comm, const std::vector<Variable>& xs, int root) {
  rensa::detail::ForwardEntry entry("mn_scatter", std::span<const Variable>(xs));
  check_root("mn::functions::scatter", comm, root);
  const bool is_root = comm.rank() == root;
  Array y = named("mn::functions::scatter",
                  [&] { return comm.scatter(is_root ? arrays_of(xs) : std::vector<Array>{}, root); });
  std::vector<Variable> inputs;
  if (is_root) inputs = xs;
  inputs.push_back(dummy());
  const std::size_t n = is_root ? xs.size() : 0;
  return record("mn_scatter", std::span<const Variable>(inputs), {std::move(y)},
                [comm, root, n](const BackwardContext& ctx) mutable {
                  check_first_order("mn::functions::scatter");
                  std::vector<Array> gs = comm.gather(ctx.grad_output().array(), root);
                  std::vector<Variable> gxs;
                  for (std::size_t i = 0; i < n; ++i) gxs.emplace_back(std::move(gs[i]));
                  gxs.emplace_back();
                  return gxs;
                })[0];
}

std::vector<Variable> allgather(Communicator comm, const Variable& x) {
  rensa::detail::ForwardEntry entry("mn_allgather", x);
  check_comm("mn::functions::allgather", comm);
  std::vector<Array> ys =
      named("mn::functions::allgather", [&] { return comm.allgather(x.is_null() ? Array() : x.array()); });
  return record("mn_allgather", {x, dummy()}, std::move(ys), [comm](const BackwardContext& ctx) mutable {
    // Rank j's gradient of my x arrives as element j; written with differentiable functions.
    std::vector<Variable> gys;
    for (std::size_t i = 0; i < ctx.num_outputs(); ++i) gys.push_back(ctx.grad_output(i));
    std::vector<Variable> parts = alltoall(comm, gys);
    Variable gx = parts.at(0);
    for (std::size_t i = 1; i < parts.size(); ++i) gx = rensa::functions::add(gx, parts[i]);
    return std::vector<Variable>{gx, Variable()};
  });
}

std::vector<Variable> alltoall(Communicator comm, const std::vector<Variable>& xs) {
  rensa::detail::ForwardEntry entry("mn_alltoall", std::span<const Variable>(xs));
  check_comm("mn::functions::alltoall", comm);
  std::vector<Array> ys = named("mn::functions::alltoall", [&] { return comm.alltoall(arrays_of(xs)); });
  std::vector<Variable> inputs = xs;
  inputs.push_back(dummy());
  return record("mn_alltoall", std::span<const Variable>(inputs), std::move(ys),
                [comm](const BackwardContext& ctx) mutable {
                  std::vector<Variable> gys;
                  for (std::size_t i = 0; i < ctx.num_outputs(); ++i) gys.push_back(ctx.grad_output(i));
                  std::vector<Variable> gxs = alltoall(comm, gys);
                  gxs.emplace_back();
                  return gxs;
                });
}

}  // namespace rensa::mn::functions
