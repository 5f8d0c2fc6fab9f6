#include "src/mn/wire_layout.h"

#include <algorithm>

namespace rensa::mn::detail {

Dtype wire_dtype(Dtype wire, Dtype grad) {
  return wire == Dtype::float32 && grad == Dtype::float64 ? Dtype::float64 : wire;
}

WireLayout::WireLayout(const std::vector<Array>& grads, Dtype wire, bool per_array) {
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const int64_t n = grads[i].size();
    const Dtype w = wire_dtype(wire, grads[i].dtype());
    count += n;
    nbytes += static_cast<std::size_t>(n) * itemsize(w);
    if (n == 0) continue;
    auto it =
        per_array ? packs.end() : std::find_if(packs.begin(), packs.end(), [&](const Pack& p) { return p.wire == w; });
    if (it == packs.end()) it = packs.insert(packs.end(), Pack{w, {}, 0});
    it->members.push_back({i, it->count});
    it->count += n;
  }
}

}  // namespace rensa::mn::detail
