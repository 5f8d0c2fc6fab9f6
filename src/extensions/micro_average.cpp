#include "rensa/extensions/micro_average.h"

#include "rensa/core/error.h"
#include "rensa/training/trainer.h"

namespace rensa::extensions {

MicroAverage::MicroAverage(std::string numerator_key, std::string denominator_key, std::string result_key,
                           training::Trigger trigger)
    : numerator_key_(std::move(numerator_key)),
      denominator_key_(std::move(denominator_key)),
      result_key_(std::move(result_key)),
      trigger_(std::move(trigger)) {
  RENSA_CHECK(!numerator_key_.empty() && !denominator_key_.empty() && !result_key_.empty(), ValueError,
              "MicroAverage: empty key (numerator '", numerator_key_, "', denominator '", denominator_key_,
              "', result '", result_key_, "')");
}

void MicroAverage::operator()(training::Trainer& trainer) {
  auto& obs = trainer.observation();
  const auto n = obs.find(numerator_key_), d = obs.find(denominator_key_);
  if (n == obs.end() || d == obs.end()) return;
  numerator_ += n->second;
  denominator_ += d->second;
  if (trigger_(trainer)) {
    obs[result_key_] = numerator_ / denominator_;
    numerator_ = 0;
    denominator_ = 0;
  }
}

void MicroAverage::serialize(serializers::Serializer& s) {
  s.scalar("_numerator", numerator_);
  s.scalar("_denominator", denominator_);
  trigger_.serialize(s.child("trigger"));  // so a resumed run closes its interval where it would have
}

}  // namespace rensa::extensions
