// Differentiable send and recv (ChainerMN's delegate-variable pattern) and pseudo_connect.
//
// A message of mn::functions is a small int64 manifest (kind, count) followed by the arrays, so a
// receiver can tell data from gradients and from a plain Communicator::send, and name both sides
// when they disagree instead of misreading bytes.
#include <string>
#include <utility>
#include <vector>

#include "rensa/core/error.h"
#include "rensa/core/function_node.h"
#include "rensa/mn/functions.h"
#include "src/mn/communicator_impl.h"

namespace rensa::mn::functions {
namespace {

constexpr int64_t kData = 0x524e5301;      // forward: send -> recv
constexpr int64_t kGradient = 0x524e5302;  // backward: recv -> send

struct Peer {
  Communicator comm;
  int rank;
  int tag;
};

void check_peer(const char* op, const Communicator& comm, int rank, int tag) {
  RENSA_CHECK(comm.valid(), ValueError, op, ": null communicator (default-constructed)");
  RENSA_CHECK(rank >= 0 && rank < comm.size(), ValueError, op, ": rank ", rank,
              " is not a rank of a communicator of size ", comm.size());
  RENSA_CHECK(rank != comm.rank(), ValueError, op, ": rank ", rank,
              " is this rank; communicating with itself would deadlock");
  RENSA_CHECK(tag >= 0, ValueError, op, ": tag ", tag, " is negative");
}

std::string describe(const Array& a) {
  return rensa::detail::concat(a.dtype(), " ", a.shape());
}

void send_message(const Peer& p, int64_t kind, const std::vector<Array>& arrays, const std::string& context) {
  auto& impl = p.comm.impl();
  impl.send(Array::from_vector(std::vector<int64_t>{kind, static_cast<int64_t>(arrays.size())}), p.rank, p.tag,
            context);
  for (const Array& a : arrays) impl.send(a, p.rank, p.tag, context);
}

std::vector<Array> recv_message(const Peer& p, int64_t kind, const std::string& context) {
  auto& impl = p.comm.impl();
  const Array head = impl.recv(p.rank, p.tag, context);
  const bool manifest = head.dtype() == Dtype::int64 && head.shape() == Shape{2};
  const std::vector<int64_t> h = manifest ? head.to_vector<int64_t>() : std::vector<int64_t>{0, 0};
  const char* expected =
      kind == kData ? "data from mn::functions::send" : "a gradient from mn::functions::recv's backward";
  RENSA_CHECK(manifest && (h[0] == kData || h[0] == kGradient), CommunicationError, context, "rank ", p.comm.rank(),
              " expected ", expected, " from rank ", p.rank, " with tag ", p.tag, " but got a ", describe(head),
              " array that mn::functions did not send (a plain Communicator::send?)");
  RENSA_CHECK(h[1] >= 0, CommunicationError, context, "malformed manifest from rank ", p.rank);
  std::vector<Array> out;
  out.reserve(static_cast<std::size_t>(h[1]));
  for (int64_t i = 0; i < h[1]; ++i) out.push_back(impl.recv(p.rank, p.tag, context));
  // Read whole before the check, so that a caught error leaves no message behind.
  RENSA_CHECK(h[0] == kind, CommunicationError, context, "rank ", p.comm.rank(), " expected ", expected, " from rank ",
              p.rank, " with tag ", p.tag, " but got ", h[0] == kData ? "data from a send" : "a gradient",
              ": the ranks' forward or backward communications are out of order");
  return out;
}

// Backward of a point-to-point node is first order only: its gradient crosses ranks as data.
void check_first_order(const char* op) {
  RENSA_CHECK(!config().enable_backprop, NotImplementedError, op,
              ": double backprop through point-to-point communication is not supported");
}

// Recording even when no input requires grad keeps every rank's backward communications in step.
Variable dummy() {
  return Variable(Array::zeros({}, Dtype::float32), true);
}

}  // namespace

Variable send(const std::vector<Variable>& xs, const Communicator& communicator, int rank, int tag) {
  rensa::detail::ForwardEntry entry("mn_send", std::span<const Variable>(xs));
  check_peer("mn::functions::send", communicator, rank, tag);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    RENSA_CHECK(!xs[i].is_null(), ValueError, "mn::functions::send: x[", i, "] is null");
  }
  Peer peer{communicator, rank, tag};
  std::vector<Array> arrays;
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  for (const Variable& x : xs) {
    arrays.push_back(x.array());
    shapes.push_back(x.shape());
    dtypes.push_back(x.dtype());
  }
  send_message(peer, kData, arrays, "mn::functions::send: ");
  std::vector<Variable> inputs = xs;
  inputs.push_back(dummy());
  auto backward = [peer, shapes = std::move(shapes), dtypes = std::move(dtypes)](const BackwardContext&) {
    check_first_order("mn::functions::send");
    std::vector<Array> gs = recv_message(peer, kGradient, "mn::functions::send (backward): ");
    const int me = peer.comm.rank();
    RENSA_CHECK(gs.size() == shapes.size(), CommunicationError, "mn::functions::send (backward): rank ", me, " sent ",
                shapes.size(), " variables to rank ", peer.rank, " with tag ", peer.tag, " but got ", gs.size(),
                " gradients back");
    std::vector<Variable> gxs;
    for (std::size_t i = 0; i < gs.size(); ++i) {
      RENSA_CHECK(gs[i].shape() == shapes[i] && gs[i].dtype() == dtypes[i], CommunicationError,
                  "mn::functions::send (backward): rank ", me, " sent variable ", i, " as ", dtypes[i], " ", shapes[i],
                  " to rank ", peer.rank, " with tag ", peer.tag, " but rank ", peer.rank, " returned a gradient of ",
                  describe(gs[i]));
      gxs.emplace_back(std::move(gs[i]));
    }
    gxs.emplace_back();  // the dummy
    return gxs;
  };
  return record("mn_send", std::span<const Variable>(inputs), {Array::zeros({}, Dtype::float32)},
                std::move(backward))[0];
}

