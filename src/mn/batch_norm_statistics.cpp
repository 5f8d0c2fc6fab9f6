// Population statistics over every rank's shard: each rank's pass (the training one), then one
// float64 allreduce of the count-weighted statistics.
#include "rensa/mn/batch_norm_statistics.h"

#include <string>
#include <vector>

#include "rensa/core/error.h"
#include "rensa/links/normalization.h"
#include "src/training/batch_norm_statistics_pass.h"

namespace rensa::mn {
namespace {

constexpr const char* kOp = "mn::recompute_batch_norm_statistics";

// One line per layer, compared across ranks before anything else: different layer sets would
// otherwise mean different allreduce sizes (heap corruption) or collectives that never meet.
std::string describe(Link& model) {
  std::string out;
  for (const auto& [path, link] : model.namedlinks()) {
    auto* bn = dynamic_cast<links::BatchNormalization*>(link);
    if (bn == nullptr) continue;
    out.append(path).append(" ").append(to_string(bn->avg_mean().shape())).append(" ");
    out.append(dtype_name(bn->avg_mean().dtype())).append(bn->allreduce_sum() ? " multi-node" : "").append("\n");
  }
  return out;
}

std::string line(const std::string& text, std::size_t i) {
  std::size_t start = 0;
  for (std::size_t k = 0; k < i; ++k) {
    start = text.find('\n', start);
    if (start == std::string::npos) return "(none)";
    ++start;
  }
  if (start >= text.size()) return "(none)";
  return text.substr(start, text.find('\n', start) - start);
}

void check_same_layers(Communicator& comm, const std::string& mine) {
  const std::vector<std::string> all = comm.allgather_bytes(mine);
  for (std::size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    std::size_t i = 0;
    while (line(all[r], i) == line(all[0], i)) ++i;
    RENSA_THROW(ValueError, kOp, ": the batch normalizations of rank ", r, "'s model differ from rank 0's: layer ", i,
                " is '", line(all[0], i), "' on rank 0 and '", line(all[r], i), "' on rank ", r);
  }
}

}  // namespace

int64_t recompute_batch_norm_statistics(Link& model, iterators::Iterator& it, Communicator comm, std::size_t column) {
  RENSA_CHECK(comm.valid(), ValueError, kOp, ": null communicator (default-constructed)");
  const std::vector<links::BatchNormalization*> bns = training::detail::batch_normalizations(model);
  check_same_layers(comm, describe(model));
  bool in_step = false;
  for (auto* bn : bns) in_step = in_step || static_cast<bool>(bn->allreduce_sum());
  int64_t step = 0;
  const training::detail::BatchGate gate = [&](bool has_batch) {
    const Array n = comm.allreduce(Array::from_vector(std::vector<int64_t>{has_batch ? 1 : 0}), ReduceOp::sum);
    const int64_t with = n.to_vector<int64_t>()[0];
    RENSA_CHECK(with == 0 || with == comm.size(), ValueError, kOp, ": batch ", step, " exists on ", with, " of ",
                comm.size(),
                " ranks; a model with multi-node batch normalization needs the same number of "
                "batches on every rank");
    ++step;
    return with > 0;
  };
  const int64_t batches = training::detail::recompute_pass(model, it, column, in_step ? gate : nullptr);
  // Packed: this rank's batch count, then per local layer N, N * avg_mean, N * avg_var.
  std::vector<double> packed{static_cast<double>(batches)};
  for (auto* bn : bns) {
    if (bn->allreduce_sum()) continue;
    const double n = static_cast<double>(bn->n_batches());
    packed.push_back(n);
    for (const Array* a : {&bn->avg_mean(), &bn->avg_var()}) {
      for (double v : a->to(Device::cpu()).astype(Dtype::float64).to_vector<double>()) packed.push_back(n * v);
    }
  }
  const std::vector<double> sums = comm.allreduce(Array::from_vector(packed), ReduceOp::sum).to_vector<double>();
  std::size_t at = 1;
  for (auto* bn : bns) {
    if (bn->allreduce_sum()) continue;
    const double n = sums[at++];
    const auto size = static_cast<std::size_t>(bn->avg_mean().size());
    for (Array* a : {&bn->avg_mean(), &bn->avg_var()}) {
      std::vector<double> v(sums.begin() + static_cast<std::ptrdiff_t>(at),
                            sums.begin() + static_cast<std::ptrdiff_t>(at + size));
      at += size;
      if (n == 0.0) continue;  // no batch on any rank: left as they were, as one process leaves them
      for (double& x : v) x /= n;
      a->assign(Array::from_vector(v).reshape(a->shape()).astype(a->dtype()).to(a->device()));
    }
    bn->persistent("N").fill(n);
  }
  return static_cast<int64_t>(sums[0]);
}

}  // namespace rensa::mn
