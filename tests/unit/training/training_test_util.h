#pragma once
// Helpers shared by the training-loop tests: an updater that only counts, and a trainer driver
// that calls triggers the way Trainer::run does.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <unistd.h>

#include "rensa/training/trainer.h"
#include "rensa/training/updater.h"

namespace rensa::testing_training {

/// Counts iterations; an epoch is `per_epoch` iterations (epoch_detail = iteration / per_epoch).
class FakeUpdater : public training::Updater {
 public:
  explicit FakeUpdater(int64_t per_epoch = 4) : per_epoch_(per_epoch) {}
  void update() override {
    ++iteration_;
    ++updates;
  }
  int64_t epoch() const override { return iteration_ / per_epoch_; }
  double epoch_detail() const override { return static_cast<double>(iteration_) / static_cast<double>(per_epoch_); }
  bool is_new_epoch() const override { return iteration_ > 0 && iteration_ % per_epoch_ == 0; }
  void set_iteration(int64_t i) { iteration_ = i; }
  std::map<std::string, optimizers::Optimizer*> get_all_optimizers() override { return optimizers; }
  int64_t updates = 0;
  /// Optimizers the updater reports (none by default); it never updates them.
  std::map<std::string, optimizers::Optimizer*> optimizers;

 private:
  int64_t per_epoch_;
};

/// A fresh, empty directory under the system's temporary directory, removed on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    path_ = (std::filesystem::temp_directory_path() /
             ("rensa_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++)))
                .string();
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (std::filesystem::path(path_) / name).string(); }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::string path_;
};

}  // namespace rensa::testing_training
