// Chainer's iterator state machine (shared by both iterators) and SerialIterator.

#include "rensa/iterators/serial_iterator.h"

#include <algorithm>

#include "rensa/core/error.h"
#include "rensa/core/random.h"
#include "rensa/datasets/example_key.h"
#include "rensa/datasets/sub_dataset.h"

namespace rensa::iterators {
namespace detail {

IterationPlan::IterationPlan(const char* who, datasets::DatasetPtr dataset_, int64_t batch_size_, bool repeat_,
                             bool shuffle_, std::optional<uint64_t> seed_,
                             std::shared_ptr<const OrderSampler> order_sampler_)
    : dataset(std::move(dataset_)),
      batch_size(batch_size_),
      repeat(repeat_),
      shuffle(shuffle_ || order_sampler_ != nullptr),
      order_sampler(std::move(order_sampler_)),
      name(who) {
  RENSA_CHECK(dataset != nullptr, ValueError, who, ": the dataset is null");
  RENSA_CHECK(batch_size >= 1, ValueError, who, ": batch_size must be at least 1, got ", batch_size);
  RENSA_CHECK(!repeat || dataset->size() > 0, ValueError, who,
              ": a repeating iterator needs a non-empty dataset (its size is 0)");
  if (seed_) {
    seed = *seed_;
  } else if (shuffle && order_sampler == nullptr) {
    // Drawn from the caller's default generator, so rensa::seed() makes the orders repeat.
    Generator& g = default_generator();
    uint32_t r[4];
    rensa::detail::philox4x32(g.advance(1), g.seed(), r);
    seed = (static_cast<uint64_t>(r[0]) << 32) | r[1];
  }
}

std::shared_ptr<const std::vector<int64_t>> IterationPlan::next_order(const std::vector<int64_t>& previous,
                                                                     int64_t position, int64_t epoch,
                                                                     uint64_t& rng_offset) const {
  const int64_t n = dataset->size();
  if (order_sampler == nullptr) {
    Generator g(seed);
    g.set_offset(rng_offset);
    auto order = std::make_shared<const std::vector<int64_t>>(datasets::permutation(n, g));
    rng_offset = g.offset();
    return order;
  }
  std::vector<int64_t> order = (*order_sampler)(previous, position, epoch, n);
  RENSA_CHECK(static_cast<int64_t>(order.size()) == n, ValueError, name, ": the order sampler gave ", order.size(),
              " indices for a dataset of ", n, " examples (epoch ", epoch, ")");
  std::vector<char> seen(static_cast<std::size_t>(n), 0);
  for (const int64_t v : order) {
    RENSA_CHECK(v >= 0 && v < n && !seen[static_cast<std::size_t>(v)], ValueError, name,
                ": the order sampler's order is not a permutation of 0..", n - 1, " (entry ", v, ", epoch ", epoch,
                ")");
    seen[static_cast<std::size_t>(v)] = 1;
  }
  return std::make_shared<const std::vector<int64_t>>(std::move(order));
}

IteratorState IterationPlan::initial_state() const {
  IteratorState s;
  if (shuffle) s.order = next_order({}, 0, 0, s.rng_offset);
  return s;
}

int64_t IterationPlan::epoch_size(const IteratorState& state) const {
  return state.order ? static_cast<int64_t>(state.order->size()) : dataset->size();
}

double IterationPlan::epoch_detail(const IteratorState& state) const {
  const int64_t n = epoch_size(state);
  return static_cast<double>(state.epoch) +
         (n > 0 ? static_cast<double>(state.current_position) / static_cast<double>(n) : 0.0);
}

std::optional<std::vector<int64_t>> IterationPlan::advance(IteratorState& state, std::vector<int64_t>* epochs) const {
  if (!repeat && state.epoch > 0) return std::nullopt;
  const int64_t n = epoch_size(state);
  int64_t i = state.current_position;
  int64_t i_end = i + batch_size;
  if (!repeat) i_end = std::min(i_end, n);
  bool is_new_epoch = false;
  std::vector<int64_t> indices;
  indices.reserve(static_cast<std::size_t>(std::max<int64_t>(i_end - i, 0)));
  auto take = [&](int64_t from, int64_t to) {
    for (int64_t k = from; k < to; ++k) indices.push_back(state.order ? (*state.order)[static_cast<std::size_t>(k)] : k);
    if (epochs != nullptr) epochs->resize(indices.size(), state.epoch);
  };
  if (epochs != nullptr) epochs->clear();
  // As Chainer: every epoch boundary the batch crosses starts a new order (a batch larger than
  // the dataset spans several epochs).
  while (i_end >= n) {
    take(i, n);
    if (state.order) state.order = next_order(*state.order, n, state.epoch + 1, state.rng_offset);
    i = 0;
    i_end = repeat ? i_end - n : 0;
    ++state.epoch;
    is_new_epoch = true;
    if (!repeat) break;  // one epoch at most (an empty dataset would otherwise loop forever)
  }
  take(i, i_end);
  state.current_position = i_end;
  state.is_new_epoch = is_new_epoch;
  return indices;
}

void IterationPlan::serialize(const char* who, serializers::Serializer& s, IteratorState& state,
                              double& previous_epoch_detail) {
  const bool loading = s.is_loading();
  IteratorState st = state;
  double prev = previous_epoch_detail;
  uint64_t seed_value = seed;
  s.scalar("current_position", st.current_position);
  s.scalar("epoch", st.epoch);
  s.scalar("is_new_epoch", st.is_new_epoch);
  if (shuffle) {
    Array order;
    if (!loading) order = Array::from_vector(*st.order);
    // Chainer's MultithreadIterator wrote "_order".
    s.array(loading && !s.contains("order") && s.contains("_order") ? "_order" : "order", order);
    // A non-strict load that misses the key leaves the array null: keep the current order then.
    if (loading && !order.is_null()) {
      std::vector<int64_t> loaded = order.to_vector<int64_t>();
      const int64_t n = dataset->size();
      RENSA_CHECK(static_cast<int64_t>(loaded.size()) == n, ValueError, who, ": ", s.path(), "order has ",
                  loaded.size(), " entries but the dataset has ", n, " examples");
      std::vector<char> seen(static_cast<std::size_t>(n), 0);
      for (const int64_t v : loaded) {
        RENSA_CHECK(v >= 0 && v < n && !seen[static_cast<std::size_t>(v)], ValueError, who, ": ", s.path(),
                    "order is not a permutation of 0..", n - 1, " (entry ", v, ")");
        seen[static_cast<std::size_t>(v)] = 1;
      }
      st.order = std::make_shared<const std::vector<int64_t>>(std::move(loaded));
    }
    if (!loading || s.contains("seed")) s.scalar("seed", seed_value);
    if (!loading || s.contains("rng_offset")) s.scalar("rng_offset", st.rng_offset);
  }
  if (!loading || s.contains("previous_epoch_detail")) {
    s.scalar("previous_epoch_detail", prev);
  } else {
    // Older snapshots: guess, as Chainer does.
    const int64_t n = epoch_size(st);
    prev = static_cast<double>(st.epoch) +
           (n > 0 ? static_cast<double>(st.current_position - batch_size) / static_cast<double>(n) : 0.0);
    prev = epoch_detail(st) > 0 ? std::max(prev, 0.0) : -1.0;
  }
  if (!loading) return;
  RENSA_CHECK(st.epoch >= 0 && st.current_position >= 0 && st.current_position <= epoch_size(st), ValueError, who,
              ": ", s.path(), "current_position ", st.current_position, " (epoch ", st.epoch,
              ") is outside an epoch of ", epoch_size(st), " examples");
  state = std::move(st);
  previous_epoch_detail = prev;
  seed = seed_value;
}

}  // namespace detail

SerialIterator::SerialIterator(datasets::DatasetPtr dataset, int64_t batch_size, SerialIteratorOptions options)
    : plan_("SerialIterator", std::move(dataset), batch_size, options.repeat, options.shuffle, options.seed,
            std::move(options.order_sampler)),
      state_(plan_.initial_state()) {}

std::optional<Batch> SerialIterator::next() {
  previous_epoch_detail_ = epoch_detail();
  std::vector<int64_t> epochs;
  std::optional<std::vector<int64_t>> indices = plan_.advance(state_, &epochs);
  if (!indices) return std::nullopt;
  Batch batch;
  batch.reserve(indices->size());
  for (std::size_t k = 0; k < indices->size(); ++k) {
    const datasets::EpochScope epoch(epochs[k]);
    batch.push_back(plan_.dataset->get_example((*indices)[k]));
  }
  return batch;
}

std::optional<double> SerialIterator::previous_epoch_detail() const {
  if (previous_epoch_detail_ < 0) return std::nullopt;
  return previous_epoch_detail_;
}

void SerialIterator::reset() {
  state_ = plan_.initial_state();
  previous_epoch_detail_ = -1.0;
}

void SerialIterator::serialize(serializers::Serializer& s) {
  plan_.serialize("SerialIterator", s, state_, previous_epoch_detail_);
}

std::vector<int64_t> SerialIterator::order() const { return state_.order ? *state_.order : std::vector<int64_t>{}; }

}  // namespace rensa::iterators
