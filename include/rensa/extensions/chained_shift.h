#pragma once
/// \file
/// Schedules that compose: shifts run one after another on one hyperparameter, each owning an
/// interval of calls (a warm-up, then a step, multistep, cosine or polynomial decay). One extension
/// drives the hyperparameter, so the pieces cannot overwrite each other, and one snapshot entry
/// holds the whole schedule's position.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rensa/extensions/shifts.h"

namespace rensa::extensions {

/// One interval of a ChainedShift: `shift` gives the values for `length` calls, counting its own
/// t from 0 at the interval's start. The last segment's length must be 0: it runs to the end.
struct ShiftSegment {
  /// The schedule of this interval (its attr must be the chain's; it names no optimizer).
  std::shared_ptr<HyperparameterShift> shift;
  /// Calls the interval lasts; 0 for the last segment, which runs to the end.
  int64_t length = 0;
};

/// Runs `segments` in order. After t calls, segment k with start_k <= t < start_k + length_k gives
/// value_at(t - start_k, init), where init is the chain's (given, else the optimizer's value at
/// initialize()); so a decay that follows a warm-up starts from the value the warm-up reached.
/// Like every shift it runs every iteration by default: with an epoch trigger, t and the lengths
/// count epochs. The segments' own init, counter and trigger are not used; they must be made for
/// the chain's hyperparameter and name no optimizer of their own. Saves/loads the chain's
/// counter, last value and init, and each segment's state ("segment<k>/..."; MultistepShift's
/// step), so a resumed run continues exactly. ValueError naming ChainedShift for no segments, a
/// null segment, a segment for another hyperparameter or with its own optimizer, a non-last
/// segment with length < 1, or a last segment with a length.
class ChainedShift : public HyperparameterShift {
 public:
  /// `init` unset: the optimizer's value at initialize(); `optimizer` null: the updater's "main" one.
  ChainedShift(std::string attr, std::vector<ShiftSegment> segments, std::optional<double> init = std::nullopt,
               optimizers::Optimizer* optimizer = nullptr);
  double value_at(int64_t t, double init) const override;
  std::string default_name() const override { return "ChainedShift"; }
  void serialize(serializers::Serializer& s) override;
  /// The segments, in order.
  const std::vector<ShiftSegment>& segments() const { return segments_; }

 protected:
  void advance(int64_t t) override;

 private:
  // The segment in effect after t calls and its start.
  std::pair<std::size_t, int64_t> locate(int64_t t) const;

  std::vector<ShiftSegment> segments_;
};

/// Goyal et al.'s recipe as one schedule: a linear warm-up over `warmup_iter` calls from
/// start_fraction * init to init (WarmupShift::from_fraction), then `decay` with its t counted from
/// the warm-up's end. warmup_iter 0: `decay` alone in the chain; a null `decay`: init after the
/// warm-up. ValueError for a negative warmup_iter, a start_fraction outside [0, 1], or neither a
/// warm-up nor a decay.
std::shared_ptr<ChainedShift> warmup_then(std::string attr, int64_t warmup_iter, double start_fraction,
                                          std::shared_ptr<HyperparameterShift> decay,
                                          std::optional<double> init = std::nullopt,
                                          optimizers::Optimizer* optimizer = nullptr);

}  // namespace rensa::extensions
