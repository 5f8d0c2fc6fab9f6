#pragma once
/// \file
/// Normalization layers (Chainer's L.BatchNormalization, L.BatchRenormalization,
/// L.DecorrelatedBatchNormalization, L.GroupNormalization and L.LayerNormalization). Population
/// statistics over a pass of data: rensa/training/batch_norm_statistics.h.

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>

#include "rensa/functions/normalization.h"
#include "rensa/links/link.h"

namespace rensa::links {

/// Options of BatchNormalization.
struct BatchNormalizationOptions {
  /// Weight of the old value in the running averages: avg = decay avg + (1 - decay) batch.
  double decay = 0.9;
  /// Added to the variance before the square root (> 0; ValueError otherwise).
  double eps = 2e-5;
  /// Learn a scale gamma (initialized to ones); without it the scale is 1.
  bool use_gamma = true;
  /// Learn a shift beta (initialized to zeros); without it the shift is 0.
  bool use_beta = true;
  /// Population-statistics mode from the start (see BatchNormalization::set_finetune).
  bool finetune = false;
  /// Ghost batch normalization: in training mode, statistics over each run of this many consecutive
  /// examples (functions::BatchNormOptions::ghost_batch_size), so that one process with batch B
  /// computes what K = B / G workers with batch G each compute. nullopt: the whole batch.
  std::optional<int64_t> ghost_batch_size = std::nullopt;
};

/// Batch normalization over every axis but axis 1 of x (N, C) or (N, C, H, W): parameters gamma and
/// beta (size,), persistent values avg_mean (zeros), avg_var (ones) and N (int64 0-d: batches seen
/// in finetune mode). In training mode (Config train) it normalizes with the batch statistics and
/// updates the running averages (the variance unbiased, m / (m - 1) times the batch's); in test
/// mode it normalizes with avg_mean and avg_var.
///
/// Finetune (population-statistics) mode, as Chainer's `finetune=True`: each training-mode forward
/// counts N += 1 and uses decay = 1 - 1/N, so the running averages become the exact mean of the
/// per-batch statistics seen since N was reset (over a pass of the data with equal batches: the
/// population mean and the mean of the unbiased batch variances), instead of a moving average.
///
/// Ghost batch normalization (options.ghost_batch_size G; Chainer has none): each of the K = N / G
/// sub-batches is normalized with its own statistics, and each training-mode forward makes one update
/// of the running averages with the mean over the K sub-batches of their statistics (their means,
/// their unbiased variances): the mean over K workers of the running averages that K workers, each
/// with one sub-batch and the same initial averages, would hold. ShapeError when G does not divide N.
class BatchNormalization : public Link {
 public:
  /// ValueError for a negative size, decay outside [0, 1], eps <= 0 or ghost_batch_size <= 0.
  explicit BatchNormalization(int64_t size, BatchNormalizationOptions options = {});

  Variable forward(const Variable& x) override;
  using Link::forward;

  /// Turns finetune mode on or off (N is kept).
  void set_finetune(bool on) { finetune_ = on; }
  /// True in finetune mode.
  bool finetune() const { return finetune_; }
  /// Resets N to 0 (Chainer's start_finetuning): the next finetune forward replaces the averages.
  void start_finetuning();

  /// Sets or clears (nullopt) ghost batch normalization on a built model, as the option does: the
  /// examples' --ghost-batch. ValueError unless positive.
  void set_ghost_batch_size(std::optional<int64_t> ghost_batch_size);
  /// The ghost batch size, or nullopt when the whole batch is normalized at once.
  const std::optional<int64_t>& ghost_batch_size() const { return options_.ghost_batch_size; }

  /// Takes the training-mode statistics over the batches of every worker through `allreduce_sum`
  /// (see functions::BatchNormOptions::allreduce_sum; null: this batch alone). The running variance
  /// is then unbiased with the element count over all workers. Test mode never calls it.
  /// rensa::mn::MultiNodeBatchNormalization and convert_batch_normalization install one. Training-mode
  /// forward refuses it together with ghost_batch_size (ValueError).
  void set_allreduce_sum(std::function<Variable(const Variable&)> allreduce_sum) {
    allreduce_sum_ = std::move(allreduce_sum);
  }
  /// The function set by set_allreduce_sum (null: this batch's statistics alone).
  const std::function<Variable(const Variable&)>& allreduce_sum() const { return allreduce_sum_; }

  /// gamma, or a null Variable without use_gamma.
  const Variable& gamma() const { return gamma_; }
  /// beta, or a null Variable without use_beta.
  const Variable& beta() const { return beta_; }
  /// Running average of the per-channel mean (a persistent, shape (size,)).
  Array& avg_mean() { return persistent("avg_mean"); }
  /// Running average of the per-channel variance (a persistent, shape (size,)), unbiased.
  Array& avg_var() { return persistent("avg_var"); }
  /// Batches accumulated in finetune mode since the last start_finetuning().
  int64_t n_batches();

 protected:
  /// The decay of this training-mode forward: options.decay, or 1 - 1/N in finetune mode (N is
  /// counted up).
  double training_decay();
  /// ShapeError naming `op` unless x is (N, size, ...).
  void check_input(const char* op, const Variable& x) const;
  /// The options given to the constructor.
  const BatchNormalizationOptions& options() const { return options_; }

