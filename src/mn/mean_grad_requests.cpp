// CommunicatorImpl's start_mean_grad requests: checked, laid out once, and queued (RequestQueue); each
// runs as a mean_grad collective on the background channel (or the user's, without threads).
#include "rensa/core/timeline.h"
#include "src/mn/communicator_impl.h"

namespace rensa::mn::detail {

Communicator::Request CommunicatorImpl::start_mean_grad(std::vector<Array> grads) {
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const Array& g = grads[i];
    RENSA_CHECK(!g.is_null(), ValueError, "start_mean_grad: array ", i, " is null");
    RENSA_CHECK(g.device().is_host() && g.is_contiguous(), ValueError, "start_mean_grad: array ", i,
                " must be a contiguous host array (shape ", g.shape(), ", device ", to_string(g.device()), ")");
    RENSA_CHECK(is_floating(g.dtype()), DtypeError, "start_mean_grad: array ", i, " has dtype ", dtype_name(g.dtype()),
                "; only floating gradients can be averaged");
  }
  auto state = std::make_shared<Communicator::Request::State>();
  state->impl = weak_from_this();
  state->layout = layout(grads);
  state->grads = std::move(grads);
  state->check = checking_;
  requests_.push(state);
  return Communicator::Request(state);
}

void CommunicatorImpl::run_request(Communicator::Request::State& s) {
  Channel& ch = threaded_ ? bg_ : fg_;
  const Fingerprint fp{static_cast<int64_t>(OpCode::mean_grad), static_cast<int64_t>(options_.allreduce_grad_dtype),
                       s.layout.count, -1, static_cast<int64_t>(s.grads.size())};
  try {
    run_op(ch, OpCode::mean_grad, s.layout.nbytes, fp, s.check, [&] {
      timeline::Span span("allreduce", timeline::Category::comm, static_cast<int64_t>(ch.seq));
      mean_grads(ch, s.grads, s.layout);
    });
  } catch (...) {
    s.error = std::current_exception();
  }
  // The arrays are released here, before completion is signalled: once wait() returns, this thread
  // must hold nothing of the caller's (a communicator in a static may be torn down at exit while the
  // thread still holds the request).
  std::vector<Array>().swap(s.grads);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.done = true;
  }
  s.cv.notify_all();
}

}  // namespace rensa::mn::detail
