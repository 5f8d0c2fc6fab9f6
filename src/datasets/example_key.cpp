// The per-thread key of the example being transformed (example_key.h).

#include "rensa/datasets/example_key.h"

#include <utility>
#include <vector>

namespace rensa::datasets {
namespace {

struct ThreadKey {
  int64_t epoch = 0;
  int64_t index = -1;  // -1: not inside a TransformDataset
  // Draws taken in the current example, per stream (a handful of streams: a vector beats a map).
  std::vector<std::pair<const void*, uint64_t>> draws;
};

thread_local ThreadKey t_key;

}  // namespace

std::optional<ExampleKey> current_example_key() {
  if (t_key.index < 0) return std::nullopt;
  return ExampleKey{t_key.epoch, t_key.index};
}

EpochScope::EpochScope(int64_t epoch) : saved_(t_key.epoch) { t_key.epoch = epoch; }
EpochScope::~EpochScope() { t_key.epoch = saved_; }

ExampleIndexScope::ExampleIndexScope(int64_t index) : saved_index_(t_key.index), saved_draws_(std::move(t_key.draws)) {
  t_key.index = index;
  t_key.draws.clear();
}

ExampleIndexScope::~ExampleIndexScope() {
  t_key.index = saved_index_;
  t_key.draws = std::move(saved_draws_);
}

namespace detail {
uint64_t next_draw_in_example(const void* stream) {
  for (auto& [s, n] : t_key.draws) {
    if (s == stream) return n++;
  }
  t_key.draws.emplace_back(stream, 1);
  return 0;
}
}  // namespace detail

}  // namespace rensa::datasets
