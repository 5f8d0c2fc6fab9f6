#pragma once
// The large-minibatch flags shared by train_mnist and train_cnn (docs/large_batch.md):
//   --optimizer momentum_sgd|adam|lars|lamb|rmsprop_warmup, --lr (default per optimizer),
//   --base-batchsize N (scale lr from a global batch of N to batchsize x ranks), --scaling
//   linear|sqrt, --warmup-epochs E (linear warm-up of lr; rmsprop_warmup: the move from RMSprop
//   to momentum SGD), --ghost-batch M (batch normalization over each M consecutive examples).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rensa/training.h"

namespace large_batch {

struct Flags {
  std::string optimizer;
  double lr = 0.0;  // 0: the example's default for the optimizer
  int64_t base_batchsize = 0;  // 0: no scaling
  std::string scaling = "linear";
  double warmup_epochs = 0.0;
  int64_t ghost_batch = 0;  // 0: plain batch normalization
};

inline void add_flags(CLI::App& app, Flags& f, const std::string& default_optimizer, const std::string& lr_defaults) {
  f.optimizer = default_optimizer;
  app.add_option("--optimizer", f.optimizer, "momentum_sgd, adam, lars, lamb or rmsprop_warmup")
      ->check(CLI::IsMember({"momentum_sgd", "adam", "lars", "lamb", "rmsprop_warmup"}))
      ->capture_default_str();
  app.add_option("--lr", f.lr, "Learning rate (Adam's alpha) at --base-batchsize; default per optimizer: " + lr_defaults)
      ->check(CLI::Validator(
          [](const std::string& v) {
            double x = 0.0;
            return CLI::detail::lexical_cast(v, x) && x > 0.0 && std::isfinite(x) ? ""
                                                                                   : "must be a positive number, got " + v;
          },
          "POSITIVE"));
  app.add_option("--base-batchsize", f.base_batchsize,
                 "The global batch --lr is meant for: lr is scaled to batchsize x ranks by the scaling rule "
                 "(default: no scaling)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--scaling", f.scaling, "Scaling rule of --base-batchsize: linear or sqrt")
      ->check(CLI::IsMember({"linear", "sqrt"}))
      ->capture_default_str();
  app.add_option("--warmup-epochs", f.warmup_epochs,
                 "Epochs of linear learning-rate warm-up (from lr x base-batchsize / global batch, else lr / 10); "
                 "with rmsprop_warmup, the epochs over which RMSprop gives way to momentum SGD")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--ghost-batch", f.ghost_batch,
                 "Ghost batch normalization: training-mode statistics over each M consecutive examples of a "
                 "batch, so one process with batch B computes what B / M workers with M each compute; the "
                 "batch size must be a multiple of M")
      ->check(CLI::Range(int64_t{1}, int64_t{60000}));
}

// Sets (or clears, nullopt) the ghost batch size of every BatchNormalization of `model`; returns
// how many there are.
inline int64_t set_ghost_batch(rensa::Link& model, std::optional<int64_t> size) {
  int64_t layers = 0;
  for (auto& [path, link] : model.namedlinks()) {
    if (auto* bn = dynamic_cast<rensa::links::BatchNormalization*>(link)) {
      bn->set_ghost_batch_size(size);
      ++layers;
    }
  }
  return layers;
}

// Applies --ghost-batch to `model`. A ValueError naming the flag when the batch is not a multiple of
// it or the model has no batch normalization.
inline void apply_ghost_batch(rensa::Link& model, const Flags& f, int64_t batchsize) {
  if (f.ghost_batch == 0) return;
  if (batchsize % f.ghost_batch != 0) {
    RENSA_THROW(rensa::ValueError, "--ghost-batch ", f.ghost_batch, ": the batch size ", batchsize,
                " is not a multiple of it");
  }
  if (set_ghost_batch(model, f.ghost_batch) == 0) {
    RENSA_THROW(rensa::ValueError, "--ghost-batch ", f.ghost_batch, ": the model has no BatchNormalization layer");
  }
}

// The hyperparameter the schedules and the scaling rule drive.
inline std::string lr_name(const Flags& f) { return f.optimizer == "adam" ? "alpha" : "lr"; }

// The learning rate in effect: --lr (or `default_lr`) scaled from --base-batchsize to the global batch.
inline double learning_rate(const Flags& f, double default_lr, int64_t batchsize, int64_t n_ranks) {
  const double lr = f.lr > 0 ? f.lr : default_lr;
  if (f.base_batchsize == 0) return lr;
  return rensa::optimizers::scaled_learning_rate(lr, f.base_batchsize, batchsize, n_ranks,
                                                 rensa::optimizers::scaling_rule_from_name(f.scaling));
}

inline int64_t warmup_iterations(const Flags& f, int64_t per_epoch) {
  return static_cast<int64_t>(std::llround(f.warmup_epochs * static_cast<double>(per_epoch)));
}

// Iterations of the learning-rate warm-up (none for rmsprop_warmup, whose transition is its warm-up).
inline int64_t lr_warmup_iterations(const Flags& f, int64_t per_epoch) {
  return f.optimizer == "rmsprop_warmup" ? 0 : warmup_iterations(f, per_epoch);
}

// The optimizer named by --optimizer at learning rate `lr`; `per_epoch` iterations make an epoch.
inline std::unique_ptr<rensa::optimizers::Optimizer> make_optimizer(const Flags& f, double lr, int64_t per_epoch) {
  namespace O = rensa::optimizers;
  if (f.optimizer == "adam") return std::make_unique<O::Adam>(lr);
  if (f.optimizer == "lars") return std::make_unique<O::LARS>(lr, 0.9);
  if (f.optimizer == "lamb") return std::make_unique<O::LAMB>(lr);
  if (f.optimizer == "rmsprop_warmup") {
    // Without --warmup-epochs, the transition takes the first epoch.
    const int64_t end = f.warmup_epochs > 0 ? warmup_iterations(f, per_epoch) : per_epoch;
    return std::make_unique<O::RMSpropWarmup>(lr, end);
  }
  return std::make_unique<O::MomentumSGD>(lr, 0.9);
}

// The learning-rate schedule: the warm-up of --warmup-epochs, then `decay` (null: constant), as one
// ChainedShift; null when there is neither.
inline std::shared_ptr<rensa::extensions::HyperparameterShift> make_schedule(
    const Flags& f, int64_t per_epoch, int64_t batchsize, int64_t n_ranks,
    std::shared_ptr<rensa::extensions::HyperparameterShift> decay) {
  const int64_t warmup = lr_warmup_iterations(f, per_epoch);
  if (warmup == 0) return decay;
  const double global = static_cast<double>(batchsize * n_ranks);
  // Goyal et al. warm up from the base batch's rate; without one, from a tenth.
  const double start = f.base_batchsize > 0 ? std::min(1.0, static_cast<double>(f.base_batchsize) / global) : 0.1;
  return rensa::extensions::warmup_then(lr_name(f), warmup, start, std::move(decay));
}

// MultistepShift's steps (absolute iterations) for a decay that starts after `warmup` iterations:
// the steps within the warm-up are dropped, the others counted from its end.
inline std::vector<int64_t> steps_after(const std::vector<int64_t>& steps, int64_t warmup) {
  std::vector<int64_t> out;
  for (int64_t s : steps) {
    if (s > warmup) out.push_back(s - warmup);
  }
  return out;
}

}  // namespace large_batch
