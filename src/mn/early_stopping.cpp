// MultiNodeEarlyStoppingTrigger: an ObservationAggregator feeding an EarlyStoppingTrigger.
#include "rensa/mn/early_stopping.h"

#include "rensa/core/error.h"

namespace rensa::mn {
namespace {

Communicator checked(Communicator comm) {
  RENSA_CHECK(comm.valid(), ValueError, "MultiNodeEarlyStoppingTrigger: null communicator");
  return comm;
}

}  // namespace

MultiNodeEarlyStoppingTrigger::MultiNodeEarlyStoppingTrigger(Communicator comm, const EarlyStoppingOptions& options)
    : aggregator_(checked(std::move(comm)), {options.monitor},
                  {.comm_trigger = options.check_trigger, .suffix = options.suffix}),
      stop_(options.check_trigger, options.monitor + options.suffix, options.patience, options.mode,
            options.max_trigger) {}

bool MultiNodeEarlyStoppingTrigger::operator()(training::Trainer& trainer) {
  aggregator_(trainer);
  return stop_(trainer);
}

void MultiNodeEarlyStoppingTrigger::serialize(serializers::Serializer& s) {
  aggregator_.serialize(s.child("aggregator"));
  stop_.serialize(s.child("actual_trigger"));
}

}  // namespace rensa::mn
