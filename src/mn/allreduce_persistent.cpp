// AllreducePersistent: the ranks first agree on what they average (a mismatch would otherwise pair
// the wrong arrays, or hang), then average each value.
#include "rensa/mn/allreduce_persistent.h"

#include <algorithm>
#include <sstream>
#include <vector>

#include "rensa/core/error.h"
#include "rensa/mn/object.h"

namespace rensa::mn {

AllreducePersistent::AllreducePersistent(Link& model, Communicator comm) : model_(&model), comm_(std::move(comm)) {
  RENSA_CHECK(comm_.valid(), ValueError, "AllreducePersistent: null communicator");
}

void AllreducePersistent::operator()(training::Trainer& trainer) {
  (void)trainer;
  (*this)();
}

void AllreducePersistent::operator()() {
  std::vector<std::pair<std::string, Array*>> values;
  for (auto& [name, array] : model_->namedpersistents()) {
    if (!array->is_null() && is_floating(array->dtype())) values.emplace_back(name, array);
  }
  std::sort(values.begin(), values.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> mine;
  for (const auto& [name, array] : values) {
    std::ostringstream os;
    os << name << ' ' << array->shape() << ' ' << dtype_name(array->dtype());
    mine.push_back(os.str());
  }
  const auto all = allgather_obj(comm_, mine);
  for (int r = 1; r < comm_.size(); ++r) {
    const auto& theirs = all[static_cast<std::size_t>(r)];
    const auto& first = all[0];
    const std::size_t n = std::max(first.size(), theirs.size());
    for (std::size_t i = 0; i < n; ++i) {
      const std::string a = i < first.size() ? first[i] : std::string("(none)");
      const std::string b = i < theirs.size() ? theirs[i] : std::string("(none)");
      RENSA_CHECK(a == b, ValueError, "AllreducePersistent: persistent value ", i, " is '", a, "' on rank 0 and '", b,
                  "' on rank ", r, "; every rank must hold the same model");
    }
  }
  for (const auto& [name, array] : values) {
    const Array mean = comm_.allreduce(*array, ReduceOp::mean);
    array->assign(mean);
  }
}

}  // namespace rensa::mn