 private:
  int64_t size_;
  BatchNormalizationOptions options_;
  bool finetune_;
  Variable gamma_, beta_;
  std::function<Variable(const Variable&)> allreduce_sum_;
};

/// Batch renormalization (Chainer's L.BatchRenormalization): the parameters and persistent values
/// of BatchNormalization; in training mode functions::batch_renormalization with avg_mean and
/// avg_var as the running statistics (updated in place), in test mode as BatchNormalization.
/// rmax = 1 and dmax = 0 (Chainer's defaults) make it batch normalization. ValueError unless
/// rmax >= 1 and dmax >= 0, and for ghost_batch_size; statistics over several workers (set_allreduce_sum)
/// are refused.
class BatchRenormalization : public BatchNormalization {
 public:
  /// ValueError unless rmax >= 1 and dmax >= 0, and for options.ghost_batch_size.
  BatchRenormalization(int64_t size, double rmax = 1.0, double dmax = 0.0, BatchNormalizationOptions options = {});
  Variable forward(const Variable& x) override;
  using Link::forward;

 private:
  double rmax_, dmax_;
};

/// Decorrelated batch normalization (Chainer's L.DecorrelatedBatchNormalization): ZCA whitening of
/// x (N, size, ...) per group of size / groups channels, with no parameters. Persistent values, as
/// Chainer's (so its .npz files load): avg_mean (groups, size / groups) zeros, avg_projection
/// (groups, size / groups, size / groups) identity matrices, both of `dtype`, and N (int64 0-d:
/// batches seen in finetune mode). In training mode it whitens with the batch statistics
/// (functions::decorrelated_batch_normalization) and updates the averages with `decay`, or in
/// finetune mode with 1 - 1/N after counting N up (their exact mean since start_finetuning); in
/// test mode it applies functions::fixed_decorrelated_batch_normalization with the averages.
/// ValueError unless groups > 0, 0 <= decay <= 1 and eps > 0; ShapeError for a negative size or
/// one groups does not divide; DtypeError for a non-floating dtype. forward throws ShapeError unless
/// x is (N, size, ...), and the functions' errors.
class DecorrelatedBatchNormalization : public Link {
 public:
  /// See the class for the errors; `dtype` is that of the running statistics.
  explicit DecorrelatedBatchNormalization(int64_t size, int64_t groups = 16, double decay = 0.9, double eps = 2e-5,
                                          Dtype dtype = Dtype::float32);
  Variable forward(const Variable& x) override;
  using Link::forward;

  /// Turns finetune mode (Chainer's forward(x, finetune=True)) on or off; N is kept.
  void set_finetune(bool on) { finetune_ = on; }
  /// True in finetune mode.
  bool finetune() const { return finetune_; }
  /// Resets N to 0: the next finetune forward replaces the averages.
  void start_finetuning();
  /// Running average of the per-group mean (a persistent).
  Array& avg_mean() { return persistent("avg_mean"); }
  /// Running average of the per-group whitening matrix (a persistent).
  Array& avg_projection() { return persistent("avg_projection"); }
  /// Batches accumulated in finetune mode since the last start_finetuning().
  int64_t n_batches();
  /// Number of channel groups whitened separately.
  int64_t groups() const { return groups_; }

 private:
  int64_t size_, groups_;
  double decay_, eps_;
  bool finetune_ = false;
};

/// Group normalization (Chainer's L.GroupNormalization): gamma (ones) and beta (zeros) of shape
/// (size,), size 0: inferred from the first input's axis 1. ValueError unless groups > 0 and
/// eps > 0; forward errors as functions::group_normalization.
class GroupNormalization : public Link {
 public:
  /// See the class for the errors.
  explicit GroupNormalization(int64_t groups, int64_t size = 0, double eps = 1e-5);
  Variable forward(const Variable& x) override;
  using Link::forward;
  /// Per-channel scale, (size,); null until size is known.
  const Variable& gamma() const { return gamma_; }
  /// Per-channel shift, (size,); null until size is known.
  const Variable& beta() const { return beta_; }

 private:
  void initialize(int64_t size);
  int64_t groups_;
  double eps_;
  Dtype dtype_;
  Variable gamma_, beta_;
};

/// Layer normalization over the last axis: gamma (ones) and beta (zeros) of shape (size,);
/// size 0: inferred from the first input's last axis.
class LayerNormalization : public Link {
 public:
  /// ValueError unless eps > 0 (size 0: inferred from the first input).
  explicit LayerNormalization(int64_t size = 0, double eps = 1e-5);

  Variable forward(const Variable& x) override;
  using Link::forward;

  /// Scale over the last axis, (size,); null until size is known.
  const Variable& gamma() const { return gamma_; }
  /// Shift over the last axis, (size,); null until size is known.
  const Variable& beta() const { return beta_; }

 private:
  void initialize(int64_t size);

  double eps_;
  Dtype dtype_;
  Variable gamma_, beta_;
};

}  // namespace rensa::links
