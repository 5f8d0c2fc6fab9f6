#include "src/mn/channel.h"

namespace rensa::mn::detail {

ShmAllreduce* Channel::host_reducer(bool enabled, int intra_size) {
  if (!enabled || intra_size == 1) return nullptr;
  if (shm_state_ == 0) {
    auto shm = std::make_unique<ShmAllreduce>();
    shm_state_ = shm->init(intra.get()) ? 1 : -1;
    if (shm_state_ == 1) shm_ = std::move(shm);
  }
  return shm_.get();
}

}  // namespace rensa::mn::detail