Variable send(const Variable& x, const Communicator& communicator, int rank, int tag) {
  return send(std::vector<Variable>{x}, communicator, rank, tag);
}

std::vector<Variable> recv_tuple(const Communicator& communicator, int rank, const Variable& delegate_variable,
                                 int tag) {
  rensa::detail::ForwardEntry entry("mn_recv", delegate_variable);
  check_peer("mn::functions::recv", communicator, rank, tag);
  Peer peer{communicator, rank, tag};
  std::vector<Array> ys = recv_message(peer, kData, "mn::functions::recv: ");
  std::vector<Variable> inputs;
  const bool has_delegate = !delegate_variable.is_null();
  if (has_delegate) inputs.push_back(delegate_variable);
  inputs.push_back(dummy());
  Shape delegate_shape = has_delegate ? delegate_variable.shape() : Shape{};
  Dtype delegate_dtype = has_delegate ? delegate_variable.dtype() : Dtype::float32;
  auto backward = [peer, has_delegate, delegate_shape, delegate_dtype](const BackwardContext& ctx) {
    check_first_order("mn::functions::recv");
    std::vector<Array> gys;
    for (std::size_t i = 0; i < ctx.num_outputs(); ++i) gys.push_back(ctx.grad_output(i).array());
    send_message(peer, kGradient, gys, "mn::functions::recv (backward): ");
    // A zero (not null) gradient for the delegate, so backward goes on to the send behind it.
    std::vector<Variable> gxs;
    if (has_delegate) gxs.emplace_back(Array::zeros(delegate_shape, delegate_dtype));
    gxs.emplace_back();
    return gxs;
  };
  return record("mn_recv", std::span<const Variable>(inputs), std::move(ys), std::move(backward));
}

Variable recv(const Communicator& communicator, int rank, const Variable& delegate_variable, int tag) {
  std::vector<Variable> ys = recv_tuple(communicator, rank, delegate_variable, tag);
  RENSA_CHECK(ys.size() == 1, CommunicationError, "mn::functions::recv: rank ", communicator.rank(), " received ",
              ys.size(), " variables from rank ", rank, " with tag ", tag, " where it expected one (use recv_tuple)");
  return ys[0];
}

std::vector<Variable> pseudo_connect(const Variable& delegate_variable, const std::vector<Variable>& actual_variables) {
  rensa::detail::ForwardEntry entry("mn_pseudo_connect", delegate_variable);
  RENSA_CHECK(!delegate_variable.is_null(), ValueError, "mn::functions::pseudo_connect: delegate_variable is null");
  std::vector<Variable> inputs{delegate_variable};
  std::vector<Array> outputs;
  for (std::size_t i = 0; i < actual_variables.size(); ++i) {
    RENSA_CHECK(!actual_variables[i].is_null(), ValueError, "mn::functions::pseudo_connect: actual_variables[", i,
                "] is null");
    inputs.push_back(actual_variables[i]);
    outputs.push_back(actual_variables[i].array());
  }
  const Shape& shape = delegate_variable.shape();
  const Dtype dtype = delegate_variable.dtype();
  return record("mn_pseudo_connect", std::span<const Variable>(inputs), std::move(outputs),
                [shape, dtype](const BackwardContext& ctx) {
                  std::vector<Variable> gxs{Variable(Array::zeros(shape, dtype))};
                  for (std::size_t i = 0; i < ctx.num_outputs(); ++i) gxs.push_back(ctx.grad_output(i));
                  return gxs;
                });
}

Variable pseudo_connect(const Variable& delegate_variable, const Variable& actual_variable) {
  return pseudo_connect(delegate_variable, std::vector<Variable>{actual_variable})[0];
}

}  // namespace rensa::mn::functions
