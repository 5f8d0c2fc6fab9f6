#pragma once
// start_mean_grad's requests: run in order on one background thread when MPI allows threads
// (MPI_THREAD_MULTIPLE), otherwise at once on the caller's.
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "rensa/mn/communicator.h"
#include "src/mn/wire_layout.h"

namespace rensa::mn::detail {
class CommunicatorImpl;
}

namespace rensa::mn {
/// The shared state of a start_mean_grad request.
struct Communicator::Request::State {
  std::weak_ptr<detail::CommunicatorImpl> impl;
  std::vector<Array> grads;
  detail::WireLayout layout;
  bool check = false;
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
};
}  // namespace rensa::mn

namespace rensa::mn::detail {

class RequestQueue {
 public:
  using State = Communicator::Request::State;
  /// Runs one request; must not throw (a request's error goes into its state).
  using Run = std::function<void(State&)>;

  RequestQueue() = default;
  ~RequestQueue() { shutdown(); }
  RequestQueue(const RequestQueue&) = delete;
  RequestQueue& operator=(const RequestQueue&) = delete;

  /// Starts the thread when `threaded`; until then (or without it) push runs requests at once.
  void start(bool threaded, Run run);
  bool threaded() const { return worker_.joinable(); }
  /// Queues `s` (or runs it, unthreaded). ValueError after shutdown.
  void push(const std::shared_ptr<State>& s);
  /// Finishes the queued requests and stops the thread.
  void shutdown();

 private:
  void loop();

  Run run_;
  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<State>> queue_;
  bool stop_ = false;
};

}  // namespace rensa::mn::detail
