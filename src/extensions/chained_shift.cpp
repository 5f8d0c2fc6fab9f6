// ChainedShift: shifts one after another on one hyperparameter, and the warm-up recipe.
#include "rensa/extensions/chained_shift.h"

#include <utility>

#include "rensa/core/error.h"

namespace rensa::extensions {

ChainedShift::ChainedShift(std::string attr, std::vector<ShiftSegment> segments, std::optional<double> init,
                           optimizers::Optimizer* optimizer)
    : HyperparameterShift(std::move(attr), init, optimizer), segments_(std::move(segments)) {
  RENSA_CHECK(!segments_.empty(), ValueError, "ChainedShift: no segments");
  for (std::size_t k = 0; k < segments_.size(); ++k) {
    const ShiftSegment& seg = segments_[k];
    RENSA_CHECK(seg.shift != nullptr, ValueError, "ChainedShift: segment ", k, " is null");
    const HyperparameterShift& piece = *seg.shift;
    RENSA_CHECK(piece.attr_ == attr_, ValueError, "ChainedShift: segment ", k, " (", piece.default_name(),
                ") is for hyperparameter '", piece.attr_, "', the chain for '", attr_, "'");
    RENSA_CHECK(piece.optimizer_ == nullptr, ValueError, "ChainedShift: segment ", k, " (", piece.default_name(),
                ") names its own optimizer; give the optimizer to the chain");
    const bool last = k + 1 == segments_.size();
    RENSA_CHECK(last || seg.length >= 1, ValueError, "ChainedShift: segment ", k, " (", piece.default_name(),
                ") must last at least 1 call, got length ", seg.length);
    RENSA_CHECK(!last || seg.length == 0, ValueError, "ChainedShift: the last segment (", piece.default_name(),
                ") runs to the end and takes length 0, got ", seg.length);
  }
}

std::pair<std::size_t, int64_t> ChainedShift::locate(int64_t t) const {
  int64_t start = 0;
  for (std::size_t k = 0; k + 1 < segments_.size(); ++k) {
    if (t < start + segments_[k].length) return {k, start};
    start += segments_[k].length;
  }
  return {segments_.size() - 1, start};
}

void ChainedShift::advance(int64_t t) {
  const auto [k, start] = locate(t);
  segments_[k].shift->advance(t - start);
}

double ChainedShift::value_at(int64_t t, double init) const {
  const auto [k, start] = locate(t);
  return segments_[k].shift->value_at(t - start, init);
}

void ChainedShift::serialize(serializers::Serializer& s) {
  HyperparameterShift::serialize(s);
  for (std::size_t k = 0; k < segments_.size(); ++k) {
    segments_[k].shift->serialize(s.child("segment" + std::to_string(k)));
  }
}

std::shared_ptr<ChainedShift> warmup_then(std::string attr, int64_t warmup_iter, double start_fraction,
                                          std::shared_ptr<HyperparameterShift> decay, std::optional<double> init,
                                          optimizers::Optimizer* optimizer) {
  RENSA_CHECK(warmup_iter >= 0, ValueError, "warmup_then: warmup_iter must not be negative, got ", warmup_iter);
  RENSA_CHECK(start_fraction >= 0.0 && start_fraction <= 1.0, ValueError,
              "warmup_then: start_fraction must be in [0, 1], got ", start_fraction);
  RENSA_CHECK(warmup_iter > 0 || decay != nullptr, ValueError, "warmup_then: no warm-up (warmup_iter 0) and no decay");
  std::vector<ShiftSegment> segments;
  if (warmup_iter > 0) {
    auto warmup = std::make_shared<WarmupShift>(WarmupShift::from_fraction(attr, start_fraction, warmup_iter));
    // Without a decay the warm-up runs to the end (it holds init after warmup_iter).
    segments.push_back({std::move(warmup), decay ? warmup_iter : 0});
  }
  if (decay) segments.push_back({std::move(decay), 0});
  return std::make_shared<ChainedShift>(std::move(attr), std::move(segments), init, optimizer);
}

}  // namespace rensa::extensions
