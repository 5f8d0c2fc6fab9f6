#pragma once
/// \file
/// Updaters: one training step each (Chainer's Updater and StandardUpdater). The updater owns the
/// iteration count; epochs come from its main iterator.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rensa/core/array.h"
#include "rensa/core/device.h"
#include "rensa/core/variable.h"
#include "rensa/iterators/iterator.h"
#include "rensa/optimizers/optimizer.h"
#include "rensa/serializers/serializer.h"

namespace rensa::training {

class Trainer;

/// Turns a batch of examples into one array per column on a device (default:
/// datasets::concat_examples).
using Converter = std::function<std::vector<Array>(const iterators::Batch& batch, Device device)>;
/// Computes the loss (or, for an Evaluator, reports metrics) from the converted columns.
using LossFunction = std::function<Variable(const std::vector<Variable>& inputs)>;

/// Base of updaters. The trainer calls update() once per iteration and reads the counters to
/// drive triggers.
class Updater {
 public:
  virtual ~Updater() = default;
  /// Called by the Trainer's constructor.
  virtual void connect_trainer(Trainer& trainer) { (void)trainer; }
  /// Runs one training step and advances iteration() by one.
  virtual void update() = 0;
  /// Called when Trainer::run ends (release resources such as prefetch threads).
  virtual void finalize() {}

  /// Completed updates.
  int64_t iteration() const { return iteration_; }
  /// Completed epochs of the main iterator.
  virtual int64_t epoch() const = 0;
  /// Epochs as a real number (epoch + fraction of the current one).
  virtual double epoch_detail() const = 0;
  /// True right after the update that completed an epoch.
  virtual bool is_new_epoch() const = 0;

  /// The optimizer `name` ("main"); ValueError naming the known ones.
  virtual optimizers::Optimizer& get_optimizer(const std::string& name);
  /// Every optimizer by name.
  virtual std::map<std::string, optimizers::Optimizer*> get_all_optimizers() { return {}; }
  /// The iterator `name` ("main"); ValueError naming the known ones.
  virtual iterators::Iterator& get_iterator(const std::string& name);
  /// Every iterator by name.
  virtual std::map<std::string, iterators::Iterator*> get_all_iterators() { return {}; }

  /// Saves/loads the iteration count ("iteration").
  virtual void serialize(serializers::Serializer& s);

 protected:
  /// Updates completed so far.
  int64_t iteration_ = 0;
};

/// Options of StandardUpdater.
struct StandardUpdaterOptions {
  /// Batch to arrays; null means datasets::concat_examples.
  Converter converter = nullptr;
  /// The device the converter puts the arrays on.
  Device device = Device::cpu();
  /// The loss of the converted columns; null means the main optimizer's target link called with
  /// all the columns: target->forward(std::vector<Variable>{x, t, ...}).
  LossFunction loss_func = nullptr;
  /// A static loss scale set on every optimizer (Chainer's loss_scale; Optimizer::loss_scaling);
  /// unset leaves the optimizers' loss scaling as it is. ValueError unless positive.
  std::optional<double> loss_scale = std::nullopt;
};

/// The standard step (Chainer's StandardUpdater): take the next batch of the main iterator,
/// convert it, and let the main optimizer compute the loss, backpropagate and update; call the
/// optimizer's new_epoch() when the iterator starts a new epoch. Iterators and optimizers are kept
/// by reference and must outlive the updater. With the default converter on the host and an
/// iterator that stacks ahead (MultithreadIterator with `stack`), the batch is the arrays its
/// workers stacked (next_arrays()), with no copy on this thread. The seconds the step waited for its batch are reported as
/// "main/data_wait" (LogReport averages them): near 0 when the loader keeps up.
class StandardUpdater : public Updater {
 public:
  /// One iterator and one optimizer, both named "main". ValueError when the optimizer has no
  /// target (setup was not called).
  StandardUpdater(iterators::Iterator& iterator, optimizers::Optimizer& optimizer, StandardUpdaterOptions options = {});
  /// Several named iterators and optimizers; the iterators must contain "main" (ValueError), and
  /// the default update_core uses the optimizer "main" (a custom one may name them otherwise, as
  /// a GAN's "gen" and "dis").
  StandardUpdater(std::map<std::string, iterators::Iterator*> iterators,
                  std::map<std::string, optimizers::Optimizer*> optimizers, StandardUpdaterOptions options = {});

  /// update_core(), then one more iteration.
  void update() override;
  int64_t epoch() const override;
  double epoch_detail() const override;
  bool is_new_epoch() const override;

  optimizers::Optimizer& get_optimizer(const std::string& name) override;
  std::map<std::string, optimizers::Optimizer*> get_all_optimizers() override { return optimizers_; }
  iterators::Iterator& get_iterator(const std::string& name) override;
  std::map<std::string, iterators::Iterator*> get_all_iterators() override { return iterators_; }

  /// Saves/loads "iterator:<name>", "optimizer:<name>", "model:<name>" (the optimizer's target
  /// link) for every name, and "iteration".
  void serialize(serializers::Serializer& s) override;

  /// The converter from batches to arrays.
  const Converter& converter() const { return converter_; }
  /// The device the converter puts the arrays on.
  Device device() const { return device_; }
  /// Seconds the last update waited for its batch.
  double last_data_wait() const { return last_data_wait_; }

 protected:
  /// One step without the iteration count: override for custom steps (GANs, ...).
  virtual void update_core();

  /// The iterators by name (not owned).
  std::map<std::string, iterators::Iterator*> iterators_;
  /// The optimizers by name (not owned).
  std::map<std::string, optimizers::Optimizer*> optimizers_;
  /// Batch to arrays.
  Converter converter_;
  /// True when converter_ is datasets::concat_examples (the option was null).
  bool default_converter_ = true;
  /// Seconds the last update waited for its batch.
  double last_data_wait_ = 0.0;
  /// The device the converter puts the arrays on.
  Device device_;
  /// The loss of the converted columns (null: the main optimizer's target).
  LossFunction loss_func_;
};

}  // namespace rensa::training
