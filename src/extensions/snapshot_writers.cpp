// Snapshot writers: now, on a thread per snapshot, or on one thread with a queue.
#include "rensa/extensions/snapshot_writers.h"

#include <iostream>
#include <utility>

#include "rensa/serializers/npz.h"

namespace rensa::extensions {
namespace {

void write(const std::string& path, const SnapshotWriter::Values& values, const std::function<void()>& done) {
  serializers::write_npz(path, values);
  if (done) done();
}

// What a destructor can do with a write that failed and was never rethrown: say so.
void report_lost(const char* writer, const std::exception_ptr& error) {
  if (!error) return;
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    std::cerr << writer << ": a snapshot was not written: " << e.what() << "\n";
  }
}

}  // namespace

void SimpleWriter::operator()(const std::string& path, Values values, std::function<void()> done) {
  write(path, values, done);
}

ThreadWriter::~ThreadWriter() {
  if (worker_.joinable()) worker_.join();
  report_lost("ThreadWriter", error_);
}

void ThreadWriter::join() {
  if (worker_.joinable()) worker_.join();
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void ThreadWriter::operator()(const std::string& path, Values values, std::function<void()> done) {
  join();
  worker_ = std::thread([this, path, values = std::move(values), done = std::move(done)] {
    try {
      write(path, values, done);
    } catch (...) {
      error_ = std::current_exception();  // read only after join
    }
  });
}

void ThreadWriter::finalize() {
  join();
}

ThreadQueueWriter::ThreadQueueWriter() : consumer_([this] { consume(); }) {}

ThreadQueueWriter::~ThreadQueueWriter() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  consumer_.join();
  report_lost("ThreadQueueWriter", error_);
}

void ThreadQueueWriter::consume() {
  std::unique_lock lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything written
    Task task = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    std::exception_ptr failed;
    try {
      write(task.path, task.values, task.done);
    } catch (...) {
      failed = std::current_exception();
    }
    lock.lock();
    busy_ = false;
    if (failed && !error_) error_ = failed;
    changed_.notify_all();
  }
}

void ThreadQueueWriter::rethrow() {
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void ThreadQueueWriter::operator()(const std::string& path, Values values, std::function<void()> done) {
  {
    std::lock_guard lock(mutex_);
    rethrow();
    queue_.push_back({path, std::move(values), std::move(done)});
  }
  changed_.notify_all();
}

void ThreadQueueWriter::finalize() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return queue_.empty() && !busy_; });
  rethrow();
}

}  // namespace rensa::extensions
