#include "src/mn/request_queue.h"

#include "rensa/core/timeline.h"
#include "rensa/core/error.h"

namespace rensa::mn::detail {

void RequestQueue::start(bool threaded, Run run) {
  run_ = std::move(run);
  if (threaded) worker_ = std::thread([this] { loop(); });
}

void RequestQueue::push(const std::shared_ptr<State>& s) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    RENSA_CHECK(!stop_, ValueError, "start_mean_grad: the communicator is shut down");
    if (worker_.joinable()) queue_.push_back(s);
  }
  if (!worker_.joinable()) {
    run_(*s);
    return;
  }
  cv_.notify_one();
}

void RequestQueue::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable() && worker_.get_id() != std::this_thread::get_id()) worker_.join();
}

void RequestQueue::loop() {
  timeline::set_thread_name("communication");
  for (;;) {
    std::shared_ptr<State> s;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and every request is done
      s = std::move(queue_.front());
      queue_.pop_front();
    }
    run_(*s);
  }
}

}  // namespace rensa::mn::detail
