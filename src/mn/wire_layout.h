#pragma once
// How a list of gradients travels: grouped into packs by the dtype they travel in. Computed once per
// request, then used for its fingerprint, its size in messages, and its packing.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "rensa/core/array.h"

namespace rensa::mn::detail {

/// The dtype a gradient of `grad` travels in under CommunicatorOptions::allreduce_grad_dtype `wire`
/// (with the default float32, float64 gradients travel as float64).
Dtype wire_dtype(Dtype wire, Dtype grad);

struct WireLayout {
  struct Pack {
    Dtype wire = Dtype::float32;
    struct Member {
      std::size_t index;  // of the gradient
      int64_t start;      // its first element in the pack
    };
    std::vector<Member> members;  // in order
    int64_t count = 0;            // elements
  };
  std::vector<Pack> packs;  // in the order of their first gradient; none empty
  int64_t count = 0;        // elements of every gradient
  std::size_t nbytes = 0;   // bytes on the wire

  WireLayout() = default;
  /// One pack per wire dtype, or one per gradient when `per_array`.
  WireLayout(const std::vector<Array>& grads, Dtype wire, bool per_array);
};

}  // namespace rensa::mn::detail
