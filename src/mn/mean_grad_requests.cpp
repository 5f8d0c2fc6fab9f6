// CommunicatorImpl's start_mean_grad requests: queued to the background thread (MPI_THREAD_MULTIPLE)
// or run at once, each a mean_grad collective on its own channel.
#include "src/mn/communicator_impl.h"

namespace rensa::mn::detail {

// ---- requests ----------------------------------------------------------------------------------------

Communicator::Request CommunicatorImpl::start_mean_grad(std::vector<Array> grads) {
  int64_t count = 0;
  std::size_t nbytes = 0;
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const Array& g = grads[i];
    RENSA_CHECK(!g.is_null(), ValueError, "start_mean_grad: array ", i, " is null");
    RENSA_CHECK(g.device().is_host() && g.is_contiguous(), ValueError, "start_mean_grad: array ", i,
                " must be a contiguous host array (shape ", g.shape(), ", device ", to_string(g.device()), ")");
    RENSA_CHECK(is_floating(g.dtype()), DtypeError, "start_mean_grad: array ", i, " has dtype ", dtype_name(g.dtype()),
                "; only floating gradients can be averaged");
    count += g.size();
    nbytes += static_cast<std::size_t>(g.size()) * itemsize(wire_dtype(g.dtype()));
  }
  (void)count;
  (void)nbytes;
  auto state = std::make_shared<Communicator::Request::State>();
  state->impl = weak_from_this();
  state->grads = std::move(grads);
  state->check = checking_;
  if (!threaded_) {
    run_request(*state);
    return Communicator::Request(state);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    RENSA_CHECK(!stop_, ValueError, "start_mean_grad: the communicator is shut down");
    queue_.push_back(state);
  }
  cv_.notify_one();
  return Communicator::Request(state);
}

void CommunicatorImpl::worker_loop() {
  for (;;) {
    std::shared_ptr<Communicator::Request::State> s;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and every request is done
      s = std::move(queue_.front());
      queue_.pop_front();
    }
    run_request(*s);
  }
}

void CommunicatorImpl::run_request(Communicator::Request::State& s) {
  Channel& ch = threaded_ ? bg_ : fg_;
  int64_t count = 0;
  std::size_t nbytes = 0;
  for (const Array& g : s.grads) {
    count += g.size();
    nbytes += static_cast<std::size_t>(g.size()) * itemsize(wire_dtype(g.dtype()));
  }
  const Fingerprint fp{static_cast<int64_t>(OpCode::mean_grad), static_cast<int64_t>(options_.allreduce_grad_dtype),
                       count, -1, static_cast<int64_t>(s.grads.size())};
  try {
    run_op(ch, OpCode::mean_grad, nbytes, fp, s.check, [&] { mean_grads(ch, s.grads); });
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
