#include <chrono>

#include "rensa/core/reporter.h"
#include "rensa/training/updater.h"

#include <sstream>

#include "rensa/core/error.h"
#include "rensa/core/timeline.h"
#include "rensa/datasets/concat_examples.h"

namespace rensa::training {
namespace {

template <class Map>
std::string known_names(const Map& m) {
  std::ostringstream os;
  os << "[";
  bool first = true;
  for (const auto& [name, ptr] : m) {
    os << (first ? "" : ", ") << '"' << name << '"';
    first = false;
  }
  os << "]";
  return os.str();
}

}  // namespace

// --- Updater -----------------------------------------------------------------------------------

optimizers::Optimizer& Updater::get_optimizer(const std::string& name) {
  const auto all = get_all_optimizers();
  const auto it = all.find(name);
  RENSA_CHECK(it != all.end() && it->second != nullptr, ValueError, "Updater::get_optimizer: no optimizer named '",
              name, "'; known: ", known_names(all));
  return *it->second;
}

iterators::Iterator& Updater::get_iterator(const std::string& name) {
  const auto all = get_all_iterators();
  const auto it = all.find(name);
  RENSA_CHECK(it != all.end() && it->second != nullptr, ValueError, "Updater::get_iterator: no iterator named '", name,
              "'; known: ", known_names(all));
  return *it->second;
}

void Updater::serialize(serializers::Serializer& s) { s.scalar("iteration", iteration_); }

// --- StandardUpdater ---------------------------------------------------------------------------

StandardUpdater::StandardUpdater(iterators::Iterator& iterator, optimizers::Optimizer& optimizer,
                                 StandardUpdaterOptions options)
    : StandardUpdater(std::map<std::string, iterators::Iterator*>{{"main", &iterator}},
                      std::map<std::string, optimizers::Optimizer*>{{"main", &optimizer}}, std::move(options)) {}

StandardUpdater::StandardUpdater(std::map<std::string, iterators::Iterator*> iterators,
                                 std::map<std::string, optimizers::Optimizer*> optimizers,
                                 StandardUpdaterOptions options)
    : iterators_(std::move(iterators)),
      optimizers_(std::move(optimizers)),
      converter_(std::move(options.converter)),
      device_(options.device),
      loss_func_(std::move(options.loss_func)) {
  RENSA_CHECK(iterators_.count("main") == 1 && iterators_.at("main") != nullptr, ValueError,
              "StandardUpdater: the iterators must include \"main\"; given ", known_names(iterators_));
  // As Chainer, only the default update_core needs an optimizer named "main" (a GAN's updater has
  // "gen" and "dis").
  RENSA_CHECK(!optimizers_.empty(), ValueError, "StandardUpdater: no optimizer given");
  for (const auto& [name, it] : iterators_) {
    RENSA_CHECK(it != nullptr, ValueError, "StandardUpdater: iterator '", name, "' is null");
  }
  for (const auto& [name, opt] : optimizers_) {
    RENSA_CHECK(opt != nullptr, ValueError, "StandardUpdater: optimizer '", name, "' is null");
    RENSA_CHECK(opt->target() != nullptr, ValueError, "StandardUpdater: optimizer '", name,
                "' has no target link (call setup(link) first)");
    if (options.loss_scale) opt->set_loss_scale(*options.loss_scale);
  }
  // Without a converter of the user's the iterator stacks the batch (next_arrays), which lets a
  // MultithreadIterator hand over the arrays its workers stacked, with no copy on this thread.
  default_converter_ = converter_ == nullptr;
  if (converter_ == nullptr) {
    converter_ = [](const iterators::Batch& batch, Device device) { return datasets::concat_examples(batch, device); };
  }
}

void StandardUpdater::update() {
  update_core();
  ++iteration_;
}

void StandardUpdater::update_core() {
  iterators::Iterator& iterator = *iterators_.at("main");
  optimizers::Optimizer& optimizer = get_optimizer("main");
  const auto wait_start = std::chrono::steady_clock::now();
  std::vector<Array> arrays;
  timeline::Span data_span("data", timeline::Category::data);
  if (default_converter_ && device_.is_host() && iterator.stacks_ahead()) {
    std::optional<std::vector<Array>> stacked = iterator.next_arrays();
    RENSA_CHECK(stacked.has_value(), ValueError,
                "StandardUpdater::update: the main iterator is exhausted (a training iterator must repeat)");
    arrays = std::move(*stacked);
  } else {
    std::optional<iterators::Batch> batch = iterator.next();
    RENSA_CHECK(batch.has_value(), ValueError,
                "StandardUpdater::update: the main iterator is exhausted (a training iterator must repeat)");
    arrays = converter_(*batch, device_);
  }
  data_span.end();
  // The time the step waited for its data: near 0 when the loader keeps up.
  last_data_wait_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_start).count();
  rensa::report({{"data_wait", last_data_wait_}}, optimizer.target());
  std::vector<Variable> inputs;
  inputs.reserve(arrays.size());
  for (const Array& a : arrays) inputs.emplace_back(a);
  if (loss_func_ != nullptr) {
    optimizer.update([&] { return loss_func_(inputs); });
  } else {
    Link* target = optimizer.target();
    optimizer.update([&] { return target->forward(inputs); });
  }
  if (iterator.is_new_epoch()) optimizer.new_epoch();
}

int64_t StandardUpdater::epoch() const { return iterators_.at("main")->epoch(); }
double StandardUpdater::epoch_detail() const { return iterators_.at("main")->epoch_detail(); }
bool StandardUpdater::is_new_epoch() const { return iterators_.at("main")->is_new_epoch(); }

optimizers::Optimizer& StandardUpdater::get_optimizer(const std::string& name) {
  const auto it = optimizers_.find(name);
  RENSA_CHECK(it != optimizers_.end(), ValueError, "StandardUpdater::get_optimizer: no optimizer named '", name,
              "'; known: ", known_names(optimizers_));
  return *it->second;
}

iterators::Iterator& StandardUpdater::get_iterator(const std::string& name) {
  const auto it = iterators_.find(name);
  RENSA_CHECK(it != iterators_.end(), ValueError, "StandardUpdater::get_iterator: no iterator named '", name,
              "'; known: ", known_names(iterators_));
  return *it->second;
}

void StandardUpdater::serialize(serializers::Serializer& s) {
  for (auto& [name, it] : iterators_) it->serialize(s.child("iterator:" + name));
  for (auto& [name, opt] : optimizers_) {
    opt->serialize(s.child("optimizer:" + name));
    opt->target()->serialize(s.child("model:" + name));
  }
  Updater::serialize(s);
}

}  // namespace rensa::training
