#pragma once
/// \file
/// Snapshot writers (Chainer's snapshot_writers): how a snapshot's file reaches the disk. Every
/// writer writes atomically (a temporary file, fsync, rename), so a file under its final name is
/// complete whenever the job dies.

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "rensa/core/array.h"

namespace rensa::extensions {

/// Base of the writers. A Snapshot calls it with the file's path, the values to save and `done`,
/// to run once the file is complete (the snapshot's n_retains cleanup).
class SnapshotWriter {
 public:
  /// The values of a snapshot by key.
  using Values = std::map<std::string, Array>;
  virtual ~SnapshotWriter() = default;
  /// Saves `values` to `path`, now or later (see deferred()).
  virtual void operator()(const std::string& path, Values values, std::function<void()> done) = 0;
  /// True when the write may finish after the call returns: the snapshot then hands over copies of
  /// the values (training goes on changing the originals).
  virtual bool deferred() const { return false; }
  /// Waits for every pending write. A background write that failed is rethrown here or by the next
  /// call (once), as the IOError naming its file.
  virtual void finalize() {}
};

/// Writes before returning (the default of every snapshot).
class SimpleWriter : public SnapshotWriter {
 public:
  void operator()(const std::string& path, Values values, std::function<void()> done) override;
};

/// Writes each snapshot on a thread of its own while training goes on; a snapshot taken while the
/// previous one is still being written first waits for it (Chainer's ThreadWriter). Memory: one
/// copy of the saved values while a write is pending.
class ThreadWriter : public SnapshotWriter {
 public:
  ~ThreadWriter() override;
  void operator()(const std::string& path, Values values, std::function<void()> done) override;
  bool deferred() const override { return true; }
  void finalize() override;

 private:
  void join();
  std::thread worker_;
  std::exception_ptr error_;
};

/// Writes the snapshots one after another on one background thread, in the order taken; taking a
/// snapshot never waits (Chainer's ThreadQueueWriter). Memory: one copy of the saved values per
/// snapshot still queued.
class ThreadQueueWriter : public SnapshotWriter {
 public:
  ThreadQueueWriter();
  ~ThreadQueueWriter() override;
  void operator()(const std::string& path, Values values, std::function<void()> done) override;
  bool deferred() const override { return true; }
  void finalize() override;

 private:
  struct Task {
    std::string path;
    Values values;
    std::function<void()> done;
  };
  void consume();
  void rethrow();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Task> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::thread consumer_;
};

}  // namespace rensa::extensions
